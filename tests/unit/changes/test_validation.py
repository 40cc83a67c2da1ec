"""``required-members`` (``validation.py``): a request without a required member. moto 5.2.5's behaviour
without the change and the engine's with it."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from idemflow.engine.services.stepfunctions.validation import missing_members
from tests import sessions
from tests.unit.changes.machines import REGION

pytestmark = pytest.mark.unit

OPERATIONS = ["describe_execution", "stop_execution", "get_execution_history"]


def unvalidated(aws: None) -> Any:
    """A client that sends what it is given, as API Gateway's AWS integration does (no SDK validation)."""
    config = Config(parameter_validation=False, inject_host_prefix=False)
    return sessions.client("stepfunctions", region_name=REGION, config=config)


@pytest.mark.parametrize("operation", OPERATIONS)
def test_unpatched_moto_5_2_5_fails_on_a_missing_execution_arn(aws: None, unpatched: None, operation: str) -> None:
    with pytest.raises(TypeError):  # a server answers it with a 500
        getattr(unvalidated(aws), operation)()


@pytest.mark.parametrize("operation", [*OPERATIONS, "start_execution", "start_sync_execution"])
def test_patched_a_missing_required_member_is_a_validation_exception(aws: None, patched: None, operation: str) -> None:
    with pytest.raises(ClientError) as refused:
        getattr(unvalidated(aws), operation)()
    member = "stateMachineArn" if operation.startswith("start_") else "executionArn"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert refused.value.response["Error"] == {
        "Code": "ValidationException",
        "Message": f"1 validation error detected: Value null at '{member}' failed to satisfy constraint: "
        "Member must not be null",
    }


def test_the_required_members_are_the_service_models() -> None:
    # API reference, SendTaskSuccess: taskToken and output are both "Required: Yes"; null counts as absent.
    assert missing_members("SendTaskSuccess", b'{"output": null}') == ["taskToken", "output"]
    assert missing_members("ListStateMachines", b"{}") == []
    assert missing_members("DescribeExecution", b"not json") == []  # the service's own SerializationException


def test_patched_two_missing_members_are_counted_in_one_message(aws: None, patched: None) -> None:
    with pytest.raises(ClientError) as refused:
        unvalidated(aws).send_task_success()
    assert refused.value.response["Error"]["Message"].startswith("2 validation errors detected: Value null at ")
    assert refused.value.response["Error"]["Message"].count("Member must not be null") == 2
