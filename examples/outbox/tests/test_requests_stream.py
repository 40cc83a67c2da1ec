"""The transactional outbox on the embedded engine (RequestsTableDoor=true): rows written with plain boto3
``put_item`` into the example's RequestsTable reach the workflow through the table's stream and the workflow's
stream door, once per requestId, and every row is accounted for: a notification in the outbox, or the doors'
dead-letter queue with its reason.

What the pipe passes on (the stream record, its new image as DynamoDB JSON, INSERT records only) is the
engine's, pinned in the project's tests/unit/test_pipe_records.py.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from idemflow.engine import Engine
from tests.functional.doors import deliveries, wait_for_deliveries

EXAMPLE = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(EXAMPLE / "template.yaml", parameter_overrides={"RequestsTableDoor": "true"}, wait_time_scale=0) as e:
        yield e


def write(engine: Engine, request_id: str, to: str = "ada@example.com") -> None:
    """A request's row as the application writes it with its business change."""
    assert engine.stack is not None
    item = {"requestId": {"S": request_id}, "to": {"S": to}, "message": {"S": "Welcome"}}
    engine.http_client("dynamodb").put_item(TableName=engine.stack.outputs["RequestsTableName"], Item=item)


def notifications(engine: Engine, request_id: str) -> list[dict[str, Any]]:
    assert engine.stack is not None
    rows = engine.tables.items(engine.stack.outputs["OutboxTableName"])
    return [r for r in rows if r["idempotencyKey"] == request_id]


def test_a_row_sends_one_notification_keyed_by_its_request_id(engine: Engine) -> None:
    before = len(deliveries(engine))
    request_id = f"welcome-{uuid.uuid4()}"
    write(engine, request_id, to="grace@example.com")

    (delivery,) = wait_for_deliveries(engine, 1, before)

    assert (delivery["outcome"], delivery["idempotencyKey"], delivery["keyFrom"]) == ("COMPLETED", request_id, "field")
    (notification,) = notifications(engine, request_id)
    assert notification["to"] == "grace@example.com"  # the function read the row's DynamoDB image


def test_rows_handed_over_twice_send_one_notification_per_request_and_every_record_is_accounted_for(
    engine: Engine,
) -> None:
    # The pipe hands every batch over again (it stops before it checkpoints): 12 requests, 24 deliveries.
    before = len(deliveries(engine))
    engine.faults.keep_batch_next("TableStreamPipe", 1000)
    requests = [f"welcome-{uuid.uuid4()}" for _ in range(12)]
    try:
        for request_id in requests:
            write(engine, request_id)
        found = wait_for_deliveries(engine, 24, before)
    finally:
        engine.faults.clear()

    assert Counter(d["idempotencyKey"] for d in found) == dict.fromkeys(requests, 2)
    assert {d["outcome"] for d in found} == {"COMPLETED"}
    assert Counter(d["replayed"] for d in found) == {False: 12, True: 12}
    assert [len(notifications(engine, r)) for r in requests] == [1] * 12


def test_a_request_written_again_changed_or_deleted_is_not_new_work(engine: Engine) -> None:
    # Only INSERT records reach the intake (the pipe's FilterCriteria): the application's retry of its write, a
    # change to the row and its deletion send nothing more.
    assert engine.stack is not None
    before = len(deliveries(engine))
    request_id = f"welcome-{uuid.uuid4()}"
    write(engine, request_id)
    wait_for_deliveries(engine, 1, before)
    write(engine, request_id)
    table, ddb = engine.stack.outputs["RequestsTableName"], engine.http_client("dynamodb")
    ddb.update_item(
        TableName=table,
        Key={"requestId": {"S": request_id}},
        UpdateExpression="SET sentAt = :now",
        ExpressionAttributeValues={":now": {"S": "2026-11-26T00:00:00Z"}},
    )
    ddb.delete_item(TableName=table, Key={"requestId": {"S": request_id}})
    later = f"welcome-{uuid.uuid4()}"
    write(engine, later)  # a later insert: once it is delivered, the stream went past the three

    (delivery,) = wait_for_deliveries(engine, 1, before + 1)

    assert delivery["idempotencyKey"] == later
    assert len(notifications(engine, request_id)) == 1


def test_a_row_the_function_refuses_is_dead_lettered_with_its_reason(engine: Engine) -> None:
    assert engine.stack is not None
    before = len(deliveries(engine))
    request_id = f"welcome-{uuid.uuid4()}"
    write(engine, request_id, to="")

    (delivery,) = wait_for_deliveries(engine, 1, before)

    assert (delivery["outcome"], delivery["error"]) == ("DEAD_LETTERED", "NotificationRejectedError")
    sqs = engine.http_client("sqs")
    got = sqs.receive_message(
        QueueUrl=engine.stack.outputs["DoorDeadLetterQueueUrl"], MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    ).get("Messages", [])
    (letter,) = [m for m in got if m["MessageAttributes"]["idempotencyKey"]["StringValue"] == request_id]
    assert letter["MessageAttributes"]["ERROR_CODE"]["StringValue"] == "NotificationRejectedError"
    assert notifications(engine, request_id) == []
