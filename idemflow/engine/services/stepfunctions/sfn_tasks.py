"""Step Functions tasks speak the Step Functions API in the definition's casing (``sfn-task-casing``).

A ``arn:aws:states:::states:startExecution`` task (``.sync``, ``.sync:2``) names its parameters as the
API's members in the casing of the Amazon States Language (``StateMachineArn``, ``Input``, ``Name``:
https://docs.aws.amazon.com/step-functions/latest/dg/connect-stepfunctions.html), and its result is the
API's response in the same casing: ``ExecutionArn`` and ``StartDate``; with ``.sync`` and ``.sync:2`` the
finished execution's ``DescribeExecution`` (``ExecutionArn``, ``Input``, ``Output``, ``Status``, and for a
failed one ``Error`` and ``Cause`` in the ``States.TaskFailed`` cause's JSON), as recorded on AWS in
localstack/localstack tests/aws/services/stepfunctions/v2/callback/test_callback.snapshot.json
(``test_start_execution_sync2``, ``test_start_execution_sync_delegate_failure``).

moto 5.2.5's Step Functions task hands the parameters to botocore as written, and botocore refuses
``StateMachineArn`` (its member is ``stateMachineArn``): the task fails ``States.Runtime``. Its result keeps
botocore's names (``executionArn``, ``output``), with dates as Python datetimes that a state's output cannot
hold. The shapes come from botocore's service model, as LocalStack's own interpreter does it; dates are
written as moto writes them in the task's history events (ISO 8601; their format on AWS is not pinned here).

An ``arn:aws:states:::aws-sdk:sfn:<action>`` task (``startExecution``, ``describeExecution``,
``stopExecution``...) speaks the same casing: parameters ``StateMachineArn``, ``Input``, ``Name``, and the
result ``ExecutionArn`` and ``StartDate``, as recorded on AWS in localstack/localstack
tests/aws/services/stepfunctions/v2/services/test_aws_sdk_task_service.snapshot.json
(``test_sfn_start_execution``). moto 5.2.5 hands such a task's parameters to botocore as written, with no
casing at all, and botocore's serializer, which has no member ``ExecutionArn``, fails the task
``States.Runtime`` with the cause ``'ExecutionArn'``. Only the ``sfn`` SDK integration is recased here:
other services' botocore members are already in the definition's casing (DynamoDB's ``TableName``).
"""

from __future__ import annotations

import datetime
import threading
from typing import TYPE_CHECKING, Any

from botocore.session import get_session

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch


_operations_lock = threading.Lock()
_operations_by_name: dict[str, Any] = {}


def _operations() -> dict[str, Any]:
    """botocore's Step Functions operations by their snake_case name (``start_execution``), read once: the
    first tasks of a Map start together, and each would otherwise load the service model."""
    with _operations_lock:
        if not _operations_by_name:
            from moto.stepfunctions.parser.utils import camel_to_snake_case

            model = get_session().get_service_model("stepfunctions")
            _operations_by_name.update(
                {camel_to_snake_case(name): model.operation_model(name) for name in model.operation_names}
            )
    return _operations_by_name


def install_sfn_task_casing(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
        StateTaskServiceSfn,
    )

    normalise_parameters = StateTaskServiceSfn._normalise_parameters

    def _normalise_parameters(
        self: Any,
        parameters: dict[str, Any],
        boto_service_name: str | None = None,
        service_action_name: str | None = None,
    ) -> None:
        normalise_parameters(self, parameters, boto_service_name, service_action_name)
        operation = _operations().get(self._get_boto_service_action(service_action_name))
        if operation is not None and operation.input_shape is not None:
            self._to_boto_request(parameters, operation.input_shape)

    def _normalise_response(
        self: Any, response: Any, boto_service_name: str | None = None, service_action_name: str | None = None
    ) -> None:
        operation = _operations().get(self._get_boto_service_action(service_action_name))
        if operation is not None and operation.output_shape is not None:
            self._from_boto_response(response, operation.output_shape)
        if isinstance(response, dict):
            for name, value in response.items():
                if isinstance(value, datetime.datetime):
                    response[name] = value.isoformat()

    patch.set(StateTaskServiceSfn, "_normalise_parameters", _normalise_parameters)
    patch.set(StateTaskServiceSfn, "_normalise_response", _normalise_response)

    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_aws_sdk import (
        StateTaskServiceAwsSdk,
    )
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

    def _sdk_normalise_parameters(
        self: Any,
        parameters: dict[str, Any],
        boto_service_name: str | None = None,
        service_action_name: str | None = None,
    ) -> None:
        if self.resource.api_name != "sfn":
            return
        action = self._get_boto_service_action(service_action_name)
        if action == "start_execution" and not isinstance(parameters.get("Input"), str):
            # As the optimized integration sends it (moto's StateTaskServiceSfn): JSON text, {} when absent.
            parameters["Input"] = to_json_str(parameters.get("Input") or {}, separators=(",", ":"))
        operation = _operations().get(action)
        if operation is not None and operation.input_shape is not None:
            self._to_boto_request(parameters, operation.input_shape)

    def _sdk_normalise_response(
        self: Any, response: Any, boto_service_name: str | None = None, service_action_name: str | None = None
    ) -> None:
        if self.resource.api_name == "sfn":
            _normalise_response(self, response, boto_service_name, service_action_name)

    patch.set(StateTaskServiceAwsSdk, "_normalise_parameters", _sdk_normalise_parameters)
    patch.set(StateTaskServiceAwsSdk, "_normalise_response", _sdk_normalise_response)


SYNC_WAIT_SECONDS = 0.5
"""The longest a ``.sync`` task waits for its child's end before it looks again (moto's own poll interval)."""


def install_sync_child_end(patch: Patch) -> None:
    """A ``.sync`` or ``.sync:2`` task learns that its child ended from the ``execution-end`` hook, at once,
    instead of reading DescribeExecution every 0.5 s of real time (moto's ``_eval_sync`` loop)."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
        StateTaskServiceSfn,
    )

    from idemflow.engine.services.stepfunctions.execution_end import execution_done

    def waiting_on_the_child(build: Any) -> Any:
        def _build(self: Any, env: Any, *args: Any, **kwargs: Any) -> Any:
            submitted = env.stack[-1]  # the submission the original resolver pops
            child = submitted.get("ExecutionArn") or submitted.get("executionArn")  # with or without sfn-task-casing
            resolve = build(self, env, *args, **kwargs)
            ended = execution_done(child)

            def resolver() -> Any:
                result = resolve()
                if result is None and ended.wait(SYNC_WAIT_SECONDS):
                    result = resolve()  # ended: this read sees its final status
                return result

            return resolver

        return _build

    for name in ("_build_sync_resolver", "_build_sync2_resolver"):
        patch.set(StateTaskServiceSfn, name, waiting_on_the_child(getattr(StateTaskServiceSfn, name)))
