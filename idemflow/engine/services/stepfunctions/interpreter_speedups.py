"""The interpreter's speedups: the state data copied as the JSON it is (``json-copy``), states evaluated on the
execution's own thread (``inline-states``), program states copied without deepcopy's generic path
(``program-state-copy``). None is a fix: the same answers, less work.

``json-copy``:

moto's interpreter copies the state data with ``copy.deepcopy`` wherever a value is read or handed on: the
whole input for every ``$.x`` of a Choice rule or a Parameters binding (``States.get_input``), each path's
result, a task's parameters, the stack of a state it runs. ``deepcopy`` keeps a memo of every object it
copies and dispatches on each value's type through a table of copiers, for values that are only JSON.

That data is JSON: dicts, lists, strings, numbers, booleans and None, as ``json.loads`` gives them (an
execution's input, a task's answer, a Pass state's ``Result``). :func:`json_copy` copies exactly those and
hands anything else to ``copy.deepcopy`` (a value of any other class, a ``dict`` subclass included), so a
value it does not know is copied as before. The one difference is what JSON cannot express anyway: an object
that sits twice in one value (deepcopy's memo copies it once, keeping both places one object) is copied
twice, into two equal, independent values, as AWS, which passes the state data between states as JSON
text, would have it. A cyclic value cannot be JSON: none reaches the interpreter's copies.

Only the interpreter modules below are changed, each module's ``copy`` name: anything else that imports
``copy`` keeps it.
"""

from __future__ import annotations

import copy
import importlib
import sys
import threading
import types
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

_ATOMIC: Final = frozenset({str, int, float, bool, type(None)})

#: The interpreter's modules whose ``copy.deepcopy`` copies state data (moto 5.2.5; each reads ``copy.deepcopy``
#: through its module's ``copy`` name, and calls nothing else of ``copy``).
STATE_DATA_MODULES: Final = (
    "moto.stepfunctions.parser.asl.eval.states",
    "moto.stepfunctions.parser.asl.eval.environment",
    "moto.stepfunctions.parser.asl.eval.event.event_manager",
    "moto.stepfunctions.parser.asl.component.common.string.string_expression",
    "moto.stepfunctions.parser.asl.component.common.path.result_path",
    "moto.stepfunctions.parser.asl.component.state.exec.execute_state",
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service",
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.mock_eval_utils",
    "moto.stepfunctions.parser.asl.component.state.exec.state_parallel.state_parallel",
    "moto.stepfunctions.parser.asl.component.state.exec.state_map.state_map",
    "moto.stepfunctions.parser.asl.component.intrinsic.function.statesfunction.json_manipulation.json_merge",
)


def json_copy(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """A copy of ``value`` sharing nothing mutable with it: dicts and lists copied member by member,
    strings, numbers, booleans and None kept (they are immutable), anything else ``copy.deepcopy``'s."""
    cls = type(value)
    if cls is dict:
        return {key: item if type(item) in _ATOMIC else json_copy(item) for key, item in value.items()}
    if cls is list:
        return [item if type(item) in _ATOMIC else json_copy(item) for item in value]
    if cls in _ATOMIC:
        return value
    return copy.deepcopy(value, memo)


#: What each changed module finds under its ``copy`` name.
json_copy_module: Final = types.SimpleNamespace(deepcopy=json_copy)


def install_json_copy(patch: Patch) -> None:
    for name in STATE_DATA_MODULES:
        patch.set(importlib.import_module(name), "copy", json_copy_module)


# -- inline-states -----------------------------------------------------------------------------------
#
# moto 5.2.5 evaluates each Task state (``ExecutionState._evaluate_with_timeout``) on a thread started for it,
# which the execution's thread waits for with the state's TimeoutSeconds (99999999 when the definition sets
# none), and each program (``Program.eval``: an execution's, a Map iteration's, a Parallel branch's) on a thread
# joined with the program's TimeoutSeconds (forever when there is none). Without a timeout that can fire, the
# waiting thread does nothing but wait: the state or the program is evaluated on the waiting thread itself, in
# the same order, with the same frames, copies and exceptions. A state or a program with a TimeoutSeconds of its
# own (or a path or JSONata expression for it) keeps its thread, and so its timeout.


def _reports_as_a_thread_would(program_eval: Any) -> None:
    """Run ``program_eval``; an exception escaping it is reported by threading.excepthook and goes no further,
    as it would from the thread moto starts for it."""
    try:
        program_eval()
    except Exception:
        kind, value, trace = sys.exc_info()
        threading.excepthook(threading.ExceptHookArgs((kind, value, trace, threading.current_thread())))


def install_inline_states(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import TimeoutSeconds
    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent
    from moto.stepfunctions.parser.asl.component.program.program import Program
    from moto.stepfunctions.parser.asl.component.state.exec import execute_state
    from moto.stepfunctions.parser.asl.component.state.exec.execute_state import ExecutionState

    module = vars(execute_state)  # its copy, read at each call as moto's method reads it (json-copy changes it)
    program_eval = Program.eval  # moto's, or the engine's clock (wait-time-scale), which times a TimeoutSeconds
    evaluate_with_timeout = ExecutionState._evaluate_with_timeout

    def inline_program_eval(self: Any, env: Any) -> None:
        if self.timeout_seconds:
            program_eval(self, env)
            return
        # moto 5.2.5's Program.eval without a timeout: a thread evaluating the program, joined without one.
        env.next_state_name = self.start_at.start_at_name
        _reports_as_a_thread_would(lambda: EvalComponent.eval(self, env))

    def inline_evaluate_with_timeout(self: Any, env: Any) -> None:
        timeout = self.timeout
        if type(timeout) is not TimeoutSeconds or not timeout.is_default_value():
            evaluate_with_timeout(self, env)
            return
        # moto 5.2.5's ExecutionState._evaluate_with_timeout, with _exec_and_notify called where its thread
        # was started and waited for: the default timeout (99999999 seconds) never fires first.
        self.timeout.eval(env=env)
        env.stack.pop()

        frame = env.open_frame()
        frame.states.reset(input_value=env.states.get_input())
        frame.stack = module["copy"].deepcopy(env.stack)
        execution_outputs: list[Any] = []
        execution_exceptions: list[Exception | None] = [None]
        try:
            self._eval_execution(frame)
            execution_outputs.extend(frame.stack)
        except Exception as ex:
            execution_exceptions.append(ex)

        frame.set_ended()
        env.close_frame(frame)

        execution_exception = execution_exceptions.pop()
        if execution_exception:
            raise execution_exception

        execution_output = execution_outputs.pop()
        env.stack.append(execution_output)

        if not self._is_language_query_jsonpath():
            env.states.set_result(execution_output)

        if self.assign_decl:
            self.assign_decl.eval(env=env)

        if self.result_selector:
            self.result_selector.eval(env=env)

        if self.result_path:
            self.result_path.eval(env)
        else:
            res = env.stack.pop()
            env.states.reset(input_value=res)

    patch.set(Program, "eval", inline_program_eval)
    patch.set(ExecutionState, "_evaluate_with_timeout", inline_evaluate_with_timeout)


# -- program-state-copy ------------------------------------------------------------------------------
#
# moto 5.2.5 deep-copies an environment's program state (ProgramRunning, ProgramError...) to read its class
# (``Environment.program_state``, twice per state: ``if not isinstance(env.program_state(), ProgramRunning)``)
# and for each frame it opens (every Task state). ``copy.deepcopy`` copies such an object through its generic
# path: ``__reduce_ex__``, ``copyreg.__newobj__``, its ``__dict__`` copied as a dict, then set. The states hold
# only strings, None, a stop date and an error's details (a dict of strings): the same object is made directly,
# its attributes deep-copied into a new instance of the same class, with the same memo.

_IMMUTABLE: Final = frozenset({str, int, float, bool, type(None)})


def program_state_deepcopy(self: Any, memo: dict[int, Any]) -> Any:
    """``copy.deepcopy`` of a program state: a new instance of its class, each attribute deep-copied."""
    cls: Any = type(self)
    copied = cls.__new__(cls)  # as copyreg.__newobj__ makes it for deepcopy
    memo[id(self)] = copied
    copied.__dict__.update(
        {name: value if type(value) in _IMMUTABLE else copy.deepcopy(value, memo) for name, value in vars(self).items()}
    )
    return copied


def install_program_state_copy(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramState

    patch.set(ProgramState, "__deepcopy__", program_state_deepcopy)
