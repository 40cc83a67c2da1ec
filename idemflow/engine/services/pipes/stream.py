"""A pipe's Kinesis source: each shard read in order, a batch at a time, retried and then described on the
dead-letter destination, as EventBridge Pipes does (eb-pipes-kinesis; PipeSourceKinesisStreamParameters).

* Each shard is read from its starting position (``TRIM_HORIZON``: the oldest record kept; ``LATEST``: what is
  written after the pipe starts), in sequence order, one batch at a time: the next batch of a shard is read once
  the previous one is done (handed to the target, or dead-lettered). Batches of up to ``BatchSize`` records,
  waiting up to ``MaximumBatchingWindowInSeconds`` (scaled by the engine's ``wait_time_scale``) for a fuller one,
  and closed before the target's payload quota, as for a queue.
* A record is the flat Kinesis record of eb-pipes-kinesis ("Example event"): ``eventID`` is
  ``<shardId>:<sequenceNumber>``, ``data`` the record's bytes in base64. (Lambda's event nests the same fields
  under ``kinesis``; a pipe's does not.)
* A batch the target refuses (a ``FIRE_AND_FORGET`` start that fails: throttling, an input over the quota) is
  retried with a growing wait, up to ``MaximumRetryAttempts`` (-1: until the records expire), and records older
  than ``MaximumRecordAgeInSeconds`` are not retried; then the batch is described on ``DeadLetterConfig`` (the
  shard, the first and last sequence numbers: the records themselves stay in the stream) and the shard goes on.
  With -1 and no age limit a batch the target never takes blocks its shard, as on AWS.
* A stream that does not exist (yet, or any more) is polled until it does.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from idemflow.engine.services.base import ServiceContext
from idemflow.engine.services.pipes.models import POLL_INTERVAL, Pipe, PipeStats
from idemflow.engine.services.pipes.transform import compact_json, split_batches, transform

MAX_BACKOFF_SECONDS = 60.0
"""The longest wait between two attempts of a batch (before the engine's ``wait_time_scale``)."""


class StreamPoller:
    def __init__(self, context: ServiceContext, pipe: Pipe, stats: PipeStats, running: Callable[[Pipe], bool]) -> None:
        assert pipe.stream is not None
        self.context = context
        self.pipe = pipe
        self.settings = pipe.stream
        self.stats = stats
        self.running = running
        """Whether the pipe should read now (its desired state: StopPipe, StartPipe)."""
        self.name = pipe.source.rsplit("/", 1)[1]

    def poll(self, stopping: threading.Event) -> None:
        kinesis = self.context.client("kinesis")
        iterators: dict[str, str] = {}
        while not stopping.is_set():
            if not self.running(self.pipe):
                self.stats.stopped_polls += 1
                stopping.wait(POLL_INTERVAL)
                continue
            if not iterators:
                try:
                    iterators = self._iterators(kinesis)
                except ClientError as exc:
                    if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                        raise
                    self.stats.missing_source_polls += 1
                    stopping.wait(POLL_INTERVAL)
                    continue
            read = 0
            for shard_id in sorted(iterators):
                records, iterators[shard_id] = self._read(kinesis, iterators[shard_id], stopping)
                if records:
                    read += len(records)
                    self._forward(shard_id, records, stopping)
            if not read:
                stopping.wait(POLL_INTERVAL)

    def _iterators(self, kinesis: Any) -> dict[str, str]:
        shards = kinesis.list_shards(StreamName=self.name)["Shards"]
        return {
            shard["ShardId"]: kinesis.get_shard_iterator(
                StreamName=self.name, ShardId=shard["ShardId"], ShardIteratorType=self.settings.starting_position
            )["ShardIterator"]
            for shard in shards
        }

    def _read(self, kinesis: Any, iterator: str, stopping: threading.Event) -> tuple[list[dict[str, Any]], str]:
        """Up to a batch of one shard's records, waiting up to the batching window for a fuller one."""
        window_ends = time.monotonic() + self.pipe.batching_window * self.context.settings.wait_time_scale
        records: list[dict[str, Any]] = []
        while len(records) < self.pipe.batch_size and not stopping.is_set():
            answer = kinesis.get_records(ShardIterator=iterator, Limit=min(10_000, self.pipe.batch_size - len(records)))
            iterator = answer["NextShardIterator"]
            records.extend(answer.get("Records", []))
            if not records or time.monotonic() >= window_ends:
                break
            if not answer.get("Records"):
                stopping.wait(POLL_INTERVAL)
        return records, iterator

    def record(self, shard_id: str, record: dict[str, Any]) -> dict[str, Any]:
        """A Kinesis record as a pipe's Kinesis source passes it on (eb-pipes-kinesis, "Example event")."""
        arrival: datetime = record["ApproximateArrivalTimestamp"]
        return {
            "eventSource": "aws:kinesis",
            "eventVersion": "1.0",
            "eventID": f"{shard_id}:{record['SequenceNumber']}",
            "eventName": "aws:kinesis:record",
            "invokeIdentityArn": self.pipe.role_arn,
            "awsRegion": self.context.region,
            "eventSourceARN": self.pipe.source,
            "kinesisSchemaVersion": "1.0",
            "partitionKey": record["PartitionKey"],
            "sequenceNumber": record["SequenceNumber"],
            "data": base64.b64encode(record["Data"]).decode("ascii"),
            "approximateArrivalTimestamp": round(arrival.timestamp(), 3),
        }

    def _forward(self, shard_id: str, records: list[dict[str, Any]], stopping: threading.Event) -> None:
        events = [self.record(shard_id, r) for r in records]
        by_id = {e["eventID"]: e for e in events}
        batches = split_batches(
            [(e["eventID"], compact_json(transform(self.pipe.input_template, e, self.pipe))) for e in events]
        )
        for batch in batches:
            self._deliver(shard_id, [by_id[i] for i, _ in batch], [text for _, text in batch], stopping)
            if self.context.faults.take_batch_kept(self.pipe.name, self.pipe.logical_id):
                # An injected fault: the pipe stopped after the target took the batch and before it checkpointed,
                # so it hands the same records over again.
                self._deliver(shard_id, [by_id[i] for i, _ in batch], [text for _, text in batch], stopping)
        with self.stats.lock:
            self.stats.batches += len(batches)
            self.stats.records += len(records)

    def _deliver(
        self, shard_id: str, events: list[dict[str, Any]], texts: list[str], stopping: threading.Event
    ) -> None:
        """Hand one batch to the target until it takes it, or until the retries or the records' age run out."""
        sfn = self.context.client("stepfunctions")
        attempts = 0
        while not stopping.is_set():
            if self._expired(events):
                self._dead_letter(shard_id, events, "RecordAgeExceeded", attempts)
                return
            try:
                attempts += 1
                sfn.start_execution(stateMachineArn=self.pipe.target, input="[" + ",".join(texts) + "]")
                return
            except ClientError as exc:
                self.stats.last_failure = str(exc)
            retries = self.settings.maximum_retry_attempts
            if retries != -1 and attempts > retries:
                self._dead_letter(shard_id, events, "RetryAttemptsExhausted", attempts)
                return
            backoff = min(MAX_BACKOFF_SECONDS, 2.0 ** (attempts - 1))
            stopping.wait(backoff * self.context.settings.wait_time_scale)

    def _expired(self, events: list[dict[str, Any]]) -> bool:
        age = self.settings.maximum_record_age
        if age == -1:
            return False
        oldest = min(e["approximateArrivalTimestamp"] for e in events)
        return bool(time.time() - oldest >= age)  # arrival times are real time

    def _dead_letter(self, shard_id: str, events: list[dict[str, Any]], condition: str, attempts: int) -> None:
        """The batch described on the pipe's dead-letter queue (the records themselves stay in the stream)."""
        with self.stats.lock:
            self.stats.failed += len(events)
            self.stats.dead_lettered += len(events)
        arn = self.settings.dead_letter_arn
        if arn is None:
            return  # no destination: the batch is skipped
        first, last = events[0], events[-1]
        message = {
            "requestContext": {"condition": condition, "approximateInvokeCount": attempts},
            "KinesisBatchInfo": {
                "shardId": shard_id,
                "startSequenceNumber": first["sequenceNumber"],
                "endSequenceNumber": last["sequenceNumber"],
                "approximateArrivalOfFirstRecord": _iso(first["approximateArrivalTimestamp"]),
                "approximateArrivalOfLastRecord": _iso(last["approximateArrivalTimestamp"]),
                "batchSize": len(events),
                "streamArn": self.pipe.source,
            },
            "timestamp": _iso(time.time()),
            "version": "1.0",
        }
        sqs = self.context.client("sqs")
        url = sqs.get_queue_url(QueueName=arn.rsplit(":", 1)[1])["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps(message))


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
