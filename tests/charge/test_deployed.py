"""End-to-end, for a stack deployed with the example charge (SideEffectFunctionArn empty): a first run and
its duplicate leave one charge in the ledger. Skipped without a stack (tests/e2e/stack.py)."""

from __future__ import annotations

import uuid

import boto3
import pytest

from tests.e2e.stack import run, skip_without_a_stack, stack_outputs

from .side_effect import PAYLOAD

skip_without_a_stack()


def test_a_run_and_its_duplicate_leave_one_charge_in_the_ledger() -> None:
    outputs = stack_outputs()
    if "LedgerTableName" not in outputs:
        pytest.skip("the stack wraps another function (SideEffectFunctionArn): no ledger")
    body = {"idempotencyKey": f"e2e-{uuid.uuid4()}", "payload": PAYLOAD}
    sfn = boto3.client("stepfunctions")

    first = run(sfn, outputs["StateMachineArn"], body)
    duplicate = run(sfn, outputs["StateMachineArn"], body)

    assert first["status"] == duplicate["status"] == "SUCCEEDED"
    ledger = boto3.resource("dynamodb").Table(outputs["LedgerTableName"])
    item = ledger.get_item(Key={"chargeId": body["idempotencyKey"]}, ConsistentRead=True).get("Item")
    assert item is not None and int(item["amount"]) == PAYLOAD["amount"]
