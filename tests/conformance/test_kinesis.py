"""A Kinesis stream written and read at once, as a stream door's pipe reads it while producers write.

Sources: the Kinesis API reference, PutRecord ("Sequence numbers increase over time and are specific to a
shard within a stream"; the response's SequenceNumber: "The sequence number identifier that was assigned to
the put data record") and GetRecords (records are returned from the position of the shard iterator, and
NextShardIterator continues after the last record returned); the Kinesis Developer Guide, terminology:
"Each data record has a sequence number that is unique per partition-key within its shard".
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.conformance.harness import Target
from tests.polling import wait_until

WRITERS, EACH = 4, 50


@pytest.fixture
def stream(target: Target) -> Iterator[str]:
    kinesis = target.client("kinesis")
    name = f"conformance-{uuid.uuid4().hex[:12]}"
    kinesis.create_stream(StreamName=name, ShardCount=1)
    wait_until(
        lambda: (
            kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamStatus"] == "ACTIVE"
        ),
        60,
        what="the stream to be active",
        interval=0.1,
    )
    yield name
    with contextlib.suppress(ClientError):
        kinesis.delete_stream(StreamName=name, EnforceConsumerDeletion=True)


def test_records_put_while_the_shard_is_read_are_each_read_once_in_order(target: Target, stream: str) -> None:
    kinesis = target.client("kinesis")
    shard = kinesis.list_shards(StreamName=stream)["Shards"][0]["ShardId"]
    iterator = kinesis.get_shard_iterator(StreamName=stream, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    errors: list[BaseException] = []
    put: list[str] = []

    def write(writer: int) -> None:
        try:
            for i in range(EACH):
                answer = kinesis.put_record(StreamName=stream, Data=f"{writer}-{i}".encode(), PartitionKey="p")
                put.append(answer["SequenceNumber"])
        except BaseException as error:
            errors.append(error)

    writers = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
    for thread in writers:
        thread.start()
    read: list[dict[str, Any]] = []
    position = iterator["ShardIterator"]

    def everything_read() -> bool:
        nonlocal position
        answer = kinesis.get_records(ShardIterator=position, Limit=25)
        read.extend(answer["Records"])
        position = answer["NextShardIterator"]
        return len(read) >= WRITERS * EACH

    wait_until(everything_read, 60, what="every record to be read", interval=0.001)
    for thread in writers:
        thread.join(30)

    assert errors == []
    numbers = [int(record["SequenceNumber"]) for record in read]
    assert len(set(put)) == len(put) == WRITERS * EACH  # each record numbered on its own
    assert numbers == sorted(numbers) and sorted(numbers) == sorted(int(n) for n in put)
    for writer in range(WRITERS):  # one writer's records in the order it put them
        mine = [record["Data"] for record in read if record["Data"].startswith(f"{writer}-".encode())]
        assert mine == [f"{writer}-{i}".encode() for i in range(EACH)]
