"""The outbox example on the embedded engine: its template (which nests the workflow) deployed as is,
a first run, a duplicate, a rejected request, and what the outbox and the record hold afterwards.

Run it with ``pytest examples/outbox`` (``make test`` runs it too), or by hand:
``idemflow run --template examples/outbox/template.yaml --payload @examples/outbox/events/event.json``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from idemflow.contract import RecordStatus
from idemflow.engine import Engine

EXAMPLE = Path(__file__).resolve().parent.parent
EVENT: dict[str, Any] = json.loads((EXAMPLE / "events" / "event.json").read_text())


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(EXAMPLE / "template.yaml", wait_time_scale=0) as running:
        yield running


def outbox(engine: Engine, key: str) -> list[dict[str, Any]]:
    assert engine.stack is not None
    rows = engine.tables.items(engine.stack.outputs["OutboxTableName"])
    return [r for r in rows if r["idempotencyKey"] == key]


def test_the_workflow_wraps_the_applications_own_function(engine: Engine) -> None:
    assert engine.stack is not None
    assert engine.workflow.side_effect_function == engine.stack.functions["NotifyFunction"].name
    assert engine.workflows == ["IdempotentWorkflow"]
    assert engine.workflow.state_machine_arn == engine.stack.outputs["StateMachineArn"]
    assert engine.workflow.scope == "notifications"


def test_a_first_run_writes_one_notification_and_its_duplicate_replays_it(engine: Engine) -> None:
    key = f"welcome-{uuid.uuid4()}"
    body = {**EVENT, "idempotencyKey": key}

    first, duplicate = engine.run(body), engine.run(body)

    assert (first.status, first.replayed) == ("SUCCEEDED", False), first.cause
    assert (duplicate.status, duplicate.replayed) == ("SUCCEEDED", True)
    assert duplicate.output["result"] == first.output["result"]
    (row,) = outbox(engine, key)
    assert row["notificationId"] == first.output["result"]["notificationId"]
    assert row["to"] == EVENT["payload"]["to"] and row["executionId"] == first.arn
    assert engine.workflow.side_effect_runs(key) == 1
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == RecordStatus.COMPLETED
    assert json.loads(record["result"]) == first.output["result"]


def test_a_rejected_request_writes_nothing_and_releases_the_key(engine: Engine) -> None:
    key = f"welcome-{uuid.uuid4()}"

    outcome = engine.run({"idempotencyKey": key, "payload": {"message": "no recipient"}})

    assert (outcome.status, outcome.error) == ("FAILED", "NotificationRejectedError")
    assert outbox(engine, key) == [] and engine.workflow.record(key) is None
