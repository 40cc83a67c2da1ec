"""An outage rehearsed on the embedded engine, as the runbook tells an operator to recover from it
(docs/runbook.md: a door's ``DEAD_LETTERED`` delivery: "fix, then move the messages to the request queue"):
the side effect fails for a while, every message goes to the doors' dead-letter queue with its reason, the
fault ends, the operator moves the dead letters back with ``StartMessageMoveTask``, and each key then runs
its side effect exactly once. Nothing is lost: every message is counted at each step."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from idemflow.engine import Engine
from tests.charge.side_effect import ledger_rows, payment
from tests.functional.doors import attribute, dead_letters, deliveries, queue_size, wait_for_deliveries
from tests.functional.test_queue_door import OVERRIDES
from tests.polling import wait_until

KEYS = 5


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(parameter_overrides=OVERRIDES, wait_time_scale=0.01) as running:
        yield running


def queue_arn(engine: Engine, output: str) -> str:
    assert engine.stack is not None
    sqs = engine.http_client("sqs")
    attributes = sqs.get_queue_attributes(QueueUrl=engine.stack.outputs[output], AttributeNames=["QueueArn"])
    return str(attributes["Attributes"]["QueueArn"])


def test_an_outage_is_dead_lettered_then_moved_back_and_each_key_runs_once(engine: Engine) -> None:
    assert engine.stack is not None
    sqs = engine.http_client("sqs")
    keys = [f"outage-{uuid.uuid4()}" for _ in range(KEYS)]
    # The outage: the side effect refuses every call with an error the workflow does not retry.
    engine.faults.fail_next(engine.workflow.side_effect_function, KEYS, error="PaymentsUnavailable", message="outage")
    before = len(deliveries(engine))
    for key in keys:
        sqs.send_message(
            QueueUrl=engine.stack.outputs["RequestQueueUrl"],
            MessageBody=json.dumps({"idempotencyKey": key, **payment()}),
        )

    failed = wait_for_deliveries(engine, KEYS, before)
    assert sorted(d["outcome"] for d in failed) == ["DEAD_LETTERED"] * KEYS
    letters = dead_letters(engine)
    assert sorted(json.loads(m["Body"])["idempotencyKey"] for m in letters) == sorted(keys)
    assert {attribute(m, "ERROR_CODE") for m in letters} == {"PaymentsUnavailable"}  # each with its reason
    assert all(engine.workflow.side_effect_runs(key) == 0 for key in keys)

    # The fault is over (its calls are used up); the operator moves the dead letters back to the request queue.
    source = queue_arn(engine, "DoorDeadLetterQueueUrl")
    sqs.start_message_move_task(SourceArn=source, DestinationArn=queue_arn(engine, "RequestQueueUrl"))

    wait_until(
        lambda: sqs.list_message_move_tasks(SourceArn=source)["Results"][0]["Status"] == "COMPLETED",
        30,
        what="the move task to complete",
    )
    task = sqs.list_message_move_tasks(SourceArn=source)["Results"][0]
    assert (task["ApproximateNumberOfMessagesMoved"], task["ApproximateNumberOfMessagesToMove"]) == (KEYS, KEYS)
    again = wait_for_deliveries(engine, KEYS, before + KEYS)
    assert sorted(d["outcome"] for d in again) == ["COMPLETED"] * KEYS
    assert sorted(d["idempotencyKey"] for d in again) == sorted(keys)
    assert [engine.workflow.side_effect_runs(key) for key in keys] == [1] * KEYS
    assert [len(ledger_rows(engine, key)) for key in keys] == [1] * KEYS
    wait_until(lambda: queue_size(engine, "RequestQueueUrl") == 0, 10, what="the request queue to empty")
    assert queue_size(engine, "DoorDeadLetterQueueUrl") == 0
