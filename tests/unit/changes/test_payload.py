"""Sizes (``payload.py``) and a DynamoDB task's own failures: ``payload-size``, ``dynamodb-task-failures``. For each
change, moto 5.2.5's behaviour without it and the engine's with it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from idemflow.engine import registry, state
from idemflow.engine.services.stepfunctions.payload import payload_bytes
from tests.unit.changes.machines import (
    create_state_machine,
    run,
)

pytestmark = pytest.mark.unit


# ---------------------------------------------------------------------------------------------
# payload-size, dynamodb-task-failures
# ---------------------------------------------------------------------------------------------
# AWS: at most 262,144 bytes "as a UTF-8 encoded string" (service quotas page; API reference:
# "Maximum length of 262144"), checked on a state's output and, "after Parameters processing", on a
# state's input (concepts-error-handling, States.DataLimitExceeded).
def _output_of(n: int) -> tuple[dict[str, Any], dict[str, str]]:
    """A state machine whose Pass state outputs {"r": "é" * n} (2n + 8 bytes of compact UTF-8 JSON), and its
    input: a quarter of the string, joined four times by States.Format. The string is not in the definition:
    moto's ASL parser would lex all of it at each create, for seconds."""
    four = "States.Format('{}{}{}{}{}', $.s, $.s, $.s, $.s, $.t)"
    machine = {"StartAt": "Make", "States": {"Make": {"Type": "Pass", "Parameters": {"r.$": four}, "End": True}}}
    return machine, {"s": "é" * (n // 4), "t": "é" * (n % 4)}


def test_unpatched_moto_5_2_5_counts_escaped_ascii_not_utf8(unpatched: None, sfn: Any) -> None:
    # 262,128 bytes of UTF-8 (under the quota) are 786,000+ characters once "é" is escaped as \u00e9.
    machine, execution_input = _output_of(131_060)
    described = run(sfn, create_state_machine(sfn, machine), execution_input)

    assert described["status"] == "FAILED" and described["error"] == "States.DataLimitExceeded"


@pytest.mark.parametrize(("n", "status"), [(131_068, "SUCCEEDED"), (131_069, "FAILED")])
def test_patched_output_size_is_utf8_bytes_up_to_the_quota_inclusive(
    patched: None, sfn: Any, n: int, status: str
) -> None:
    assert payload_bytes({"r": "é" * n}) == 2 * n + 8  # 262,144 and 262,146

    machine, execution_input = _output_of(n)
    described = run(sfn, create_state_machine(sfn, machine), execution_input)

    assert described["status"] == status, described.get("cause")


def _doubling_put(table: str) -> dict[str, Any]:
    """A putItem whose Parameters use the input's string twice: its input after Parameters is twice as big."""
    return {
        "StartAt": "Put",
        "States": {
            "Put": {
                "Type": "Task",
                "Resource": "arn:aws:states:::dynamodb:putItem",
                "Parameters": {
                    "TableName": table,
                    "Item": {"id": {"S": "k"}, "a": {"S.$": "$.s"}, "b": {"S.$": "$.s"}},
                },
                "Catch": [{"ErrorEquals": ["States.DataLimitExceeded"], "ResultPath": "$.error", "Next": "Caught"}],
                "ResultPath": None,
                "End": True,
            },
            "Caught": {"Type": "Pass", "Parameters": {"error.$": "$.error.Error"}, "End": True},
        },
    }


@pytest.fixture
def small_table(ddb: Any) -> str:
    ddb.create_table(
        TableName="sizes",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return "sizes"


def test_unpatched_moto_5_2_5_never_checks_a_tasks_input_after_parameters(
    unpatched: None, sfn: Any, ddb: Any, small_table: str
) -> None:
    described = run(sfn, create_state_machine(sfn, _doubling_put(small_table)), {"s": "x" * 140_000})

    assert described["status"] == "SUCCEEDED" and "error" not in json.loads(described["output"])
    assert "Item" in ddb.get_item(TableName=small_table, Key={"id": {"S": "k"}})


def test_patched_a_tasks_input_after_parameters_over_the_quota_fails_it_before_its_request(
    patched: None, sfn: Any, ddb: Any, small_table: str
) -> None:
    described = run(sfn, create_state_machine(sfn, _doubling_put(small_table)), {"s": "x" * 140_000})

    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == {"error": "States.DataLimitExceeded"}  # caught by name
    assert "Item" not in ddb.get_item(TableName=small_table, Key={"id": {"S": "k"}}), "the request was sent"


def test_unpatched_moto_5_2_5_names_a_dynamodb_tasks_own_failure_amazon_dynamodb_exception(
    sfn: Any, ddb: Any, small_table: str
) -> None:
    # Every change but dynamodb-task-failures: payload-size fails the task with its own failure event
    # (States.DataLimitExceeded, as AWS: docs, concepts-error-handling), which moto's DynamoDB task renames.
    registry.apply(without=["dynamodb-task-failures"])
    state.update(wait_time_scale=0)

    described = run(sfn, create_state_machine(sfn, _doubling_put(small_table)), {"s": "x" * 140_000})

    assert described["status"] == "FAILED"  # the Catch on States.DataLimitExceeded never matched
    assert described["error"] == "DynamoDB.AmazonDynamoDBException"
    assert "Item" not in ddb.get_item(TableName=small_table, Key={"id": {"S": "k"}})
