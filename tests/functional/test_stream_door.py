"""The stream door (KinesisStreamArn) on the embedded engine: records written with plain boto3 ``put_record`` to a
Kinesis stream reach the intake through the template's pipe, in each shard's order, once per key, and every
record is accounted for: a completed key, the doors' dead-letter queue (a record the intake cannot complete,
with its reason), or a described batch on it (a batch the intake would not start, after the pipe's retries).

What the pipe passes on (the flat Kinesis record, ``data`` parsed when it is JSON) is pinned in
tests/unit/test_pipe_records.py; the rest is the template's own.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from idemflow.contract import WorkflowError
from idemflow.engine import Engine
from idemflow.engine.services.pipes.service import Pipes
from tests.charge.side_effect import payment
from tests.functional.doors import attribute, dead_letters, deliveries, wait_for_deliveries
from tests.polling import wait_until

STREAM = "orders"
STREAM_ARN = f"arn:aws:kinesis:us-east-1:123456789012:stream/{STREAM}"
OVERRIDES = {
    "KinesisStreamArn": STREAM_ARN,
    "DoorKeyField": "orderId",
    "StreamMaximumRetryAttempts": "2",
    "InProgressMaxPolls": "30",
}


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(parameter_overrides=OVERRIDES, wait_time_scale=0.01) as running:
        # The stream is the user's (the template takes its ARN): made here, after the pipe started polling for it.
        running.http_client("kinesis").create_stream(StreamName=STREAM, ShardCount=2)
        yield running


def put(engine: Engine, data: Any, partition: str = "p") -> str:
    """Write one record as a producer would; its sequence number."""
    body = data if isinstance(data, bytes) else json.dumps(data).encode()
    answer = engine.http_client("kinesis").put_record(StreamName=STREAM, Data=body, PartitionKey=partition)
    return f"{answer['ShardId']}:{answer['SequenceNumber']}"


def order(key: str, amount: int = 4200, **extra: Any) -> dict[str, Any]:
    return {"orderId": key, **payment(amount=amount), **extra}


def test_a_record_runs_the_workflow_once_with_the_key_of_its_data(engine: Engine) -> None:
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    event_id = put(engine, order(key, amount=4200))

    (delivery,) = wait_for_deliveries(engine, 1, before)

    assert (delivery["outcome"], delivery["idempotencyKey"], delivery["keyFrom"]) == ("COMPLETED", key, "field")
    assert delivery["sourceId"] == event_id and delivery["replayed"] is False
    assert engine.workflow.side_effect_runs(key) == 1


def test_a_producer_writing_one_key_twice_runs_the_side_effect_once(engine: Engine) -> None:
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    put(engine, order(key))
    put(engine, order(key))

    found = wait_for_deliveries(engine, 2, before)

    assert sorted(d["replayed"] for d in found) == [False, True]
    assert {d["outcome"] for d in found} == {"COMPLETED"}
    assert engine.workflow.side_effect_runs(key) == 1


def test_a_batch_delivered_again_runs_its_side_effects_once(engine: Engine) -> None:
    # The pipe hands a batch over and stops before it checkpoints: the same records come again (same eventIDs).
    before = len(deliveries(engine))
    engine.faults.keep_batch_next("StreamPipe")
    event_id = put(engine, {"no": "key", **payment()})  # keyed by the record itself: kinesis:<eventID>

    found = wait_for_deliveries(engine, 2, before)

    assert {d["idempotencyKey"] for d in found} == {f"kinesis:{event_id}"}
    assert sorted(d["replayed"] for d in found) == [False, True]
    assert engine.workflow.side_effect_runs(f"kinesis:{event_id}") == 1


def test_a_record_the_intake_cannot_complete_is_dead_lettered_with_its_reason(engine: Engine) -> None:
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    put(engine, order(key, amount=100))
    wait_for_deliveries(engine, 1, before)
    event_id = put(engine, order(key, amount=200))  # the same key with another payload

    (delivery,) = wait_for_deliveries(engine, 1, before + 1)

    assert (delivery["outcome"], delivery["error"]) == ("DEAD_LETTERED", WorkflowError.KEY_REUSED)
    (letter,) = [
        m
        for m in dead_letters(engine)
        if m.get("MessageAttributes", {}).get("SOURCE_ID", {}).get("StringValue") == f"kinesis:{event_id}"
    ]
    assert attribute(letter, "ERROR_CODE") == WorkflowError.KEY_REUSED and attribute(letter, "idempotencyKey") == key
    assert json.loads(letter["Body"])["amount"] == 200  # the record's data, as it came
    assert engine.workflow.side_effect_runs(key) == 1


def test_records_over_two_shards_for_few_keys_run_one_side_effect_per_key(engine: Engine) -> None:
    before = len(deliveries(engine))
    keys = [f"order-{uuid.uuid4()}" for _ in range(4)]
    written = [put(engine, order(keys[i % 4]), partition=f"p{i}") for i in range(24)]
    assert len({w.split(":")[0] for w in written}) == 2  # both shards

    found = wait_for_deliveries(engine, 24, before)

    assert Counter(d["idempotencyKey"] for d in found) == dict.fromkeys(keys, 6)
    assert {d["sourceId"] for d in found} == set(written)  # every record accounted for
    assert {d["outcome"] for d in found} == {"COMPLETED"}
    assert [engine.workflow.side_effect_runs(k) for k in keys] == [1, 1, 1, 1]


def test_each_shard_is_handed_over_in_its_order(engine: Engine) -> None:
    # eb-pipes-kinesis: "EventBridge Pipes maintains the order of records from the data stream when sending that
    # data to the destination." The pipe's own account of what it handed over, in order (intake executions
    # started in one millisecond list in either order).
    stats = engine.service(Pipes).stats[next(p.name for p in engine.service(Pipes).pipes)]
    before, handed = len(deliveries(engine)), len(stats.handed_over)
    written = [put(engine, order(f"order-{uuid.uuid4()}"), partition="one-shard") for _ in range(12)]

    found = wait_for_deliveries(engine, 12, before)

    assert {d["sourceId"] for d in found} == set(written)
    shard = written[0].split(":")[0]
    assert [i for i in stats.handed_over[handed:] if i.startswith(f"{shard}:")] == written


def test_a_batch_the_intake_will_not_start_is_retried_then_described_and_the_shard_goes_on(engine: Engine) -> None:
    # A record whose delivery is over the intake's input quota (262,144 bytes): StartExecution refuses the batch,
    # the pipe retries it StreamMaximumRetryAttempts times, then describes it on the dead-letter queue.
    stats = engine.service(Pipes).stats[next(p.name for p in engine.service(Pipes).pipes)]
    before, described = len(deliveries(engine)), stats.dead_lettered
    big = put(engine, order(f"order-{uuid.uuid4()}", note="n" * 270_000), partition="big")
    key = f"order-{uuid.uuid4()}"
    after = put(engine, order(key), partition="big")

    (delivery,) = wait_for_deliveries(engine, 1, before)
    assert delivery["sourceId"] == after and engine.workflow.side_effect_runs(key) == 1

    def description() -> dict[str, Any] | None:
        assert engine.stack is not None
        sqs = engine.http_client("sqs")
        url = engine.stack.outputs["StreamDeadLetterQueueUrl"]  # not the doors' own dead-letter queue
        for message in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
            body = json.loads(message["Body"])
            if body.get("KinesisBatchInfo", {}).get("startSequenceNumber") == big.split(":")[1]:
                return dict(body)
        return None

    body = wait_until(description, 30, what="the batch's description on the dead-letter queue", interval=0.05)
    info = body["KinesisBatchInfo"]
    assert (info["shardId"], info["endSequenceNumber"], info["batchSize"]) == (big.split(":")[0], big.split(":")[1], 1)
    assert info["streamArn"] == STREAM_ARN
    assert body["requestContext"] == {"condition": "RetryAttemptsExhausted", "approximateInvokeCount": 3}
    assert stats.dead_lettered == described + 1 and "262144" in stats.last_failure


def test_a_deleted_stream_is_polled_until_it_is_back_and_its_records_are_handed_over(engine: Engine) -> None:
    # Last in this module: it deletes the module's stream. The pipe's poller survives (what Pipes does with a
    # deleted source is on no AWS record found: the engine polls on, as it does for a deleted queue).
    stats = engine.service(Pipes).stats[next(p.name for p in engine.service(Pipes).pipes)]
    kinesis = engine.http_client("kinesis")
    kinesis.delete_stream(StreamName=STREAM)
    missing = stats.missing_source_polls
    wait_until(lambda: stats.missing_source_polls > missing, 30, what="the pipe to find no stream", interval=0.05)

    kinesis.create_stream(StreamName=STREAM, ShardCount=1)
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    put(engine, order(key))

    (delivery,) = wait_for_deliveries(engine, 1, before)
    assert delivery["idempotencyKey"] == key and engine.workflow.side_effect_runs(key) == 1
