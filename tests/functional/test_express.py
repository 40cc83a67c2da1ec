"""The same definition deployed as an EXPRESS workflow (template parameter WorkflowType) and started
synchronously, as an Express caller would: StartSyncExecution returns the output directly."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from idemflow.contract import WorkflowError
from idemflow.engine import Engine

from .side_effects import DEFAULT


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(wait_time_scale=0, parameter_overrides={"WorkflowType": "EXPRESS"}) as running:
        yield running


def start_sync(engine: Engine, body: dict[str, object]) -> dict[str, object]:
    response: dict[str, object] = engine.client("stepfunctions").start_sync_execution(
        stateMachineArn=engine.workflow.state_machine_arn, name=str(uuid.uuid4()), input=json.dumps(body)
    )
    return response


def test_express_state_machine_is_deployed_as_express(engine: Engine) -> None:
    described = engine.client("stepfunctions").describe_state_machine(stateMachineArn=engine.workflow.state_machine_arn)
    assert described["type"] == "EXPRESS"


def test_express_first_run_and_duplicate_through_start_sync_execution(engine: Engine) -> None:
    key = f"order-{uuid.uuid4()}"

    first = start_sync(engine, {"idempotencyKey": key, "payload": DEFAULT.payload})
    duplicate = start_sync(engine, {"idempotencyKey": key, "payload": DEFAULT.payload})

    assert first["status"] == "SUCCEEDED" and duplicate["status"] == "SUCCEEDED"
    first_output, duplicate_output = json.loads(str(first["output"])), json.loads(str(duplicate["output"]))
    assert first_output["replayed"] is False and duplicate_output["replayed"] is True
    assert duplicate_output["result"] == first_output["result"]
    assert engine.workflow.side_effect_runs(key) == 1


def test_express_failure_is_reported_in_the_sync_response(engine: Engine) -> None:
    response = start_sync(engine, {"idempotencyKey": "", "payload": DEFAULT.payload})

    assert response["status"] == "FAILED"
    assert response["error"] == WorkflowError.KEY_INVALID
