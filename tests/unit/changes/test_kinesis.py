"""Kinesis shards read and written at once (``kinesis.py``): ``kinesis-shards``. moto 5.2.5's behaviour without
it and the engine's with it, the interleaving forced: a read holds still inside its loop over the shard's
records while a write comes in."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import pytest

from tests import sessions
from tests.unit.changes.machines import REGION

pytestmark = pytest.mark.unit

ACCOUNT = "123456789012"  # moto's default account


class PausingRecords(OrderedDict[int, Any]):
    """A shard's records whose loop stops after its first record until told to go on."""

    def __init__(self, records: dict[int, Any]) -> None:
        super().__init__(records)
        self.reading, self.proceed = threading.Event(), threading.Event()

    def items(self) -> Any:
        view = super().items()

        def paused() -> Iterator[tuple[int, Any]]:
            for number, (key, value) in enumerate(view):  # a view of the dict: a change meanwhile ends it
                yield key, value
                if number == 0:
                    self.reading.set()
                    self.proceed.wait(10)

        return paused()


@pytest.fixture
def kinesis(aws: None) -> Any:
    return sessions.client("kinesis", region_name=REGION)


def stream_with_paused_reads(kinesis: Any) -> tuple[str, PausingRecords, str]:
    """A one-shard stream with two records, its records replaced by pausing ones, and an iterator at its start."""
    from moto.kinesis.models import kinesis_backends

    name = f"s-{uuid.uuid4().hex[:8]}"
    kinesis.create_stream(StreamName=name, ShardCount=1)
    for data in (b"1", b"2"):
        kinesis.put_record(StreamName=name, Data=data, PartitionKey="p")
    (shard,) = kinesis_backends[ACCOUNT][REGION].streams[name].shards.values()
    shard.records = records = PausingRecords(shard.records)
    shard_id = kinesis.list_shards(StreamName=name)["Shards"][0]["ShardId"]
    iterator = kinesis.get_shard_iterator(StreamName=name, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON")
    return name, records, iterator["ShardIterator"]


def read_in_thread(kinesis: Any, iterator: str) -> tuple[threading.Thread, dict[str, Any]]:
    outcome: dict[str, Any] = {}

    def read() -> None:
        try:
            outcome["records"] = kinesis.get_records(ShardIterator=iterator, Limit=10)["Records"]
        except Exception as error:  # what moto raises inside the read
            outcome["error"] = error

    reader = threading.Thread(target=read)
    reader.start()
    return reader, outcome


def test_unpatched_moto_5_2_5_fails_a_read_when_a_record_is_put_during_it(unpatched: None, kinesis: Any) -> None:
    name, records, iterator = stream_with_paused_reads(kinesis)
    reader, outcome = read_in_thread(kinesis, iterator)
    assert records.reading.wait(10)

    kinesis.put_record(StreamName=name, Data=b"3", PartitionKey="p")  # lands in the middle of the read
    records.proceed.set()
    reader.join(10)

    assert isinstance(outcome.get("error"), RuntimeError)
    assert "mutated during iteration" in str(outcome["error"])


def test_patched_a_record_put_during_a_read_waits_for_it(patched: None, kinesis: Any) -> None:
    name, records, iterator = stream_with_paused_reads(kinesis)
    reader, outcome = read_in_thread(kinesis, iterator)
    assert records.reading.wait(10)

    put: dict[str, Any] = {}
    writer = threading.Thread(
        target=lambda: put.update(kinesis.put_record(StreamName=name, Data=b"3", PartitionKey="p"))
    )
    writer.start()
    writer.join(0.2)
    assert writer.is_alive()  # held by the read: it cannot end while the read has the shard
    records.proceed.set()
    reader.join(10)
    writer.join(10)

    assert "error" not in outcome, outcome
    assert [r["Data"] for r in outcome["records"]] == [b"1", b"2"]
    assert int(put["SequenceNumber"]) > int(outcome["records"][-1]["SequenceNumber"])
