"""A pipe as the template declares it (AWS::Pipes::Pipe), and what its poller counts."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from idemflow.contract import MAX_STATE_PAYLOAD_BYTES
from idemflow.template import Resolver, TemplateError, cfn_string, integer, mapping

STREAM_PARAMETERS = ("KinesisStreamParameters", "DynamoDBStreamParameters")
"""The source parameters of a stream source (PipeSourceParameters)."""
PIPE_ARN = "arn:aws:pipes:{region}:{account}:pipe/{name}"
TARGET_PAYLOAD_QUOTA = MAX_STATE_PAYLOAD_BYTES
"""A Step Functions target's whole batch, in bytes of its JSON (eb-pipes-batching-concurrency: a target that
receives the whole batch is "constrained by the total payload size of the event, rather than the size of the
batch: Step Functions state machine (262144 characters)"; StartExecution counts its input in UTF-8 bytes)."""
POLL_INTERVAL = 0.02
"""Seconds between two polls of an empty queue (real time: the queue is moto's, in this process)."""


@dataclass(frozen=True)
class StreamSettings:
    """A stream source's own parameters (PipeSourceKinesisStreamParameters)."""

    starting_position: str
    maximum_retry_attempts: int
    """-1: retried until the records expire."""
    maximum_record_age: int
    """Seconds; -1: no limit."""
    dead_letter_arn: str | None


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
    stream: StreamSettings | None = None
    """A Kinesis source's settings; None for a queue."""
    role_arn: str = ""
    """The pipe's execution role (``RoleArn``): a stream record's ``invokeIdentityArn``."""
    filters: tuple[str, ...] = ()
    """``SourceParameters.FilterCriteria``: the patterns (JSON) a record must match one of."""

    @property
    def source_kind(self) -> str:
        for kind in ("kinesis", "dynamodb", "sqs"):
            if self.source.startswith(f"arn:aws:{kind}:"):
                return kind
        return "unknown"


def stream_settings(parameters: dict[str, Any], where: str) -> StreamSettings:
    if "StartingPosition" not in parameters:
        raise TemplateError(f"{where}.StartingPosition: required (TRIM_HORIZON, LATEST or AT_TIMESTAMP)")
    position = cfn_string(parameters["StartingPosition"], f"{where}.StartingPosition")
    if position not in ("TRIM_HORIZON", "LATEST"):
        raise TemplateError(f"{where}.StartingPosition: {position!r} is not served locally (TRIM_HORIZON, LATEST)")
    retries = integer(parameters.get("MaximumRetryAttempts", -1), f"{where}.MaximumRetryAttempts")
    age = integer(parameters.get("MaximumRecordAgeInSeconds", -1), f"{where}.MaximumRecordAgeInSeconds")
    # PipeSourceKinesisStreamParameters (Pipes API reference): MaximumRetryAttempts and MaximumRecordAgeInSeconds
    # have a "Valid Range" of -1 to 10000 and -1 to 604800, -1 the default ("infinite"); CloudFormation fails the
    # pipe's creation with anything else.
    if not -1 <= retries <= 10_000:
        raise TemplateError(f"{where}.MaximumRetryAttempts: {retries} is not -1 to 10000")
    if not -1 <= age <= 604_800:
        raise TemplateError(f"{where}.MaximumRecordAgeInSeconds: {age} is not -1 to 604800")
    dead_letter = mapping(parameters.get("DeadLetterConfig", {}), f"{where}.DeadLetterConfig")
    arn = dead_letter.get("Arn")
    if arn is not None and not cfn_string(arn, f"{where}.DeadLetterConfig.Arn").startswith("arn:aws:sqs:"):
        # DeadLetterConfig: "For Amazon Kinesis stream and Amazon DynamoDB stream sources, specify either an Amazon
        # SNS topic or Amazon SQS queue ARN." The engine delivers to a queue.
        raise TemplateError(f"{where}.DeadLetterConfig.Arn: only an SQS queue is served locally, got {arn}")
    return StreamSettings(
        starting_position=position,
        maximum_retry_attempts=retries,
        maximum_record_age=age,
        dead_letter_arn=None if arn is None else cfn_string(arn, f"{where}.DeadLetterConfig.Arn"),
    )


def read_pipe(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Pipe:
    source_params = mapping(r.setting(props, "SourceParameters", where, {}), f"{where}.SourceParameters")
    stream_key = next((k for k in STREAM_PARAMETERS if k in source_params), None)
    stream = None if stream_key is None else source_params[stream_key]
    # The batching settings are the source's: SqsQueueParameters, or the stream's (STREAM_PARAMETERS).
    batching = mapping(source_params.get("SqsQueueParameters", stream or {}), f"{where}.SourceParameters")
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
        # eb-pipes-sqs: "By default, EventBridge polls up to 10 messages"; no batching window by default. For a
        # stream source the Pipes API reference gives no default: 100 is Lambda's for streams (the template's
        # pipes always set it).
        batch_size=integer(
            batching.get("BatchSize", 10 if stream is None else 100), f"{where}.SourceParameters.BatchSize"
        ),
        batching_window=integer(batching.get("MaximumBatchingWindowInSeconds", 0), f"{where}.SourceParameters"),
        input_template=None if template is None else cfn_string(template, f"{where}.TargetParameters.InputTemplate"),
        # PipeTargetStateMachineParameters.InvocationType: REQUEST_RESPONSE unless said otherwise.
        invocation_type=cfn_string(sfn.get("InvocationType", "REQUEST_RESPONSE"), f"{where}.TargetParameters"),
        running=cfn_string(r.setting(props, "DesiredState", where, "RUNNING"), f"{where}.DesiredState") == "RUNNING",
        stream=None
        if stream is None
        else stream_settings(mapping(stream, where), f"{where}.SourceParameters.{stream_key}"),
        role_arn=cfn_string(r.setting(props, "RoleArn", where, ""), f"{where}.RoleArn"),
        filters=_filters(source_params.get("FilterCriteria"), f"{where}.SourceParameters.FilterCriteria"),
    )


def _filters(criteria: Any, where: str) -> tuple[str, ...]:
    if criteria is None:
        return ()
    filters = mapping(criteria, where).get("Filters", [])
    if not isinstance(filters, list):
        raise TemplateError(f"{where}.Filters: a list of {{Pattern: <JSON>}}")
    patterns = []
    for i, item in enumerate(filters):
        pattern = cfn_string(mapping(item, f"{where}.Filters[{i}]").get("Pattern"), f"{where}.Filters[{i}].Pattern")
        try:
            json.loads(pattern)
        except ValueError as exc:
            raise TemplateError(f"{where}.Filters[{i}].Pattern: not JSON ({exc})") from None
        patterns.append(pattern)
    return tuple(patterns)


@dataclass
class PipeStats:
    """What a pipe did, for tests and operators: batches sent to the target, records in them, records left on
    the queue because the target failed them."""

    batches: int = 0
    records: int = 0
    failed: int = 0
    handed_over: list[str] = field(default_factory=list)
    """A stream source's record ids, in the order the pipe handed them to the target."""
    filtered: int = 0
    """Records a stream source's pipe skipped: they matched none of its FilterCriteria."""
    dead_lettered: int = 0
    """Records a stream source's pipe described on its dead-letter queue (retries or age exhausted)."""
    stopped_polls: int = 0
    """Polls skipped because the pipe was stopped."""
    missing_source_polls: int = 0
    """Polls that found no source queue (deleted)."""
    last_failure: str = ""
    """Why the target last failed a whole batch (an error, or the execution's status)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
