"""The interpreter's tasks pass the engine's faults and gate (hooks ``dynamodb-task`` and ``lambda-task``).

* ``dynamodb-task``: an optimized DynamoDB task consults the engine's :class:`~idemflow.engine.faults.Faults`
  first, so a test can throttle (or lose the response of) the DynamoDB call of one named state, and the
  engine's :class:`~idemflow.engine.state.Gate` sees the request before it is sent;
* ``lambda-task``: the engine's gate sees every Lambda request before it is sent and its response before
  the state reads it.

Both read the parts from :func:`idemflow.engine.state.current`.

A gate lets a deterministic scheduler order the requests of concurrent executions (``idemflow/explore``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from idemflow.engine import state as engine_state
from idemflow.engine.state import TaskRequest

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch


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
        attached = engine_state.current()
        gate = attached.gate
        if gate is not None:
            gate.before(_task_request(env, "dynamodb", self._get_boto_service_action(), normalised_parameters))
        faults = attached.faults
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
        gate = engine_state.current().gate
        if gate is None:
            original(self, env, resource_runtime_part, normalised_parameters, state_credentials)
            return
        function = str(normalised_parameters.get("FunctionName", ""))
        request = _task_request(env, "lambda", function, normalised_parameters)
        gate.before(request)
        try:
            original(self, env, resource_runtime_part, normalised_parameters, state_credentials)
        finally:
            gate.after(request)

    patch.set(StateTaskServiceLambda, "_eval_service_task", _eval_service_task)
