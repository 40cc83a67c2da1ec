"""A Step Functions request without a member its operation requires is refused (``required-members``).

AWS validates a request against the operation's input shape before it does anything: a required member that
is absent (or null) fails the request with ``ValidationException`` (HTTP 400, API reference "Common Errors"),
in the words every AWS JSON service uses: "1 validation error detected: Value null at 'item' failed to satisfy
constraint: Member must not be null" (recorded on AWS: LocalStack's AWS-validated
``v2/error_handling/test_task_service_dynamodb.snapshot.json``). Which members an operation requires is the
service model's (botocore's ``required`` list, the API reference's "Required: Yes").

moto 5.2.5 hands such a request to its backend: DescribeExecution, StopExecution and GetExecutionHistory
without ``executionArn`` fail on ``None`` (a TypeError: HTTP 500), StartExecution without
``stateMachineArn`` too. SDKs validate on the client side, so this shows only for a caller that does not:
API Gateway's ``AWS`` integration sends what its mapping template renders, and the HTTP door's templates
send ``{}`` for a request they refuse, so that nothing is started or read.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from moto.core.exceptions import AWSError

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch


class RequiredMembersMissing(AWSError):
    TYPE = "ValidationException"
    STATUS = 400

    def __init__(self, members: list[str]) -> None:
        count = f"{len(members)} validation error{'s' if len(members) > 1 else ''} detected"
        details = "; ".join(
            f"Value null at '{member}' failed to satisfy constraint: Member must not be null" for member in members
        )
        super().__init__(f"{count}: {details}")


@functools.cache
def _required(action: str) -> tuple[str, ...]:
    """The members the Step Functions operation ``action`` requires, in the model's order. The model is botocore's,
    as moto keeps it once for the process (``get_service_model`` is cached), not a new session's."""
    from moto.core.utils import get_service_model

    model = get_service_model("stepfunctions")
    if action not in model.operation_names:
        return ()
    shape = model.operation_model(action).input_shape
    return () if shape is None else tuple(shape.required_members)


def missing_members(action: str, body: str | bytes | None) -> list[str]:
    """The required members of ``action`` that the request ``body`` (JSON) leaves out or sets to null."""
    try:
        document = json.loads(body or b"{}")
    except ValueError:
        return []  # not JSON: the service answers that itself (SerializationException)
    if not isinstance(document, dict):
        return []
    return [member for member in _required(action) if document.get(member) is None]


def install_required_members(patch: Patch) -> None:
    from moto.stepfunctions.responses import StepFunctionResponse

    call_action: Callable[..., Any] = StepFunctionResponse.call_action

    @functools.wraps(call_action)
    def validated(self: Any) -> Any:
        missing = missing_members(self._get_action(), self.body)
        if not missing:
            return call_action(self)
        refused = RequiredMembersMissing(missing)
        headers = {**dict(refused.get_headers() or []), "status": refused.code}
        status, headers, body = self._transform_response(self.response_headers, (refused.description, headers))
        return (status, *self._enrich_response(headers, body))

    patch.set(StepFunctionResponse, "call_action", validated)
