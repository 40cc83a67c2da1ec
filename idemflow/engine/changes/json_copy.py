"""``json-copy``: the interpreter copies JSON values as JSON values (a speedup).

moto's interpreter never shares a value between two states: every JSONPath read of the state's input or
context (``States._extract``, ``StringJsonPath``), every input reset and result, each history event's
details and each task's parameters go through ``copy.deepcopy``. The values are JSON (dicts, lists,
strings, numbers, booleans, null), but ``deepcopy`` treats each as an arbitrary object: a memo of every
value copied, a dispatch by type and a keep-alive list per call. Measured on the workflow's first run and
its duplicate (yappi, CPU clock, every thread): ``deepcopy`` was 42 % of the engine's CPU, some 3,500
calls an execution.

In the interpreter's modules that copy JSON values, ``copy`` is replaced by a stand-in whose
``deepcopy`` copies dicts and lists and returns strings, numbers, booleans and None as they are (they are
immutable, as ``deepcopy`` itself returns them), and so are enum members (a history event's type:
``Enum.__deepcopy__`` returns the member); anything else (a datetime, a tuple, a dict subclass,
an object of moto's) goes to ``copy.deepcopy`` as before, and so does a call with a memo. What differs:
two references to one dict or list inside a value become two equal copies, where ``deepcopy`` kept them
one. JSON has no such sharing, and Step Functions passes values as JSON text between states, so a
state's later change to one of them never shows in the other there either. A cycle cannot occur in a
value the interpreter reads from JSON. ``tests/unit/test_speedups.py`` runs executions of every kind of
state with and without the change and compares outputs and histories.
"""

from __future__ import annotations

import copy
from enum import Enum
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from idemflow.engine.registry import Patch

_ATOMS: Final = frozenset({str, int, float, bool, type(None)})

#: The interpreter's modules whose ``copy.deepcopy`` calls copy JSON values (the others copy its own
#: objects: state machines, job lists, class dictionaries, and keep ``copy`` as it is).
MODULES: Final = (
    "moto.stepfunctions.parser.asl.eval.states",
    "moto.stepfunctions.parser.asl.eval.environment",
    "moto.stepfunctions.parser.asl.eval.event.event_manager",
    "moto.stepfunctions.parser.asl.component.common.string.string_expression",
    "moto.stepfunctions.parser.asl.component.common.path.result_path",
    "moto.stepfunctions.parser.asl.component.state.exec.execute_state",
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service",
)


def json_copy(value: Any) -> Any:
    """A copy of a JSON value that shares nothing mutable with it; other values by ``copy.deepcopy``."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {key: json_copy(item) for key, item in value.items()}
    if kind is list:
        return [json_copy(item) for item in value]
    if isinstance(value, Enum):  # a history event's type: Enum.__deepcopy__ returns the member itself
        return value
    return copy.deepcopy(value)


class _CopyModule:
    """Stands for the ``copy`` module in :data:`MODULES`: ``deepcopy`` is :func:`json_copy`."""

    @staticmethod
    def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        return json_copy(value) if memo is None else copy.deepcopy(value, memo)

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)


_STAND_IN: Final = _CopyModule()


def install_json_copy(patch: Patch) -> None:
    import importlib

    for name in MODULES:
        module: ModuleType = importlib.import_module(name)
        assert module.copy is copy, f"{name} no longer imports copy as a module"
        patch.set(module, "copy", _STAND_IN)
