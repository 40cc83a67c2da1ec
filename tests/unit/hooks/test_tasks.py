"""``dynamodb-task``: DynamoDB task faults per state name. For each, what moto does without it and with it."""

from __future__ import annotations

import uuid

import pytest

from tests.unit.hooks.served import (
    TABLE,
    Moto,
    leave_out,
    run,
    stored,
    task_failures,
)

pytestmark = pytest.mark.unit


# -- dynamodb-task: DynamoDB task faults per state name ---------------------------------------------
def test_throttle_next_fails_that_states_dynamodb_call(moto: Moto) -> None:
    moto.faults.throttle_next("PutRecord")
    item_id = f"throttled-{uuid.uuid4()}"

    done = run(moto, "put", {"id": item_id})

    assert done["status"] == "FAILED"
    assert done["error"] == "DynamoDB.ProvisionedThroughputExceededException"
    failures = task_failures(moto, done["executionArn"])
    assert [error for error, _ in failures] == ["DynamoDB.ProvisionedThroughputExceededException"]
    assert "Service: AmazonDynamoDBv2; Status Code: 400" in failures[0][1]
    assert stored(moto, item_id) is None
    assert moto.faults.pending() == {}
    assert run(moto, "put", {"id": item_id})["status"] == "SUCCEEDED", "the fault was not used up"


def test_without_the_hook_the_dynamodb_call_is_not_throttled(moto: Moto) -> None:
    leave_out("dynamodb-task")
    moto.faults.throttle_next("PutRecord")
    item_id = f"unthrottled-{uuid.uuid4()}"

    done = run(moto, "put", {"id": item_id})

    assert done["status"] == "SUCCEEDED", done
    assert stored(moto, item_id) is not None
    assert moto.faults.pending() == {"dynamodb:PutRecord": 1}


def test_throttle_is_per_state_name(moto: Moto) -> None:
    moto.faults.throttle_next("SomeOtherState")

    assert run(moto, "put", {"id": f"other-{uuid.uuid4()}"})["status"] == "SUCCEEDED"
    assert moto.faults.pending() == {"dynamodb:SomeOtherState": 1}


def test_lost_dynamodb_response_after_the_write(moto: Moto) -> None:
    moto.faults.lose_dynamodb_response_next("PutRecord")
    item_id = f"lost-{uuid.uuid4()}"

    done = run(moto, "put", {"id": item_id})

    assert done["status"] == "FAILED"
    assert done["error"] == "DynamoDB.InternalServerErrorException"
    assert "Status Code: 500" in task_failures(moto, done["executionArn"])[0][1]
    assert stored(moto, item_id) is not None, "the write should have happened before the response was lost"


def test_before_dynamodb_runs_just_before_the_call(moto: Moto) -> None:
    item_id = f"raced-{uuid.uuid4()}"

    def another_writer() -> None:
        moto.client("dynamodb").put_item(TableName=TABLE, Item={"id": {"S": item_id}, "by": {"S": "another"}})

    moto.faults.before_dynamodb("PutRecord", another_writer)

    done = run(moto, "put", {"id": item_id})

    assert done["status"] == "FAILED"
    assert done["error"] == "DynamoDB.ConditionalCheckFailedException"
    assert stored(moto, item_id) == {"id": {"S": item_id}, "by": {"S": "another"}}
