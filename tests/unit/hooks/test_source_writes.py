"""``source-writes``: a write to a queue, a Kinesis stream or a table's stream wakes the pipes' pollers. For each
source, what moto does without the hook (nothing to wait on: a poller would read every few milliseconds) and
with it."""

from __future__ import annotations

import threading
from typing import Any

import boto3
import pytest
from moto import mock_aws

from idemflow.engine import registry
from idemflow.engine.changes import source_writes

pytestmark = pytest.mark.unit

REGION = "us-east-1"


def write_each_source() -> None:
    """One write to each kind of source a pipe reads."""
    sqs = boto3.client("sqs", region_name=REGION)
    sqs.send_message(QueueUrl=sqs.create_queue(QueueName="q")["QueueUrl"], MessageBody="{}")
    kinesis = boto3.client("kinesis", region_name=REGION)
    kinesis.create_stream(StreamName="s", ShardCount=1)
    kinesis.put_record(StreamName="s", Data=b"{}", PartitionKey="p")
    ddb = boto3.client("dynamodb", region_name=REGION)
    ddb.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    )
    ddb.put_item(TableName="t", Item={"id": {"S": "a"}})


def counted(writes: Any) -> int:
    before = source_writes.writes()
    with mock_aws():
        writes()
    return source_writes.writes() - before


def test_without_the_hook_no_write_is_seen() -> None:
    registry.apply(without=("source-writes",), hooks_too=True)
    try:
        assert counted(write_each_source) == 0
    finally:
        registry.apply()


def test_with_the_hook_each_write_is_seen_and_wakes_a_waiter() -> None:
    registry.apply()
    assert counted(write_each_source) == 3  # a message, a record, a stream record

    seen, woken = source_writes.writes(), threading.Event()

    def wait() -> None:
        source_writes.wait_for_write(seen, timeout=30)
        woken.set()

    waiter = threading.Thread(target=wait)
    waiter.start()
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        sqs.send_message(QueueUrl=sqs.create_queue(QueueName="q")["QueueUrl"], MessageBody="{}")
    assert woken.wait(30)  # the write woke it, long before its timeout
    waiter.join()
