"""States.JsonToString writes text as it is (``json-to-string``); an intrinsic's failure is a States.Runtime
error that names the function, not moto's Python class (``intrinsic-failures``).

moto writes json.dumps(value, separators=(",", ":")): compact (as recorded on AWS: LocalStack's
AWS-validated v2/intrinsic_functions/test_json_manipulation.snapshot.json, {"Arg1": 1, "Arg2": []} ->
"{\\"Arg1\\":1,\\"Arg2\\":[]}"), but with Python's ensure_ascii, so "é" becomes the six characters \\u00e9.
No AWS recording of non-ASCII output was found. Step Functions serialises with a Java JSON library (its
States.Format writes an object Java's way, {Arg1=1, Arg2=[]}: test_generic.snapshot.json, test_format_2,
in the same folder), whose default writes non-ASCII characters as they are; the engine does the same,
and the client's length check (idemflow.keys.check_input) accepts only payloads that fit under both
readings.

``intrinsic-failures`` (fix): an intrinsic function that cannot evaluate (States.Hash over its 10,000
characters: "The data you provide must be an object string containing 10,000 characters or less", intrinsic-
functions; an index out of range, text that is not JSON) fails the execution with States.Runtime, which
nothing catches (concepts-error-handling). moto raises a Python exception
that reaches the execution's cause as ``ValueError(Maximum character input length for  for function type
'<class 'moto.stepfunctions.parser...HashFunc'>' ...)``, without the state's name. The failure is raised here
as the state's States.Runtime failure, whose cause AWS starts with "An error occurred while executing the state
'<name>' (entered at the event id #<id>)." (recorded: LocalStack's AWS-validated test_base_scenarios.snapshot.json,
test_catch_states_runtime), and names the function as the definition does (``States.Hash``). The rest of AWS's
wording for an intrinsic is not on record.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch


def _json_to_string(self: Any, env: Any) -> None:
    self.argument_list.eval(env=env)
    args = env.stack.pop()
    env.stack.append(json.dumps(args.pop(), separators=(",", ":"), ensure_ascii=False))


def install_json_to_string(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.intrinsic.function.statesfunction.json_manipulation import (
        json_to_string,
    )

    patch.set(json_to_string.JsonToString, "_eval_body", _json_to_string)


_PYTHON_CLASS = re.compile(r"(?:\s*for)*\s*function type\s*'<class '[^']*'>'|'?<class '[^']*'>'?")


def intrinsic_failure_message(function: str, error: Exception) -> str:
    """``error``'s message with moto's class names replaced by the function's name in the definition."""
    message = re.sub(r"\s{2,}", " ", _PYTHON_CLASS.sub(f" of {function}", str(error))).strip()
    return message if function in message else f"{function}: {message}"


def install_intrinsic_failures(patch: Patch) -> None:
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.component.intrinsic.function.statesfunction.states_function import (
        StatesFunction,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    evaluate: Callable[..., None] = StatesFunction.eval
    runtime = StatesErrorNameType.StatesRuntime

    @functools.wraps(evaluate)
    def eval(self: Any, env: Any) -> None:
        try:
            evaluate(self, env)
        except (ValueError, TypeError, IndexError, KeyError) as error:
            # The enum member's own name (Hash); moto's StatesFunctionNameType.name() cuts the lexer's symbol.
            function = f"States.{self.name.function_type._name_}"
            details = TaskFailedEventDetails(error=runtime.to_name(), cause=intrinsic_failure_message(function, error))
            raise FailureEventException(
                FailureEvent(
                    env=env,
                    error_name=StatesErrorName(typ=runtime),
                    event_type=HistoryEventType.TaskFailed,
                    event_details=cast(EventDetails, {"taskFailedEventDetails": details}),
                )
            ) from error

    patch.set(StatesFunction, "eval", eval)
