"""A state machine's executions found by name and by ARN without a scan (``execution-index``).

moto keeps every execution in a list on its state machine and finds one by walking it: StartExecution (is the
name taken?), DescribeExecution, GetExecutionHistory, StopExecution and DescribeStateMachineForExecution each
compare every execution kept. The engine keeps thousands (the interleaving checker, a ``serve`` left running,
a user's own suite), so each of those requests cost more with every execution ever run. The list is kept as it
is (ListExecutions and moto's own code read it in order) and indexed as it changes; the lookups read the
index. The answers are the same: the execution of that name or ARN, or moto's own error.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, SupportsIndex

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch


class IndexedExecutions(list[Any]):
    """A state machine's executions, in start order, with an index by ARN and by name."""

    def __init__(self, executions: Iterable[Any] = ()) -> None:
        super().__init__(executions)
        self.by_arn: dict[str, Any] = {}
        self.by_name: dict[str, Any] = {}
        for execution in self:
            self._index(execution)

    def _index(self, execution: Any) -> None:
        self.by_arn[execution.execution_arn] = execution
        self.by_name.setdefault(execution.name, execution)  # the first of a name, as moto's scan finds it

    def _unindex(self, execution: Any) -> None:
        arn, name = execution.execution_arn, execution.name
        if id(self.by_arn.get(arn)) == id(execution):
            del self.by_arn[arn]
        if id(self.by_name.get(name)) == id(execution):
            del self.by_name[name]
            later = next((e for e in self if e.name == name), None)  # a rare second of a name
            if later is not None:
                self.by_name[name] = later

    def append(self, execution: Any) -> None:
        super().append(execution)
        self._index(execution)

    def remove(self, execution: Any) -> None:
        super().remove(execution)
        self._unindex(execution)

    def pop(self, index: SupportsIndex = -1) -> Any:
        execution = super().pop(index)
        self._unindex(execution)
        return execution

    def clear(self) -> None:
        super().clear()
        self.by_arn.clear()
        self.by_name.clear()


def _indexed(state_machine: Any) -> IndexedExecutions:
    executions = state_machine.executions
    if not isinstance(executions, IndexedExecutions):
        executions = state_machine.executions = IndexedExecutions(executions)
    return executions


def install_execution_index(patch: Patch) -> None:
    from moto.stepfunctions.exceptions import ExecutionAlreadyExists, ExecutionDoesNotExist, ResourceNotFound
    from moto.stepfunctions.models import StateMachine, StateMachineInstance, StepFunctionBackend

    init: Callable[..., None] = StateMachineInstance.__dict__["__init__"]

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.executions = IndexedExecutions(self.executions)

    def _handle_name_input_idempotency(self: Any, name: str, execution_input: str) -> Any:
        execution = _indexed(self).by_name.get(name)
        if execution is None:
            return None
        # Executions with the same name and input are idempotent while the first runs (moto's rule, kept).
        if execution_input == execution.execution_input and execution.status == "RUNNING":
            return execution
        raise ExecutionAlreadyExists("Execution Already Exists: '" + execution.execution_arn + "'")

    def stop_execution(self: Any, execution_arn: str) -> Any:
        from moto.core.utils import utcnow

        execution = _indexed(self).by_arn.get(execution_arn)
        if not execution:
            raise ExecutionDoesNotExist("Execution Does Not Exist: '" + execution_arn + "'")
        execution.stop(stop_date=utcnow(), error="", cause="")
        return execution

    def describe_execution(self: Any, execution_arn: str) -> Any:
        self._validate_execution_arn(execution_arn)
        state_machine = self._get_state_machine_for_execution(execution_arn)
        execution = _indexed(state_machine).by_arn.get(execution_arn)
        if not execution:
            raise ExecutionDoesNotExist("Execution Does Not Exist: '" + execution_arn + "'")
        return execution

    def describe_state_machine_for_execution(self: Any, execution_arn: str) -> Any:
        for state_machine in self.state_machines:
            if execution_arn in _indexed(state_machine).by_arn:
                return state_machine
        raise ResourceNotFound(execution_arn)

    patch.set(StateMachineInstance, "__init__", __init__)
    patch.set(StateMachine, "_handle_name_input_idempotency", _handle_name_input_idempotency)
    patch.set(StateMachine, "stop_execution", stop_execution)
    patch.set(StepFunctionBackend, "describe_execution", describe_execution)
    patch.set(StepFunctionBackend, "describe_state_machine_for_execution", describe_state_machine_for_execution)
