"""The pipes service: an SQS queue polled into a state machine, as EventBridge Pipes does it, driven by plain
boto3 calls to the engine's endpoint. Each behaviour cites the EventBridge user guide page it follows
(https://docs.aws.amazon.com/eventbridge/latest/userguide/<page>.html)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from idemflow.engine import Engine
from idemflow.engine.background import Background
from idemflow.engine.services.pipes.service import Pipes
from tests.functional.doors import queue_size
from tests.polling import wait_until

pytestmark = pytest.mark.functional

TEMPLATE = Path(__file__).parent / "fixtures" / "pipes" / "template.yaml"


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(TEMPLATE, wait_time_scale=0) as running:
        yield running
    assert not [t for t in threading.enumerate() if t.name.startswith(Background.THREAD_PREFIX)]


def outputs(engine: Engine, machine: str) -> list[Any]:
    sfn = engine.http_client("stepfunctions")
    arn = engine.stack.state_machines[machine].arn if engine.stack else ""
    found = []
    for execution in sfn.list_executions(stateMachineArn=arn)["executions"]:
        described = sfn.describe_execution(executionArn=execution["executionArn"])
        if described["status"] == "SUCCEEDED":
            found.append(json.loads(described["output"]))
    return found


def test_messages_reach_the_target_in_batches_as_a_json_array_each_record_transformed(engine: Engine) -> None:
    assert engine.stack is not None
    sqs = engine.http_client("sqs")
    sent = [
        sqs.send_message(QueueUrl=engine.stack.outputs["QueueUrl"], MessageBody=json.dumps({"order": n}))["MessageId"]
        for n in range(7)
    ]

    batches = wait_until(
        timeout=20,
        what="7 records delivered",
        predicate=lambda: (b := outputs(engine, "Collect")) and sum(map(len, b)) >= 7 and b,
    )

    # eb-pipes-batching-concurrency: a Step Functions target gets the batch as one JSON array; BatchSize 3.
    assert all(isinstance(batch, list) and 1 <= len(batch) <= 3 for batch in batches)
    records = sorted((r for batch in batches for r in batch), key=lambda r: r["order"])
    # eb-pipes-input-transformation: <$.body.order> reaches into the JSON body; quoted, a value is text.
    source = engine.stack.resources["Queue"].model.arn
    assert records == [{"id": sent[n], "order": n, "text": f"order {n} from {source}"} for n in range(7)]
    # eb-pipes-sqs: a batch the target took is deleted from the queue.
    wait_until(lambda: queue_size(engine, "QueueUrl") == 0, 20, what="the queue to empty")
    assert engine.service(Pipes).stats["idemflow-FireAndForget"].records == 7


def test_a_synchronous_targets_batch_item_failures_go_back_to_the_queue_then_to_its_dead_letter_queue(
    engine: Engine,
) -> None:
    assert engine.stack is not None
    sqs = engine.http_client("sqs")
    url = engine.stack.outputs["SyncQueueUrl"]
    good = sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"fail": False}))["MessageId"]
    bad = sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"fail": True}))["MessageId"]

    # eb-pipes-batching-concurrency, partial batch failure: only the failed record is retried; after
    # maxReceiveCount (2) receives the queue's redrive policy moves it to the dead-letter queue.
    wait_until(lambda: queue_size(engine, "SyncQueueUrl") == 0, 20, what="the queue to empty")
    dead = sqs.receive_message(
        QueueUrl=engine.stack.outputs["DeadLettersUrl"], MaxNumberOfMessages=10, AttributeNames=["All"]
    ).get("Messages", [])
    assert [m["MessageId"] for m in dead] == [bad], engine.service(Pipes).stats["idemflow-RequestResponse"]
    assert good != bad
    stats = engine.service(Pipes).stats["idemflow-RequestResponse"]
    # the good record once, the bad one twice (maxReceiveCount), whatever the batches were
    assert (stats.records, stats.failed) == (3, 2), stats


def test_batches_stay_within_the_targets_payload_quota_and_a_record_over_it_stays_on_the_queue(engine: Engine) -> None:
    assert engine.stack is not None
    sqs = engine.http_client("sqs")
    url = engine.stack.outputs["LargeQueueUrl"]
    # Four bodies of ~100 KB (together over the quota), one of 300 KB (alone over it), three small ones; the
    # batching window (1 s, scaled to 0) lets one poll take them all when they are already there.
    sizes = {"a": 100_000, "b": 100_000, "c": 100_000, "d": 100_000, "big": 300_000, "x": 10, "y": 10, "z": 10}
    ids = {
        name: sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"name": name, "fill": "é" * (size // 2)}))[
            "MessageId"
        ]
        for name, size in sizes.items()
    }

    # eb-pipes-sqs: a batch is sent before "the invocation payload size quota is reached", which is 262,144
    # for a Step Functions target (eb-pipes-batching-concurrency); StartExecution refuses an input over it
    # (API reference), so the 300 KB record fails alone, goes back to the queue, and after maxReceiveCount (2)
    # receives the queue's redrive policy moves it to the dead-letter queue (eb-pipes-sqs). Its batch-mates
    # are delivered.
    wait_until(lambda: queue_size(engine, "LargeQueueUrl") == 0, 30, what="the queue to empty")
    batches = wait_until(
        timeout=30,
        what="7 records delivered",
        predicate=lambda: (b := outputs(engine, "CollectWhole")) and sum(map(len, b)) >= 7 and b,
    )
    delivered = sorted(r["body"]["name"] for batch in batches for r in batch)
    assert delivered == sorted(set(sizes) - {"big"})
    assert all(len(json.dumps(b, separators=(",", ":"), ensure_ascii=False).encode()) <= 262_144 for b in batches)
    dead = sqs.receive_message(QueueUrl=engine.stack.outputs["LargeDeadLettersUrl"], MaxNumberOfMessages=10)
    assert [m["MessageId"] for m in dead.get("Messages", [])] == [ids["big"]]
    assert "262144" in engine.service(Pipes).stats["idemflow-WholeBodies"].last_failure
