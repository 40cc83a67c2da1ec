"""A pipe's stream source, a Kinesis stream or a DynamoDB table's stream: each shard read in order, a batch at a
time, retried and then described on the dead-letter destination, as EventBridge Pipes does (eb-pipes-kinesis,
eb-pipes-dynamodb; PipeSourceKinesisStreamParameters, PipeSourceDynamoDBStreamParameters).

* Each shard is read from its starting position (``TRIM_HORIZON``: the oldest record kept; ``LATEST``: what is
  written after the pipe starts), in sequence order, one batch at a time: the next batch of a shard is read once
  the previous one is done (handed to the target, or dead-lettered). Batches of up to ``BatchSize`` records,
  waiting up to ``MaximumBatchingWindowInSeconds`` (scaled by the engine's ``wait_time_scale``) for a fuller one,
  and closed before the target's payload quota, as for a queue.
* A Kinesis record is the flat record of eb-pipes-kinesis ("Example event"): ``eventID`` is
  ``<shardId>:<sequenceNumber>``, ``data`` the record's bytes in base64. (Lambda's event nests the same fields
  under ``kinesis``; a pipe's does not.) A DynamoDB record is the stream's record with its ``eventSourceARN``
  (eb-pipes-dynamodb, "Example event"): ``eventName`` INSERT, MODIFY or REMOVE, the images in ``dynamodb``.
* ``FilterCriteria``: a record that matches none of the patterns is skipped (eb-pipes-event-filtering); a
  Kinesis record's ``data`` is matched as its JSON.
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
from idemflow.engine.services.iam.service import Iam
from idemflow.engine.services.pipes import source_writes
from idemflow.engine.services.pipes.models import POLL_INTERVAL, Pipe, PipeStats
from idemflow.engine.services.pipes.role import target_denial
from idemflow.engine.services.pipes.transform import compact_json, parsed, split_batches, transform

MAX_BACKOFF_SECONDS = 60.0
"""The longest wait between two attempts of a batch (before the engine's ``wait_time_scale``)."""
SHARD_LIST_POLLS = 10
"""Polls between two listings of the stream's shards (about a second when idle)."""
SOURCE_GONE = frozenset({"ResourceNotFoundException", "ExpiredIteratorException", "TrimmedDataAccessException"})
"""The errors of a stream that is not there (any more), or of an iterator that must be made again."""


class _Kinesis:
    """A Kinesis data stream, read with the Kinesis API."""

    client_name = "kinesis"
    batch_info = "KinesisBatchInfo"

    def __init__(self, pipe: Pipe, region: str) -> None:
        self.pipe = pipe
        self.region = region
        self.name = pipe.source.rsplit("/", 1)[1]

    def shards(self, client: Any) -> list[str]:
        return [s["ShardId"] for s in client.list_shards(StreamName=self.name)["Shards"]]

    def iterator(self, client: Any, shard_id: str, position: str) -> str:
        found = client.get_shard_iterator(StreamName=self.name, ShardId=shard_id, ShardIteratorType=position)
        return str(found["ShardIterator"])

    def release(self, iterator: str) -> None:
        """Kinesis's iterators are not kept anywhere: nothing to release."""

    def record(self, shard_id: str, raw: dict[str, Any]) -> dict[str, Any]:
        """A Kinesis record as a pipe's Kinesis source passes it on (eb-pipes-kinesis, "Example event")."""
        arrival: datetime = raw["ApproximateArrivalTimestamp"]
        return {
            "eventSource": "aws:kinesis",
            "eventVersion": "1.0",
            "eventID": f"{shard_id}:{raw['SequenceNumber']}",
            "eventName": "aws:kinesis:record",
            "invokeIdentityArn": self.pipe.role_arn,
            "awsRegion": self.region,
            "eventSourceARN": self.pipe.source,
            "kinesisSchemaVersion": "1.0",
            "partitionKey": raw["PartitionKey"],
            "sequenceNumber": raw["SequenceNumber"],
            "data": base64.b64encode(raw["Data"]).decode("ascii"),
            "approximateArrivalTimestamp": round(arrival.timestamp(), 3),
        }

    @staticmethod
    def sequence(record: dict[str, Any]) -> str:
        return str(record["sequenceNumber"])

    @staticmethod
    def arrival(record: dict[str, Any]) -> float:
        return float(record["approximateArrivalTimestamp"])

    @staticmethod
    def filtered(record: dict[str, Any]) -> dict[str, Any]:
        """What a filter pattern is matched against: the record, its data as JSON when it is."""
        return {**record, "data": parsed(record, "data")}


class _DynamoDB:
    """A DynamoDB table's stream, read with the DynamoDB Streams API."""

    client_name = "dynamodbstreams"
    batch_info = "DDBStreamBatchInfo"

    def __init__(self, pipe: Pipe, region: str) -> None:
        self.pipe = pipe
        self.region = region

    def shards(self, client: Any) -> list[str]:
        described = client.describe_stream(StreamArn=self.pipe.source)["StreamDescription"]
        return [s["ShardId"] for s in described["Shards"]]

    def iterator(self, client: Any, shard_id: str, position: str) -> str:
        found = client.get_shard_iterator(StreamArn=self.pipe.source, ShardId=shard_id, ShardIteratorType=position)
        return str(found["ShardIterator"])

    def release(self, iterator: str) -> None:
        """moto's DynamoDB Streams keeps every iterator it hands out, for ever: a poller reading an idle stream
        would add some 40 a second. An iterator read once is dropped (AWS's expire after 15 minutes)."""
        from moto.core.models import DEFAULT_ACCOUNT_ID
        from moto.dynamodbstreams.models import dynamodbstreams_backends

        dynamodbstreams_backends[DEFAULT_ACCOUNT_ID][self.region].shard_iterators.pop(iterator, None)

    def record(self, shard_id: str, raw: dict[str, Any]) -> dict[str, Any]:
        """A stream record as a pipe's DynamoDB source passes it on (eb-pipes-dynamodb, "Example event"): the
        record with its stream's ARN. As AWS records it (LocalStack's AWS-validated
        test_lambda_integration_dynamodbstreams.snapshot.json): ``eventVersion`` "1.1" (moto writes "1.0"), and
        ``ApproximateCreationDateTime`` in epoch seconds, "rounded down to the closest second" (DynamoDB Streams
        API reference, StreamRecord; moto keeps its fraction)."""
        change = {k: _wire(v) for k, v in raw["dynamodb"].items()}
        created = raw["dynamodb"].get("ApproximateCreationDateTime")
        if isinstance(created, datetime):
            change["ApproximateCreationDateTime"] = float(int(created.timestamp()))
        return {**raw, "eventVersion": "1.1", "dynamodb": change, "eventSourceARN": self.pipe.source}

    @staticmethod
    def sequence(record: dict[str, Any]) -> str:
        return str(record["dynamodb"]["SequenceNumber"])

    @staticmethod
    def arrival(record: dict[str, Any]) -> float:
        return float(record["dynamodb"]["ApproximateCreationDateTime"])

    @staticmethod
    def filtered(record: dict[str, Any]) -> dict[str, Any]:
        return record


class StreamPoller:
    def __init__(self, context: ServiceContext, pipe: Pipe, stats: PipeStats, running: Callable[[Pipe], bool]) -> None:
        assert pipe.stream is not None
        self.context = context
        self.pipe = pipe
        self.settings = pipe.stream
        self.stats = stats
        self.running = running
        """Whether the pipe should read now (its desired state: StopPipe, StartPipe)."""
        kind = _DynamoDB if pipe.source_kind == "dynamodb" else _Kinesis
        self.source = kind(pipe, context.region)
        self.filters = [_pattern(p) for p in pipe.filters]

    def poll(self, stopping: threading.Event) -> None:
        client = self.context.client(self.source.client_name)
        iterators: dict[str, str] = {}
        closed: set[str] = set()
        polls = 0
        while not stopping.is_set():
            if not self.running(self.pipe):
                self.stats.stopped_polls += 1
                stopping.wait(POLL_INTERVAL)
                continue
            seen = source_writes.writes()  # before reading: a write while reading is not missed
            try:
                if not iterators or polls % SHARD_LIST_POLLS == 0:
                    # New shards (a reshard, a stream made after the pipe) are read from their start position.
                    position = self.settings.starting_position
                    for shard_id in self.source.shards(client):
                        if shard_id not in iterators and shard_id not in closed:
                            iterators[shard_id] = self.source.iterator(client, shard_id, position)
                polls += 1
                batches: list[tuple[str, list[dict[str, Any]]]] = []
                for shard_id in sorted(iterators):
                    records, following = self._read(client, iterators[shard_id], stopping)
                    if following is None:  # a closed shard, read to its end
                        del iterators[shard_id]
                        closed.add(shard_id)
                    else:
                        iterators[shard_id] = following
                    if records:
                        batches.append((shard_id, records))
            except (ClientError, KeyError) as exc:
                # The stream is gone (deleted, its table deleted or its stream disabled: moto fails a table without
                # a stream with a KeyError), or not there yet: poll until it is, from the start position again.
                if isinstance(exc, ClientError) and exc.response.get("Error", {}).get("Code") not in SOURCE_GONE:
                    raise
                self.stats.missing_source_polls += 1
                iterators.clear()
                closed.clear()
                stopping.wait(POLL_INTERVAL)
                continue
            for shard_id, records in batches:  # each shard's batch in turn, a shard's next once this one is done
                self._forward(shard_id, records, stopping)
            if not batches:
                source_writes.wait_for_write(seen)

    def _read(self, client: Any, iterator: str, stopping: threading.Event) -> tuple[list[dict[str, Any]], str | None]:
        """Up to a batch of one shard's records, waiting up to the batching window for a fuller one, and the
        shard's next iterator (None once a closed shard is read to its end)."""
        window_ends = time.monotonic() + self.pipe.batching_window * self.context.settings.wait_time_scale
        records: list[dict[str, Any]] = []
        following: str | None = iterator
        while following is not None and len(records) < self.pipe.batch_size and not stopping.is_set():
            answer = client.get_records(ShardIterator=following, Limit=min(1000, self.pipe.batch_size - len(records)))
            self.source.release(following)
            following = answer.get("NextShardIterator")
            records.extend(answer.get("Records", []))
            if not records or time.monotonic() >= window_ends:
                break
            if not answer.get("Records"):
                stopping.wait(POLL_INTERVAL)
        return records, following

    def record(self, shard_id: str, raw: dict[str, Any]) -> dict[str, Any]:
        return self.source.record(shard_id, raw)

    def _forward(self, shard_id: str, raw: list[dict[str, Any]], stopping: threading.Event) -> None:
        events = [self.source.record(shard_id, r) for r in raw]
        if self.filters:
            events = [e for e in events if any(f.matches_event(self.source.filtered(e)) for f in self.filters)]
        by_id = {e["eventID"]: e for e in events}
        batches = split_batches(
            [(e["eventID"], compact_json(transform(self.pipe.input_template, e, self.pipe))) for e in events]
        )
        with self.stats.lock:
            self.stats.filtered += len(raw) - len(events)
        for batch in batches if events else []:
            chosen, texts = [by_id[i] for i, _ in batch], [text for _, text in batch]
            self._deliver(shard_id, chosen, texts, stopping)
            if self.context.faults.take_batch_kept(self.pipe.name, self.pipe.logical_id):
                # An injected fault: the pipe stopped after the target took the batch and before it checkpointed,
                # so it hands the same records over again.
                self._deliver(shard_id, chosen, texts, stopping)

    def _deliver(
        self, shard_id: str, events: list[dict[str, Any]], texts: list[str], stopping: threading.Event
    ) -> None:
        """Hand one batch to the target until it takes it, or until the retries or the records' age run out."""
        sfn = self.context.client("stepfunctions")
        attempts = 0
        while not stopping.is_set():
            if attempts and not self.running(self.pipe):  # StopPipe during the retries: they wait for StartPipe
                stopping.wait(POLL_INTERVAL)
                continue
            if self._expired(events):
                self._dead_letter(shard_id, events, "RecordAgeExceeded", attempts)
                return
            attempts += 1
            denied = target_denial(self.pipe, self.context.service(Iam).decide)
            if denied is not None:  # a customer invocation error (.role): retried as any start the target refuses
                self.stats.last_failure = f"AccessDeniedException: {denied}"
            else:
                try:
                    sfn.start_execution(stateMachineArn=self.pipe.target, input="[" + ",".join(texts) + "]")
                    with self.stats.lock:
                        self.stats.batches += 1
                        self.stats.records += len(events)
                        self.stats.handed_over.extend(e["eventID"] for e in events)
                    return
                except ClientError as exc:
                    self.stats.last_failure = str(exc)
            retries = self.settings.maximum_retry_attempts
            if retries != -1 and attempts > retries:
                self._dead_letter(shard_id, events, "RetryAttemptsExhausted", attempts)
                return
            stopping.wait(retry_wait(attempts, self.context.settings.wait_time_scale))

    def _expired(self, events: list[dict[str, Any]]) -> bool:
        age = self.settings.maximum_record_age
        if age == -1:
            return False
        oldest = min(self.source.arrival(e) for e in events)
        # Arrival times are real time; the age is scaled as the engine's waits are, so that a test of it need
        # not wait real seconds.
        return bool(time.time() - oldest >= age * self.context.settings.wait_time_scale)

    def _dead_letter(self, shard_id: str, events: list[dict[str, Any]], condition: str, attempts: int) -> None:
        """The batch described on the pipe's dead-letter queue (the records themselves stay in the stream).

        What Pipes writes there is on no AWS record found (docs, issues, recorded tests): this is the on-failure
        record Lambda's stream event source mappings write (recorded: LocalStack's AWS-validated
        test_lambda_integration_kinesis.snapshot.json, ``test_kinesis_maximum_record_age_exceeded``:
        ``requestContext.condition`` ``RetryAttemptsExhausted`` or ``RecordAgeExceeded``, ``KinesisBatchInfo`` or
        ``DDBStreamBatchInfo``, ``timestamp``, ``version`` "1.0"), without its ``responseContext`` (a function's),
        which is what LocalStack's Pipes writes too."""
        with self.stats.lock:
            self.stats.failed += len(events)
            self.stats.dead_lettered += len(events)
        arn = self.settings.dead_letter_arn
        if arn is None:
            return  # no destination: the batch is skipped
        first, last = events[0], events[-1]
        message = {
            "requestContext": {"condition": condition, "approximateInvokeCount": attempts},
            self.source.batch_info: {
                "shardId": shard_id,
                "startSequenceNumber": self.source.sequence(first),
                "endSequenceNumber": self.source.sequence(last),
                "approximateArrivalOfFirstRecord": _iso(self.source.arrival(first)),
                "approximateArrivalOfLastRecord": _iso(self.source.arrival(last)),
                "batchSize": len(events),
                "streamArn": self.pipe.source,
            },
            "timestamp": _iso(time.time()),
            "version": "1.0",
        }
        sqs = self.context.client("sqs")
        url = sqs.get_queue_url(QueueName=arn.rsplit(":", 1)[1])["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps(message))


def retry_wait(attempts: int, scale: float) -> float:
    """Seconds before the next attempt of a batch after ``attempts`` failed ones: 1, 2, 4 ... up to a minute, scaled
    as the engine's waits are, and never a busy loop, even with waits scaled to nothing (-1 retries of a batch
    the target never takes). (The pipes pages give no backoff; this one is Lambda's for streams.)"""
    backoff = min(MAX_BACKOFF_SECONDS, 2.0 ** min(attempts - 1, 6))
    return max(POLL_INTERVAL, backoff * scale)


def _wire(value: Any) -> Any:
    """A value of a stream record as the API sends it: binary attributes (B, BS), which boto3 decodes to bytes,
    in base64."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: _wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value


def _pattern(text: str) -> Any:
    from moto.events.models import EventPattern

    return EventPattern.load(text)


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
