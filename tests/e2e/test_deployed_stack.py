"""End-to-end: the same contract against a stack deployed with `sam deploy`.

Skipped unless IDEMFLOW_STACK names a deployed stack and AWS credentials are available:
    IDEMFLOW_STACK=idempotent-workflow AWS_PROFILE=... .venv/bin/pytest -m e2e
"""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any

import boto3
import pytest

pytestmark = pytest.mark.e2e

STACK = os.environ.get("IDEMFLOW_STACK", "")


def _credentials_available() -> bool:
    try:
        return boto3.session.Session().get_credentials() is not None
    except Exception:  # any failure means: no usable credentials
        return False


if not STACK or not _credentials_available():
    pytest.skip("set IDEMFLOW_STACK and AWS credentials to run the end-to-end tests", allow_module_level=True)


@pytest.fixture(scope="module")
def outputs() -> dict[str, str]:
    stack = boto3.client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def run(sfn: Any, arn: str, body: dict[str, Any], deadline: float = 120) -> dict[str, Any]:
    execution = sfn.start_execution(stateMachineArn=arn, name=str(uuid.uuid4()), input=json.dumps(body))
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        described: dict[str, Any] = sfn.describe_execution(executionArn=execution["executionArn"])
        if described["status"] != "RUNNING":
            return described
        time.sleep(1)
    raise AssertionError(f"execution did not finish within {deadline} s")


def test_first_run_then_duplicate_replays_the_same_result(outputs: dict[str, str]) -> None:
    sfn = boto3.client("stepfunctions")
    body = {
        "idempotencyKey": f"e2e-{uuid.uuid4()}",
        "payload": {"customerId": "cust-e2e", "amount": 100, "currency": "EUR"},
    }
    first = run(sfn, outputs["StateMachineArn"], body)
    duplicate = run(sfn, outputs["StateMachineArn"], body)

    assert first["status"] == duplicate["status"] == "SUCCEEDED"
    first_output, duplicate_output = json.loads(first["output"]), json.loads(duplicate["output"])
    assert first_output["replayed"] is False and duplicate_output["replayed"] is True
    assert duplicate_output["result"] == first_output["result"]
    ledger = boto3.resource("dynamodb").Table(outputs["LedgerTableName"])
    assert ledger.get_item(Key={"chargeId": body["idempotencyKey"]}, ConsistentRead=True).get("Item")


def test_invalid_key_fails_named(outputs: dict[str, str]) -> None:
    sfn = boto3.client("stepfunctions")
    described = run(sfn, outputs["StateMachineArn"], {"idempotencyKey": "", "payload": {}})
    assert described["status"] == "FAILED"
    assert described.get("error") == "IdempotencyKeyInvalid"
