"""The interpreter's state data copied as the JSON it is (``json-copy``): a speedup, not a fix.

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
