"""States.Runtime is never caught nor retried (``states-runtime``); a cause holds 32,768 characters at most
(``cause-length``).

AWS docs (concepts-error-handling): "A retry or catch on States.ALL will not catch States.Runtime
errors." Recorded on AWS: a Catch naming States.Runtime explicitly does not catch it either (LocalStack's
AWS-validated v2/scenarios/test_base_scenarios.snapshot.json, test_catch_states_runtime: the execution
fails with States.Runtime). moto matches it with States.ALL and by name, so a definition that leans on
either passes on the engine and fails on AWS. States.DataLimitExceeded is left as it is: the docs say
States.ALL does not catch it, but AWS's recorded executions show it caught by States.ALL
(test_states_errors.snapshot.json, ..._catch_state_all_data_limit_exceeded...), and moto does the same.

``cause-length`` (fix): every history event that carries a failure gives its ``cause`` "Length Constraints:
Minimum length of 0. Maximum length of 32768" (API reference: TaskFailedEventDetails, ExecutionFailedEventDetails
and every other ...FailedEventDetails), and a Catch's ``Cause`` is that event's cause. moto keeps a cause whole:
a failed ``states:startExecution.sync`` child's DescribeExecution (its input included) or a long Lambda
errorMessage reaches the history and the state data at any length. The engine keeps the first 32,768
characters, where every failure is made (the interpreter's FailureEvent). Which characters AWS keeps of a
longer cause is not on record here; a definition that parses a cause must expect it cut.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch


def install_states_runtime(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import ErrorEqualsDecl
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )

    matches: Callable[..., None] = ErrorEqualsDecl.__dict__["_eval_body"]

    @functools.wraps(matches)
    def _eval_body(self: Any, env: Any) -> None:
        error_name = env.stack[-1]
        if isinstance(error_name, StatesErrorName) and error_name.typ == StatesErrorNameType.StatesRuntime:
            env.stack.pop()
            env.stack.append(False)
            return
        matches(self, env)

    patch.set(ErrorEqualsDecl, "_eval_body", _eval_body)


MAX_CAUSE_CHARACTERS: Final = 32_768


def install_cause_length(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent

    init: Callable[..., None] = FailureEvent.__dict__["__init__"]

    @functools.wraps(init)
    def __init__(self: Any, env: Any, error_name: Any, event_type: Any, event_details: Any = None) -> None:
        # event_details is {"<type>EventDetails": {"error": ..., "cause": ...}}: one entry.
        for details in (event_details or {}).values():
            cause = details.get("cause") if isinstance(details, dict) else None
            if isinstance(cause, str) and len(cause) > MAX_CAUSE_CHARACTERS:
                details["cause"] = cause[:MAX_CAUSE_CHARACTERS]
        init(self, env, error_name, event_type, event_details)

    patch.set(FailureEvent, "__init__", __init__)
