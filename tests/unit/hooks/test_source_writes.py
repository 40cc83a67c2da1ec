"""``source-writes``: a write to a queue, a Kinesis stream or a table's stream wakes the pipes' pollers. For each
source, what moto does without the hook (nothing to wait on: a poller would read every few milliseconds) and
with it.

The writes go through the package's moto server, never ``mock_aws()``: starting one resets every backend in
the process, the server's state machines with them, and the package's other tests would find them gone."""

from __future__ import annotations

import threading
import uuid

import pytest

from idemflow.engine import registry
from idemflow.engine.services.pipes import source_writes
from tests.unit.hooks.served import Moto

pytestmark = pytest.mark.unit


def write_each_source(moto: Moto) -> None:
    """One write to each kind of source a pipe reads, each to a source of its own (deleted afterwards)."""
    name = f"writes-{uuid.uuid4().hex[:8]}"
    sqs = moto.client("sqs")
    queue_url = sqs.create_queue(QueueName=name)["QueueUrl"]
    sqs.send_message(QueueUrl=queue_url, MessageBody="{}")
    kinesis = moto.client("kinesis")
    kinesis.create_stream(StreamName=name, ShardCount=1)
    kinesis.put_record(StreamName=name, Data=b"{}", PartitionKey="p")
    ddb = moto.client("dynamodb")
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    )
    ddb.put_item(TableName=name, Item={"id": {"S": "a"}})
    sqs.delete_queue(QueueUrl=queue_url)
    kinesis.delete_stream(StreamName=name)
    ddb.delete_table(TableName=name)


def counted(moto: Moto) -> int:
    before = source_writes.writes()
    write_each_source(moto)
    return source_writes.writes() - before


def test_without_the_hook_no_write_is_seen(moto: Moto) -> None:
    registry.apply(without=("source-writes",), hooks_too=True)
    try:
        assert counted(moto) == 0
    finally:
        registry.apply()


def test_with_the_hook_each_write_is_seen_and_wakes_a_waiter(moto: Moto) -> None:
    registry.apply()
    assert counted(moto) == 3  # a message, a record, a stream record

    seen, woken = source_writes.writes(), threading.Event()

    def wait() -> None:
        source_writes.wait_for_write(seen, timeout=30)
        woken.set()

    waiter = threading.Thread(target=wait)
    waiter.start()
    sqs = moto.client("sqs")
    queue_url = sqs.create_queue(QueueName=f"wake-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    sqs.send_message(QueueUrl=queue_url, MessageBody="{}")
    sqs.delete_queue(QueueUrl=queue_url)
    assert woken.wait(30)  # the write woke it, long before its timeout
    waiter.join()
