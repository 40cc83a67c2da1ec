"""Errors of the optimized DynamoDB integration (arn:aws:states:::dynamodb:*), as Step Functions names them.

Step Functions names a failed DynamoDB task after the AWS SDK for Java's exception class, not after
DynamoDB's error code. Recorded on AWS: LocalStack's AWS-validated
tests/aws/services/stepfunctions/v2/error_handling/test_task_service_dynamodb.snapshot.json (``LS``).
Names that no recording covers are inferred from the SDK's classes (the engine's ``dynamodb-error-names``
fix, idemflow/engine/services/dynamodb/atomic_writes.py) and say so.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from tests.conformance.harness import Run, Target

CAUSE_SUFFIX = "(Service: AmazonDynamoDBv2; Status Code: 400; Error Code: {code}; Request ID: "


def _put(table: str, condition: str | None = None, item: dict[str, Any] | None = None) -> dict:
    parameters: dict[str, Any] = {"TableName": table, "Item": item or {"pk": {"S.$": "$.pk"}}}
    if condition:
        parameters["ConditionExpression"] = condition
    return {
        "StartAt": "Put",
        "States": {
            "Put": {
                "Type": "Task",
                "Resource": "arn:aws:states:::dynamodb:putItem",
                "Parameters": parameters,
                "End": True,
            }
        },
    }


def _failed(run: Run) -> tuple[str, str]:
    assert run.status == "FAILED", run.output
    error, cause = run.failure("TaskFailed")
    assert (run.error, run.cause) == (error, cause)  # the execution fails with the task's error
    return error, cause


def test_a_missing_table_is_resource_not_found(target: Target) -> None:
    # LS test_put_item_no_such_table (recorded 12-05-2023): DynamoDB.ResourceNotFoundException,
    # "Requested resource not found (Service: AmazonDynamoDBv2; Status Code: 400; Error Code:
    # ResourceNotFoundException; Request ID: <id>; Proxy: null)".
    error, cause = _failed(target.run(_put(f"no-such-table-{uuid.uuid4().hex[:8]}"), {"pk": "a"}))
    assert error == "DynamoDB.ResourceNotFoundException"
    assert CAUSE_SUFFIX.format(code="ResourceNotFoundException") in cause and cause.endswith("; Proxy: null)")


def test_a_validation_error_is_named_after_the_sdk_class(target: Target) -> None:
    # LS test_invalid_param (16-05-2023) and test_put_item_invalid_table_name (12-05-2023): a
    # ValidationException fails DynamoDB.AmazonDynamoDBException, the code in the cause:
    # "<message> (Service: AmazonDynamoDBv2; Status Code: 400; Error Code: ValidationException; ...)".
    wrong_key = {"not_the_key": {"S.$": "$.pk"}}  # the table's key is pk
    error, cause = _failed(target.run(_put(target.table, item=wrong_key), {"pk": "a"}))
    assert error == "DynamoDB.AmazonDynamoDBException"
    assert CAUSE_SUFFIX.format(code="ValidationException") in cause


def test_a_failed_condition_is_conditional_check_failed(target: Target) -> None:
    # Inferred (no AWS recording found): ConditionalCheckFailedException is an SDK class of its own, so
    # the error keeps its code's name, DynamoDB.ConditionalCheckFailedException; AWS's documentation of
    # the DynamoDB integration's conditional writes and AWS samples catch this name.
    pk = f"conditional-{uuid.uuid4()}"
    definition = _put(target.table, condition="attribute_not_exists(pk)")
    assert target.run(definition, {"pk": pk}).status == "SUCCEEDED"

    error, cause = _failed(target.run(definition, {"pk": pk}))
    assert error == "DynamoDB.ConditionalCheckFailedException"
    assert CAUSE_SUFFIX.format(code="ConditionalCheckFailedException") in cause


@pytest.mark.parametrize(
    ("code", "name"),
    [
        # Inferred from the SDK for Java's classes (patches.DYNAMODB_EXCEPTION_CLASSES): two codes have a
        # class of another name, a code without a class falls back as ValidationException does (recorded).
        ("ProvisionedThroughputExceededException", "DynamoDB.ProvisionedThroughputExceededException"),
        ("RequestLimitExceeded", "DynamoDB.RequestLimitExceededException"),
        ("InternalServerError", "DynamoDB.InternalServerErrorException"),
        ("ThrottlingException", "DynamoDB.AmazonDynamoDBException"),
    ],
)
def test_throttling_codes_are_named_after_the_sdk_classes(
    target: Target, embedded_only: None, code: str, name: str
) -> None:
    target.engine.faults.throttle_next("Put", 1, error=code)  # type: ignore[attr-defined]
    error, cause = _failed(target.run(_put(target.table), {"pk": f"throttled-{uuid.uuid4()}"}))
    assert error == name
    assert f"Error Code: {code};" in cause


def test_one_of_many_concurrent_conditional_puts_wins(target: Target) -> None:
    # DynamoDB Developer Guide, "Condition expressions" (conditional writes): a write with a condition is
    # applied only if the condition holds for the item at the time of the write, which is how "put only if
    # absent" serves as a lock. Twelve executions race to create one item: exactly one may succeed.
    definition = _put(target.table, condition="attribute_not_exists(pk)")
    arn = target.machine(definition)
    pk = f"race-{uuid.uuid4()}"
    starts: list[str] = []
    barrier = threading.Barrier(12)

    def start() -> None:
        barrier.wait()
        starts.append(target.start(arn, {"pk": pk})["executionArn"])

    threads = [threading.Thread(target=start) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    statuses = sorted(target.finish(execution).status for execution in starts)
    assert statuses == ["FAILED"] * 11 + ["SUCCEEDED"]
