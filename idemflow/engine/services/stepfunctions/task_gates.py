"""The interpreter's tasks pass the engine's faults and gate (hooks ``dynamodb-task``, ``lambda-task``, ``sfn-task``).

* ``dynamodb-task``: an optimized DynamoDB task consults the engine's :class:`~idemflow.engine.faults.Faults`
  first, so a test can throttle (or lose the response of) the DynamoDB call of one named state, and the
  engine's :class:`~idemflow.engine.state.Gate` sees the request before it is sent;
* ``lambda-task``: the engine's gate sees every Lambda request before it is sent and its response before
  the state reads it;
* ``sfn-task``: a ``states:startExecution`` task (``.sync``, ``.sync:2``) consults the engine's faults first, so a
  test can refuse (or lose the response of) the StartExecution of one named state, and the gate sees the request
  before it is sent and its answer before the state reads it: the refusal, the response, or with ``.sync`` and
  ``.sync:2`` the child's end.

All read the parts from :func:`idemflow.engine.state.current`.

A gate lets a deterministic scheduler order the requests of concurrent executions (``idemflow/explore``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

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


def _refused(env: Any, task: Any, error: str, cause: str) -> Exception:
    """The task's failure as the interpreter raises it, named ``error`` (the task's own name, as AWS reports it)."""
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )

    details = TaskFailedEventDetails(
        error=error, cause=cause, resource=task._get_sfn_resource(), resourceType=task._get_sfn_resource_type()
    )
    return FailureEventException(
        FailureEvent(
            env=env,
            error_name=CustomErrorName(error),
            event_type=HistoryEventType.TaskFailed,
            event_details=cast(Any, {"taskFailedEventDetails": details}),
        )
    )


LOST_START_ERROR = "StepFunctions.AWSStepFunctionsException"
"""How a StartExecution whose response never came back fails its task: a 500 with no class of its own in the SDK
for Java, named by the SDK's base exception (as :data:`~idemflow.engine.services.stepfunctions.task_permissions.
DENIALS` names an AccessDeniedException)."""


def install_sfn_task(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
        StateTaskServiceSfn,
    )

    submit = StateTaskServiceSfn._eval_service_task
    wait = StateTaskServiceSfn._eval_integration_pattern

    def request(env: Any, parameters: dict[str, Any]) -> TaskRequest:
        # The state machine it starts, in the definition's casing or botocore's (``sfn-task-casing``).
        machine = str(parameters.get("stateMachineArn") or parameters.get("StateMachineArn") or "")
        return _task_request(env, "states", machine, parameters)

    def answered(env: Any, parameters: dict[str, Any]) -> None:
        """The gate sees the task's answer: once per request, whether the start was refused, answered, or (with
        ``.sync`` and ``.sync:2``) its child ended."""
        gate = engine_state.current().gate
        if gate is not None:
            gate.after(request(env, parameters))

    def _eval_service_task(
        self: Any, env: Any, resource_runtime_part: Any, normalised_parameters: dict[str, Any], state_credentials: Any
    ) -> None:
        attached = engine_state.current()
        if attached.gate is not None:
            attached.gate.before(request(env, normalised_parameters))
        faults = attached.faults
        state = state_name(env)
        code = None if faults is None else faults.take_start_refused(state)
        if code is not None:
            answered(env, normalised_parameters)
            raise ClientError(
                {
                    "Error": {"Code": code, "Message": f"injected {code}"},
                    "ResponseMetadata": {"HTTPStatusCode": 400, "RequestId": "injected"},
                },
                self._get_boto_service_action(),
            )
        try:
            submit(self, env, resource_runtime_part, normalised_parameters, state_credentials)
            if faults is not None and faults.take_start_lost(state):
                env.stack.pop()  # the child started; its response never arrives
                raise _refused(
                    env,
                    self,
                    LOST_START_ERROR,
                    "injected: the response was lost (Service: AWSStepFunctions; Status Code: 500; Error Code: "
                    "InternalFailure; Request ID: injected; Proxy: null)",
                )
        except BaseException:
            answered(env, normalised_parameters)  # the task's answer: its start failed
            raise
        if not self._is_integration_pattern():
            answered(env, normalised_parameters)  # the task's answer: the start's response

    def _eval_integration_pattern(
        self: Any, env: Any, resource_runtime_part: Any, normalised_parameters: dict[str, Any], state_credentials: Any
    ) -> None:
        try:
            wait(self, env, resource_runtime_part, normalised_parameters, state_credentials)
        finally:
            answered(env, normalised_parameters)  # the child ended (or the wait failed)

    patch.set(StateTaskServiceSfn, "_eval_service_task", _eval_service_task)
    patch.set(StateTaskServiceSfn, "_eval_integration_pattern", _eval_integration_pattern)
