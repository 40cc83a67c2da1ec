"""Step Functions' DynamoDB integration: a DynamoDB task's error names (``dynamodb-error-names``,
``dynamodb-task-failures``).

``dynamodb-error-names`` (fix): moto (like LocalStack) names a failed DynamoDB task
``DynamoDB.<error code>``. Step Functions names it after the exception class of the AWS SDK for Java the
integration uses, and a code without a class of its own becomes ``DynamoDB.AmazonDynamoDBException``
with the code in the Cause. Recorded on AWS (LocalStack's AWS-validated
tests/aws/services/stepfunctions/v2/error_handling/test_task_service_dynamodb.snapshot.json:
test_invalid_param and test_put_item_invalid_table_name, a ValidationException, fail
``DynamoDB.AmazonDynamoDBException``; test_put_item_no_such_table fails
``DynamoDB.ResourceNotFoundException``). The classes are those of com.amazonaws.services.dynamodbv2.model
for the data-plane codes: two codes have a class with another name (RequestLimitExceeded,
InternalServerError); ValidationException, ThrottlingException, AccessDeniedException and the like have
none. The cause keeps moto's text, which has the recorded shape "<message> (Service: AmazonDynamoDBv2;
Status Code: 400; Error Code: <code>; Request ID: ...; Proxy: null)".

``dynamodb-task-failures`` (fix): moto's DynamoDB task (``StateTaskServiceDynamoDB._from_error``) turns
every exception that is not a botocore ClientError into ``DynamoDB.AmazonDynamoDBException``, the
interpreter's own failure events included: a task whose input after Parameters is over the quota fails
``States.DataLimitExceeded`` on AWS (docs, concepts-error-handling; the conformance test
``test_a_tasks_input_after_parameters_over_the_quota_fails_the_task`` runs it on a DynamoDB task), and a
mocked ``Throw`` (``mock-config``) fails with its configured error. Those keep their failure event, as
the base class's ``_from_error`` (which the Lambda task falls back to) does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

# -- dynamodb-error-names -----------------------------------------------------------------------------

#: DynamoDB error code -> the SDK for Java exception class Step Functions names the error after.
DYNAMODB_EXCEPTION_CLASSES: Final[dict[str, str]] = {
    "ConditionalCheckFailedException": "ConditionalCheckFailedException",
    "ProvisionedThroughputExceededException": "ProvisionedThroughputExceededException",
    "RequestLimitExceeded": "RequestLimitExceededException",
    "InternalServerError": "InternalServerErrorException",
    "ResourceNotFoundException": "ResourceNotFoundException",
    "ResourceInUseException": "ResourceInUseException",
    "LimitExceededException": "LimitExceededException",
    "ItemCollectionSizeLimitExceededException": "ItemCollectionSizeLimitExceededException",
    "TransactionConflictException": "TransactionConflictException",
    "TransactionCanceledException": "TransactionCanceledException",
    "TransactionInProgressException": "TransactionInProgressException",
    "IdempotentParameterMismatchException": "IdempotentParameterMismatchException",
}
DYNAMODB_FALLBACK_EXCEPTION: Final = "AmazonDynamoDBException"


def dynamodb_error_name(code: str) -> str:
    """The error a failed DynamoDB task reports on AWS for a DynamoDB error code."""
    return f"DynamoDB.{DYNAMODB_EXCEPTION_CLASSES.get(code, DYNAMODB_FALLBACK_EXCEPTION)}"


def install_dynamodb_error_names(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_dynamodb

    dynamodb = state_task_service_dynamodb.StateTaskServiceDynamoDB
    moto_names: Callable[[Any], tuple[str, str]] = dynamodb.__dict__["_error_cause_from_client_error"].__func__

    def error_cause(client_error: Any) -> tuple[str, str]:
        _, cause = moto_names(client_error)
        return dynamodb_error_name(str(client_error.response["Error"]["Code"])), cause

    patch.set(dynamodb, "_error_cause_from_client_error", staticmethod(error_cause))


# -- dynamodb-task-failures ---------------------------------------------------------------------------


def install_dynamodb_task_failures(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEventException
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_dynamodb

    dynamodb = state_task_service_dynamodb.StateTaskServiceDynamoDB
    from_error: Callable[..., Any] = dynamodb.__dict__["_from_error"]

    @functools.wraps(from_error)
    def _from_error(self: Any, env: Any, ex: Exception) -> Any:
        if isinstance(ex, FailureEventException):
            return ex.failure_event
        return from_error(self, env, ex)

    patch.set(dynamodb, "_from_error", _from_error)
