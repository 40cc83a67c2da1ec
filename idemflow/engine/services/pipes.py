"""EventBridge Pipes: a pipe from an SQS queue to a state machine, its poller run by the engine's background
owner. What a pipe does is EventBridge's (user guide pages cited where each applies):

* it polls the queue for batches of up to ``BatchSize`` records, waiting up to ``MaximumBatchingWindowInSeconds``
  for a fuller one (eb-pipes-sqs; the window is scaled by the engine's ``wait_time_scale``), and sends a batch
  before "the invocation payload size quota is reached" (eb-pipes-sqs): a Step Functions target's whole batch
  is at most 262,144 (eb-pipes-batching-concurrency), so the records received are sent as consecutive batches
  that each fit, and a record that alone does not is refused by the target and stays on the queue;
* each record has the SQS source's shape (eb-pipes-sqs) and goes through the target's ``InputTemplate`` one by
  one (eb-pipes-input-transformation, eb-pipes-batching-concurrency);
* a Step Functions target receives the whole batch as one JSON array, even a batch of one
  (eb-pipes-batching-concurrency); ``FIRE_AND_FORGET`` starts an execution (StartExecution), ``REQUEST_RESPONSE``
  runs an Express workflow (StartSyncExecution) and is refused for a Standard one (PipeTargetStateMachineParameters);
* a batch is deleted from the queue when the target took it; a failed batch is left, and comes back when its
  visibility timeout ends, until the queue's redrive policy moves it to the dead-letter queue; a synchronous
  target's ``{"batchItemFailures": [{"itemIdentifier": <messageId>}]}`` leaves only those records
  (eb-pipes-batching-concurrency, partial batch failure);
* the pipe is in moto's Pipes backend as CloudFormation made it: ``ListPipes`` and ``DescribePipe`` answer for
  it, and after ``StopPipe`` its poller reads nothing until ``StartPipe`` (Amazon EventBridge Pipes API
  reference); a template's ``DesiredState: STOPPED`` starts it stopped.
"""

from __future__ import annotations

import functools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from idemflow.contract import MAX_STATE_PAYLOAD_BYTES
from idemflow.engine.services.base import Service
from idemflow.engine.services.iam import Iam
from idemflow.engine.services.stepfunctions import StateMachine
from idemflow.template import Resolver, ResourceType, Stack, TemplateError, cfn_string, integer, mapping

PIPE_ARN = "arn:aws:pipes:{region}:{account}:pipe/{name}"
TARGET_PAYLOAD_QUOTA = MAX_STATE_PAYLOAD_BYTES
"""A Step Functions target's whole batch, in bytes of its JSON (eb-pipes-batching-concurrency: a target that
receives the whole batch is "constrained by the total payload size of the event, rather than the size of the
batch: Step Functions state machine (262144 characters)"; StartExecution counts its input in UTF-8 bytes)."""
POLL_INTERVAL = 0.02
"""Seconds between two polls of an empty queue (real time: the queue is moto's, in this process)."""


@dataclass(frozen=True)
class Pipe:
    logical_id: str
    name: str
    arn: str
    source: str
    target: str
    batch_size: int
    batching_window: int
    input_template: str | None
    invocation_type: str
    running: bool


def read_pipe(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Pipe:
    source_params = mapping(r.setting(props, "SourceParameters", where, {}), f"{where}.SourceParameters")
    sqs = mapping(source_params.get("SqsQueueParameters", {}), f"{where}.SourceParameters.SqsQueueParameters")
    target_params = mapping(r.setting(props, "TargetParameters", where, {}), f"{where}.TargetParameters")
    sfn = mapping(
        target_params.get("StepFunctionStateMachineParameters", {}),
        f"{where}.TargetParameters.StepFunctionStateMachineParameters",
    )
    template = target_params.get("InputTemplate")
    return Pipe(
        logical_id=lid,
        name=r.name(lid),
        arn=r.arn(lid),
        source=cfn_string(r.setting(props, "Source", where), f"{where}.Source"),
        target=cfn_string(r.setting(props, "Target", where), f"{where}.Target"),
        # eb-pipes-sqs: "By default, EventBridge polls up to 10 messages"; no batching window by default.
        batch_size=integer(sqs.get("BatchSize", 10), f"{where}.SourceParameters.SqsQueueParameters.BatchSize"),
        batching_window=integer(sqs.get("MaximumBatchingWindowInSeconds", 0), f"{where}.SourceParameters"),
        input_template=None if template is None else cfn_string(template, f"{where}.TargetParameters.InputTemplate"),
        # PipeTargetStateMachineParameters.InvocationType: REQUEST_RESPONSE unless said otherwise.
        invocation_type=cfn_string(sfn.get("InvocationType", "REQUEST_RESPONSE"), f"{where}.TargetParameters"),
        running=cfn_string(r.setting(props, "DesiredState", where, "RUNNING"), f"{where}.DesiredState") == "RUNNING",
    )


@dataclass
class PipeStats:
    """What a pipe did, for tests and operators: batches sent to the target, records in them, records left on
    the queue because the target failed them."""

    batches: int = 0
    records: int = 0
    failed: int = 0
    stopped_polls: int = 0
    """Polls skipped because the pipe was stopped."""
    missing_source_polls: int = 0
    """Polls that found no source queue (deleted)."""
    last_failure: str = ""
    """Why the target last failed a whole batch (an error, or the execution's status)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class Pipes(Service):
    name = "pipes"
    resource_types = (ResourceType("AWS::Pipes::Pipe", read_pipe, name_property="Name", arn=PIPE_ARN),)
    moto_backends = ("pipes",)

    def open(self) -> None:
        self.pipes: list[Pipe] = []
        self.stats: dict[str, PipeStats] = {}

    def deploy(self, stack: Stack) -> None:
        machines = {m.arn: m for m in stack.all_models(StateMachine)}
        for _, s in stack.stacks():
            for pipe in s.models(Pipe).values():
                where = f"Resources.{pipe.logical_id}"
                if not pipe.source.startswith("arn:aws:sqs:"):
                    raise TemplateError(f"{where}.Source: only an SQS queue is served locally as a pipe's source")
                machine = machines.get(pipe.target)
                if machine is None:
                    raise TemplateError(f"{where}.Target: only a state machine of the template is served locally")
                if pipe.invocation_type == "REQUEST_RESPONSE" and machine.type != "EXPRESS":
                    # PipeTargetStateMachineParameters: REQUEST_RESPONSE is not supported for STANDARD workflows.
                    raise TemplateError(
                        f"{where}.TargetParameters.StepFunctionStateMachineParameters.InvocationType: "
                        "REQUEST_RESPONSE is not supported for a STANDARD state machine (use FIRE_AND_FORGET)"
                    )
                self.pipes.append(pipe)
                self.stats[pipe.name] = PipeStats()
                self._register(pipe)

    def _register(self, pipe: Pipe) -> None:
        """The pipe in moto's Pipes backend, as CloudFormation creates it: ListPipes, DescribePipe, StopPipe and
        StartPipe answer for it (Amazon EventBridge Pipes API reference), and its poller follows its desired
        state."""
        sqs_parameters = {"BatchSize": pipe.batch_size, "MaximumBatchingWindowInSeconds": pipe.batching_window}
        target_parameters: dict[str, Any] = {
            "StepFunctionStateMachineParameters": {"InvocationType": pipe.invocation_type}
        }
        if pipe.input_template is not None:
            target_parameters["InputTemplate"] = pipe.input_template
        self.context.client("pipes").create_pipe(
            Name=pipe.name,
            Source=pipe.source,
            Target=pipe.target,
            RoleArn=self.context.service(Iam).role_arn,
            DesiredState="RUNNING" if pipe.running else "STOPPED",
            SourceParameters={"SqsQueueParameters": sqs_parameters},
            TargetParameters=target_parameters,
        )

    def _desired_running(self, pipe: Pipe) -> bool:
        """Whether the pipe should poll now: its desired state in moto's backend (StopPipe, StartPipe)."""
        from moto.core.models import DEFAULT_ACCOUNT_ID
        from moto.pipes.models import pipes_backends

        found = pipes_backends[DEFAULT_ACCOUNT_ID][self.context.region].pipes.get(pipe.name)
        return found is not None and found.desired_state == "RUNNING"

    def start(self) -> None:
        for pipe in self.pipes:  # a stopped pipe's poller waits for StartPipe
            self.context.background.start(f"pipe-{pipe.name}", functools.partial(self._poll, pipe))

    # -- the poller ---------------------------------------------------------------------------------------
    def _poll(self, pipe: Pipe, stopping: threading.Event) -> None:
        sqs = self.context.client("sqs")
        url = sqs.get_queue_url(QueueName=pipe.source.rsplit(":", 1)[1])["QueueUrl"]
        while not stopping.is_set():
            if not self._desired_running(pipe):  # stopped (StopPipe, or DesiredState STOPPED): nothing is read
                self.stats[pipe.name].stopped_polls += 1
                stopping.wait(POLL_INTERVAL)
                continue
            try:
                messages = self._receive(sqs, url, pipe, stopping)
            except ClientError as exc:
                # The source queue deleted (an operator's mistake, or a rehearsal): what Pipes does then is on no
                # AWS record here; the engine's pipe reads nothing and polls on until the queue is there again.
                if exc.response.get("Error", {}).get("Code") != "AWS.SimpleQueueService.NonExistentQueue":
                    raise
                self.stats[pipe.name].missing_source_polls += 1
                stopping.wait(POLL_INTERVAL)
                continue
            if not messages:
                stopping.wait(POLL_INTERVAL)
                continue
            batches = self._batches(pipe, messages)
            failed: set[str] = set()
            for batch in batches:
                failed |= self._deliver(pipe, batch)
            done = [m for m in messages if m["MessageId"] not in failed]
            if self.context.faults.take_batch_kept(pipe.name, pipe.logical_id):
                done = []  # an injected fault: the pipe stopped before the delete
            for start in range(0, len(done), 10):  # DeleteMessageBatch takes at most 10 entries
                entries = [
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done[start : start + 10])
                ]
                sqs.delete_message_batch(QueueUrl=url, Entries=entries)
            stats = self.stats[pipe.name]
            with stats.lock:
                stats.batches += len(batches)
                stats.records += len(messages)
                stats.failed += len(failed)

    def _receive(self, sqs: Any, url: str, pipe: Pipe, stopping: threading.Event) -> list[dict[str, Any]]:
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

    def record(self, pipe: Pipe, message: dict[str, Any]) -> dict[str, Any]:
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
            "eventSourceARN": pipe.source,
            "awsRegion": self.context.region,
        }

    def _batches(self, pipe: Pipe, messages: list[dict[str, Any]]) -> list[list[tuple[str, str]]]:
        """The received messages as the target's batches: (message id, transformed record's JSON) in order, a
        batch closed before it would pass the target's payload quota (a record alone over it is a batch of its
        own, which the target refuses: it stays on the queue)."""
        batches: list[list[tuple[str, str]]] = [[]]
        size = 2  # the array's brackets
        for message in messages:
            text = _json(transform(pipe.input_template, self.record(pipe, message), pipe))
            item_size = len(text.encode("utf-8")) + 1  # and its comma
            if batches[-1] and size + item_size > TARGET_PAYLOAD_QUOTA:
                batches.append([])
                size = 2
            batches[-1].append((message["MessageId"], text))
            size += item_size
        return batches

    def _deliver(self, pipe: Pipe, batch: list[tuple[str, str]]) -> set[str]:
        """Send one batch to the target; the message ids the target failed (all of them when it failed)."""
        everything = {message_id for message_id, _ in batch}
        payload = "[" + ",".join(text for _, text in batch) + "]"  # the JSON array of the records measured
        sfn = self.context.client("stepfunctions")
        try:
            if pipe.invocation_type == "FIRE_AND_FORGET":
                # Pipes do not name the execution: Step Functions makes up a name.
                sfn.start_execution(stateMachineArn=pipe.target, input=payload)
                return set()
            answer = sfn.start_sync_execution(stateMachineArn=pipe.target, input=payload)
        except ClientError as exc:  # the target refused the batch: every record comes back
            self.stats[pipe.name].last_failure = str(exc)
            return everything
        if answer.get("status") != "SUCCEEDED":
            self.stats[pipe.name].last_failure = f"{answer.get('status')}: {answer.get('error')} {answer.get('cause')}"
            return everything
        output = json.loads(answer.get("output") or "null")
        if isinstance(output, dict) and isinstance(output.get("batchItemFailures"), list):
            return {str(f.get("itemIdentifier")) for f in output["batchItemFailures"] if isinstance(f, dict)}
        return set()


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


_PLACEHOLDER = re.compile(r"<(\$(?:\.[\w\-/*]+|\[\d+\])*|aws\.pipes\.[\w.\-]+)>")


def transform(template: str | None, record: dict[str, Any], pipe: Pipe) -> Any:
    """A record through an ``InputTemplate`` (eb-pipes-input-transformation): ``<$.path>`` is the value at that
    JSON path, ``<aws.pipes.*>`` a reserved variable; inside quotes a value is written as text, outside as JSON.
    A JSON body is parsed, so ``<$.body.field>`` reaches into it (the page's "Implicit body data parsing")."""
    if template is None:
        return record
    reserved = {
        "aws.pipes.pipe-arn": pipe.arn,
        "aws.pipes.pipe-name": pipe.name,
        "aws.pipes.source-arn": pipe.source,
        "aws.pipes.target-arn": pipe.target,
        "aws.pipes.event.ingestion-time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "aws.pipes.event.json": record,
    }
    out: list[str] = []
    position = 0
    for match in _PLACEHOLDER.finditer(template):
        before = template[position : match.start()]
        out.append(before)
        quoted = "".join(out).count('"') % 2 == 1
        name = match.group(1)
        value = reserved[name] if name in reserved else _lookup(record, name)
        if quoted:
            out.append(json.dumps(value)[1:-1] if isinstance(value, str) else json.dumps(value).replace('"', '\\"'))
        else:
            out.append(json.dumps(value))
        position = match.end()
    out.append(template[position:])
    text = "".join(out)
    try:
        return json.loads(text)
    except ValueError:
        return text  # free text (a "Static string" or "Dynamic string" template) stays text


def _lookup(record: dict[str, Any], path: str) -> Any:
    value: Any = record
    for part in re.findall(r"\.([\w\-/*]+)|\[(\d+)\]", path):
        key, index = part
        if value is record and key == "body" and isinstance(record.get("body"), str):
            try:
                value = json.loads(record["body"])
                continue
            except ValueError:
                value = record["body"]
                continue
        if isinstance(value, dict) and key:
            value = value.get(key)
        elif isinstance(value, list) and index:
            value = value[int(index)] if int(index) < len(value) else None
        else:
            return None
    return value
