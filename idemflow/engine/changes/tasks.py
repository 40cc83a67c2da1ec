"""The interpreter's tasks pass the engine's faults and gate (hooks ``dynamodb-task`` and ``lambda-task``).

* ``dynamodb-task``: an optimized DynamoDB task consults :class:`~idemflow.engine.faults.Faults` first,
  so a test can throttle (or lose the response of) the DynamoDB call of one named state, and an installed
  :class:`Gate` sees the request before it is sent;
* ``lambda-task``: an installed :class:`Gate` sees every Lambda request before it is sent and its response
  before the state reads it.

A gate lets a deterministic scheduler order the requests of concurrent executions (``idemflow/explore``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

from idemflow.engine.faults import Faults

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

_faults: Faults | None = None
_gate: Gate | None = None


class Gate(Protocol):
    """Where the interpreter's requests wait for their turn (a scheduler's view of an execution).

    ``before`` is called just before a task sends its request (DynamoDB or Lambda), ``after`` once a
    Lambda invocation has returned and before the state sees its response. Both run in the
    execution's own thread and may block it; an exception they raise fails the task as a request error
    would. ``ended`` is called when an execution ends (``execution_end.py``).
    """

    def before(self, request: TaskRequest) -> None: ...

    def after(self, request: TaskRequest) -> None: ...

    def ended(self, execution_arn: str) -> None: ...


@dataclass(frozen=True)
class TaskRequest:
    execution_arn: str
    state: str
    service: str
    """``dynamodb`` or ``lambda``."""
    action: str
    """The DynamoDB operation as boto3 names it (``put_item``...: what moto's task calls, not the
    ``putItem`` of the resource's ARN) or, for Lambda, the function's name or ARN."""
    parameters: dict[str, Any]


def set_gate(gate: Gate | None) -> None:
    """Install (or, with None, remove) the gate every interpreter request passes."""
    global _gate
    _gate = gate


def gate() -> Gate | None:
    return _gate


def attach(faults: Faults | None) -> None:
    """Consult ``faults`` before each DynamoDB task (None: none)."""
    global _faults
    _faults = faults


def state_name(env: Any) -> str:
    try:
        return str(env.states.context_object.context_object_data["State"]["Name"])
    except (AttributeError, KeyError, TypeError):
        return ""


def _task_request(env: Any, service: str, action: str, parameters: dict[str, Any]) -> TaskRequest:
    try:
        arn = str(env.states.context_object.context_object_data["Execution"]["Id"])
    except (AttributeError, KeyError, TypeError):
        arn = ""
    return TaskRequest(arn, state_name(env), service, action, parameters)


def install_dynamodb_task(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_dynamodb import (
        StateTaskServiceDynamoDB,
    )

    original = StateTaskServiceDynamoDB._eval_service_task

    def _eval_service_task(
        self: Any, env: Any, resource_runtime_part: Any, normalised_parameters: dict[str, Any], state_credentials: Any
    ) -> None:
        current = _gate
        if current is not None:
            current.before(_task_request(env, "dynamodb", self._get_boto_service_action(), normalised_parameters))
        faults = _faults
        if faults is None:
            original(self, env, resource_runtime_part, normalised_parameters, state_credentials)
            return
        state = state_name(env)
        action = faults.take_before_dynamodb(state)
        if action is not None:
            action()
        error = faults.take_dynamodb(state)
        lost = error is None and faults.take_dynamodb_lost(state)
        if error is None:
            original(self, env, resource_runtime_part, normalised_parameters, state_credentials)
            if not lost:
                return
            env.stack.pop()  # the write happened; its response never arrives
            error = "InternalServerError"  # DynamoDB's code for a 500 (the task names it InternalServerErrorException)
        raise ClientError(
            {
                "Error": {"Code": error, "Message": f"injected {error}"},
                "ResponseMetadata": {"HTTPStatusCode": 500 if lost else 400, "RequestId": "injected"},
            },
            self._get_boto_service_action(),
        )

    patch.set(StateTaskServiceDynamoDB, "_eval_service_task", _eval_service_task)


def install_lambda_task(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_lambda import (
        StateTaskServiceLambda,
    )

    original = StateTaskServiceLambda._eval_service_task

    def _eval_service_task(
        self: Any, env: Any, resource_runtime_part: Any, normalised_parameters: dict[str, Any], state_credentials: Any
    ) -> None:
        current = _gate
        if current is None:
            original(self, env, resource_runtime_part, normalised_parameters, state_credentials)
            return
        function = str(normalised_parameters.get("FunctionName", ""))
        request = _task_request(env, "lambda", function, normalised_parameters)
        current.before(request)
        try:
            original(self, env, resource_runtime_part, normalised_parameters, state_credentials)
        finally:
            current.after(request)

    patch.set(StateTaskServiceLambda, "_eval_service_task", _eval_service_task)
