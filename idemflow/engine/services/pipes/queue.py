"""A pipe's SQS source: it receives batches, hands them to the target, and deletes what the target took."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from idemflow.engine.services.base import ServiceContext
from idemflow.engine.services.iam.service import Iam
from idemflow.engine.services.pipes import source_writes
from idemflow.engine.services.pipes.models import POLL_INTERVAL, Pipe, PipeStats
from idemflow.engine.services.pipes.role import target_denial
from idemflow.engine.services.pipes.transform import compact_json, split_batches, transform


class QueuePoller:
    def __init__(self, context: ServiceContext, pipe: Pipe, stats: PipeStats, running: Callable[[Pipe], bool]) -> None:
        self.context = context
        self.pipe = pipe
        self.stats = stats
        self.running = running
        """Whether the pipe should read now (its desired state: StopPipe, StartPipe)."""

    def poll(self, stopping: threading.Event) -> None:
        pipe = self.pipe
        sqs = self.context.client("sqs")
        url = sqs.get_queue_url(QueueName=pipe.source.rsplit(":", 1)[1])["QueueUrl"]
        while not stopping.is_set():
            if not self.running(pipe):  # stopped (StopPipe, or DesiredState STOPPED): nothing is read
                self.stats.stopped_polls += 1
                stopping.wait(POLL_INTERVAL)
                continue
            seen = source_writes.writes()  # before reading: a write while reading is not missed
            try:
                messages = self._receive(sqs, url, stopping)
            except ClientError as exc:
                # The source queue deleted (an operator's mistake, or a rehearsal): what Pipes does then is on no
                # AWS record here; the engine's pipe reads nothing and polls on until the queue is there again.
                if exc.response.get("Error", {}).get("Code") != "AWS.SimpleQueueService.NonExistentQueue":
                    raise
                self.stats.missing_source_polls += 1
                stopping.wait(POLL_INTERVAL)
                continue
            if not messages:
                source_writes.wait_for_write(seen)
                continue
            batches = split_batches(
                [(m["MessageId"], compact_json(transform(pipe.input_template, self.record(m), pipe))) for m in messages]
            )
            failed: set[str] = set()
            for batch in batches:
                failed |= self._deliver(batch)
            done = [m for m in messages if m["MessageId"] not in failed]
            if self.context.faults.take_batch_kept(pipe.name, pipe.logical_id):
                done = []  # an injected fault: the pipe stopped before the delete
            for start in range(0, len(done), 10):  # DeleteMessageBatch takes at most 10 entries
                entries = [
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done[start : start + 10])
                ]
                sqs.delete_message_batch(QueueUrl=url, Entries=entries)
            with self.stats.lock:
                self.stats.batches += len(batches)
                self.stats.records += len(messages)
                self.stats.failed += len(failed)

    def _receive(self, sqs: Any, url: str, stopping: threading.Event) -> list[dict[str, Any]]:
        pipe = self.pipe
        window_ends = time.monotonic() + pipe.batching_window * self.context.settings.wait_time_scale
        messages: list[dict[str, Any]] = []
        while len(messages) < pipe.batch_size and not stopping.is_set():
            answer = sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=min(10, pipe.batch_size - len(messages)),
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            messages.extend(answer.get("Messages", []))
            if not messages or time.monotonic() >= window_ends:
                break
            if not answer.get("Messages"):
                stopping.wait(POLL_INTERVAL)
        return messages

    def record(self, message: dict[str, Any]) -> dict[str, Any]:
        """An SQS message as a pipe's SQS source passes it on (eb-pipes-sqs, "Example event")."""
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": {
                name: {k[0].lower() + k[1:]: v for k, v in value.items()}
                for name, value in message.get("MessageAttributes", {}).items()
            },
            "md5OfBody": message.get("MD5OfBody", ""),
            "eventSource": "aws:sqs",
            "eventSourceARN": self.pipe.source,
            "awsRegion": self.context.region,
        }

    def _deliver(self, batch: list[tuple[str, str]]) -> set[str]:
        """Send one batch to the target; the message ids the target failed (all of them when it failed)."""
        pipe = self.pipe
        everything = {message_id for message_id, _ in batch}
        payload = "[" + ",".join(text for _, text in batch) + "]"  # the JSON array of the records sized
        denied = target_denial(pipe, self.context.service(Iam).decide)
        if denied is not None:  # a customer invocation error (.role): the batch stays on the queue
            self.stats.last_failure = f"AccessDeniedException: {denied}"
            return everything
        sfn = self.context.client("stepfunctions")
        try:
            if pipe.invocation_type == "FIRE_AND_FORGET":
                # Pipes do not name the execution: Step Functions makes up a name.
                sfn.start_execution(stateMachineArn=pipe.target, input=payload)
                return set()
            answer = sfn.start_sync_execution(stateMachineArn=pipe.target, input=payload)
        except ClientError as exc:  # the target refused the batch: every record comes back
            self.stats.last_failure = str(exc)
            return everything
        if answer.get("status") != "SUCCEEDED":
            self.stats.last_failure = f"{answer.get('status')}: {answer.get('error')} {answer.get('cause')}"
            return everything
        output = json.loads(answer.get("output") or "null")
        if isinstance(output, dict) and isinstance(output.get("batchItemFailures"), list):
            return {str(f.get("itemIdentifier")) for f in output["batchItemFailures"] if isinstance(f, dict)}
        return set()
