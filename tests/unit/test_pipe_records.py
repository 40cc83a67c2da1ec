"""What a pipe with a Kinesis source passes to its target's input template, record by record.

Sources: the EventBridge User Guide, "Amazon Kinesis stream as a source" (eb-pipes-kinesis, "Example event": a
flat record, ``eventID`` ``<shardId>:<sequenceNumber>``, ``data`` base64; Lambda's event nests the same fields
under ``kinesis``, a pipe's does not) and "Amazon EventBridge Pipes input transformation"
(eb-pipes-input-transformation, "Implicit body data parsing": a Kinesis record's ``data`` is parsed when it is
JSON, as an SQS message's ``body`` is; "if the payload is not valid JSON, EventBridge base64-encodes" it).
"""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from idemflow.engine.services.pipes.models import POLL_INTERVAL, Pipe, PipeStats, StreamSettings, stream_settings
from idemflow.engine.services.pipes.stream import StreamPoller, retry_wait
from idemflow.engine.services.pipes.transform import transform
from idemflow.template import TemplateError

pytestmark = pytest.mark.unit

STREAM = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
PIPE = Pipe(
    logical_id="StreamPipe",
    name="idemflow-StreamPipe",
    arn="arn:aws:pipes:us-east-1:123456789012:pipe/idemflow-StreamPipe",
    source=STREAM,
    target="arn:aws:states:us-east-1:123456789012:stateMachine:intake",
    batch_size=10,
    batching_window=0,
    input_template='{"door": "kinesis", "sourceId": <$.eventID>, "payload": <$.data>}',
    invocation_type="FIRE_AND_FORGET",
    running=True,
    stream=StreamSettings("TRIM_HORIZON", 2, -1, None),
    role_arn="arn:aws:iam::123456789012:role/pipe",
)


class _Context:
    region = "us-east-1"


RAW = {  # a record as Kinesis's GetRecords gives it (boto3 decodes Data)
    "SequenceNumber": "49590338271490256608559692538361571095921575989136588898",
    "ApproximateArrivalTimestamp": datetime(2018, 12, 17, 22, 10, 50, 987000, tzinfo=UTC),
    "Data": b"",
    "PartitionKey": "1",
}


def record(data: bytes) -> dict[str, Any]:
    poller = StreamPoller(_Context(), PIPE, PipeStats(), lambda _: True)  # type: ignore[arg-type]
    return poller.record("shardId-000000000006", {**RAW, "Data": data})


def test_a_kinesis_record_is_passed_on_flat_as_the_example_event_shows() -> None:
    got = record(b"Hello, this is a test.")

    assert got == {
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": "shardId-000000000006:49590338271490256608559692538361571095921575989136588898",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": PIPE.role_arn,
        "awsRegion": "us-east-1",
        "eventSourceARN": STREAM,
        "kinesisSchemaVersion": "1.0",
        "partitionKey": "1",
        "sequenceNumber": "49590338271490256608559692538361571095921575989136588898",
        "data": "SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg==",  # the example event's own data
        "approximateArrivalTimestamp": 1545084650.987,
    }


def test_json_data_is_parsed_for_the_input_template() -> None:
    got = transform(PIPE.input_template, record(json.dumps({"orderId": "o-1", "amount": 5}).encode()), PIPE)
    assert got["payload"] == {"orderId": "o-1", "amount": 5}
    assert got["sourceId"].startswith("shardId-000000000006:")


@pytest.mark.parametrize("data", [b"Hello, this is a test.", b"\xff\xfe not text"], ids=["text", "bytes"])
def test_data_that_is_not_json_is_passed_on_as_it_came(data: bytes) -> None:
    got = transform(PIPE.input_template, record(data), PIPE)
    assert got["payload"] == base64.b64encode(data).decode()


@pytest.mark.parametrize(
    ("parameters", "refused"),
    [
        ({"MaximumRetryAttempts": 10_001}, "MaximumRetryAttempts: 10001 is not -1 to 10000"),
        ({"MaximumRetryAttempts": -2}, "MaximumRetryAttempts: -2 is not -1 to 10000"),
        ({"MaximumRecordAgeInSeconds": 604_801}, "MaximumRecordAgeInSeconds: 604801 is not -1 to 604800"),
        ({"StartingPosition": None}, "StartingPosition: required"),
        ({"StartingPosition": "AT_TIMESTAMP"}, "is not served locally"),
    ],
)
def test_a_stream_sources_settings_outside_the_api_references_ranges_are_refused(
    parameters: dict[str, Any], refused: str
) -> None:
    # Pipes API reference, PipeSourceKinesisStreamParameters: "Valid Range: Minimum value of -1. Maximum value
    # of 10000" (MaximumRetryAttempts) and "of 604800" (MaximumRecordAgeInSeconds); StartingPosition "Required".
    settings = {"StartingPosition": "LATEST", **parameters}
    if settings["StartingPosition"] is None:
        del settings["StartingPosition"]
    with pytest.raises(TemplateError, match=refused):
        stream_settings(settings, "Resources.StreamPipe")
    edges = stream_settings({"StartingPosition": "LATEST", "MaximumRetryAttempts": 10_000}, "w")
    assert (edges.maximum_retry_attempts, edges.maximum_record_age) == (10_000, -1)
    assert stream_settings({"StartingPosition": "TRIM_HORIZON", "MaximumRecordAgeInSeconds": 0}, "w")


DYNAMODB_PIPE = replace(
    PIPE,
    logical_id="TableStreamPipe",
    name="idemflow-TableStreamPipe",
    arn="arn:aws:pipes:us-east-1:123456789012:pipe/idemflow-TableStreamPipe",
    source="arn:aws:dynamodb:us-east-1:123456789012:table/outbox/stream/2000-01-01T00:00:00.000",
    input_template='{"door": "dynamodb", "sourceId": <$.eventID>, "payload": <$.dynamodb.NewImage>}',
)


def test_a_dynamodb_stream_record_is_passed_on_as_aws_records_it() -> None:
    # As recorded on AWS (LocalStack's AWS-validated test_lambda_integration_dynamodbstreams.snapshot.json,
    # test_dynamodb_event_source_mapping): eventVersion "1.1", ApproximateCreationDateTime in epoch seconds
    # ("rounded down to the closest second": DynamoDB Streams API reference, StreamRecord), the stream's ARN.
    poller = StreamPoller(_Context(), DYNAMODB_PIPE, PipeStats(), lambda _: True)  # type: ignore[arg-type]
    raw = {  # what moto's GetRecords gives
        "eventID": "ae7d20508753427caf0ee20aeaad6ba7",
        "eventName": "INSERT",
        "eventVersion": "1.0",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": {
            "ApproximateCreationDateTime": datetime(2026, 11, 26, 18, 55, 1, 987000, tzinfo=UTC),
            "Keys": {"requestId": {"S": "r-1"}},
            "NewImage": {"requestId": {"S": "r-1"}, "to": {"S": "ada@example.com"}},
            "SequenceNumber": "1100000000017454423009",
            "SizeBytes": 70,
            "StreamViewType": "NEW_IMAGE",
        },
    }
    got = poller.record("shardId-00000001541626099285-f35f62ef", raw)

    assert got["eventVersion"] == "1.1" and got["eventSourceARN"] == DYNAMODB_PIPE.source
    assert got["dynamodb"]["ApproximateCreationDateTime"] == datetime(2026, 11, 26, 18, 55, 1, tzinfo=UTC).timestamp()
    assert {k: v for k, v in got.items() if k not in ("eventVersion", "eventSourceARN", "dynamodb")} == {
        k: v for k, v in raw.items() if k not in ("eventVersion", "dynamodb")
    }
    # DynamoDB is not among the sources whose data Pipes parses implicitly (eb-pipes-input-transformation): the
    # image is passed on as DynamoDB JSON.
    assert transform(DYNAMODB_PIPE.input_template, got, DYNAMODB_PIPE)["payload"] == raw["dynamodb"]["NewImage"]  # type: ignore[index]


# -- A batch the target will not take ----------------------------------------------------------------------


class _Refusing:
    """The clients a poller uses: Step Functions refusing every start, SQS keeping what is sent."""

    def __init__(self) -> None:
        self.starts = 0
        self.sent: list[dict[str, Any]] = []

    def start_execution(self, **_: Any) -> None:
        from botocore.exceptions import ClientError

        self.starts += 1
        raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "StartExecution")

    def get_queue_url(self, QueueName: str) -> dict[str, str]:
        return {"QueueUrl": f"https://sqs/{QueueName}"}

    def send_message(self, QueueUrl: str, MessageBody: str) -> None:
        self.sent.append(json.loads(MessageBody))


class _Settings:
    wait_time_scale = 0.0


class _EngineContext:
    region = "us-east-1"
    settings = _Settings()

    def __init__(self) -> None:
        self.clients = _Refusing()

    def client(self, _: str) -> _Refusing:
        return self.clients

    def service(self, _: type) -> _EngineContext:
        return self  # as the IAM service with permissions off: nothing is decided

    @staticmethod
    def decide(*_: object) -> None:
        return None


def refused_batch(settings: StreamSettings, age_seconds: float) -> tuple[_Refusing, PipeStats]:
    context, stats = _EngineContext(), PipeStats()
    pipe = replace(DYNAMODB_PIPE, stream=settings)
    poller = StreamPoller(context, pipe, stats, lambda _: True)  # type: ignore[arg-type]
    created = datetime.now(UTC).timestamp() - age_seconds
    events = [
        {"eventID": str(i), "dynamodb": {"SequenceNumber": str(100 + i), "ApproximateCreationDateTime": created}}
        for i in range(3)
    ]
    poller._deliver("shardId-1", events, ["{}"] * 3, threading.Event())
    return context.clients, stats


def test_a_batch_is_retried_then_described_with_its_shard_and_sequence_numbers() -> None:
    dead_letters = "arn:aws:sqs:us-east-1:123456789012:stream-dead-letters"
    clients, stats = refused_batch(StreamSettings("TRIM_HORIZON", 2, -1, dead_letters), 0)

    assert clients.starts == 3  # the attempt and its 2 retries
    ((described,),) = [clients.sent]
    assert described["requestContext"] == {"condition": "RetryAttemptsExhausted", "approximateInvokeCount": 3}
    info = described["DDBStreamBatchInfo"]
    assert (info["shardId"], info["startSequenceNumber"], info["endSequenceNumber"], info["batchSize"]) == (
        "shardId-1",
        "100",
        "102",
        3,
    )
    assert info["streamArn"] == DYNAMODB_PIPE.source and described["version"] == "1.0"
    assert stats.dead_lettered == 3 and "ThrottlingException" in stats.last_failure


def test_records_older_than_the_record_age_are_described_without_an_attempt() -> None:
    # MaximumRecordAgeInSeconds: "Discard records older than the specified age" (Pipes API reference). The age is
    # scaled as the engine's waits are: scaled by 0 here, any record is old enough.
    dead_letters = "arn:aws:sqs:us-east-1:123456789012:stream-dead-letters"
    clients, _ = refused_batch(StreamSettings("TRIM_HORIZON", -1, 60, dead_letters), 120)

    assert clients.starts == 0
    (described,) = clients.sent
    assert described["requestContext"] == {"condition": "RecordAgeExceeded", "approximateInvokeCount": 0}


def test_retries_wait_longer_each_time_up_to_a_minute_and_never_spin() -> None:
    assert [retry_wait(n, 1.0) for n in (1, 2, 3, 7, 8, 2_000)] == [1.0, 2.0, 4.0, 60.0, 60.0, 60.0]
    assert retry_wait(5_000, 0.0) == POLL_INTERVAL  # -1 retries scaled to nothing: no busy loop, no overflow


def test_a_binary_attribute_is_passed_on_in_base64_as_the_api_sends_it() -> None:
    poller = StreamPoller(_Context(), DYNAMODB_PIPE, PipeStats(), lambda _: True)  # type: ignore[arg-type]
    raw = {
        "eventID": "1",
        "eventName": "INSERT",
        "dynamodb": {"Keys": {"id": {"B": b"\x01\x02"}}, "NewImage": {"id": {"B": b"\x01\x02"}, "t": {"BS": [b"a"]}}},
    }
    got = poller.record("shardId-1", raw)
    assert got["dynamodb"]["NewImage"] == {"id": {"B": "AQI="}, "t": {"BS": ["YQ=="]}}
    json.dumps(transform(DYNAMODB_PIPE.input_template, got, DYNAMODB_PIPE))  # JSON all through: nothing fails


def test_a_filter_pattern_sees_a_kinesis_records_data_as_its_json() -> None:
    # eb-pipes-input-transformation, "Implicit body data parsing": "For both filtering and input transformation,
    # EventBridge transforms these fields into valid JSON"; eb-pipes-event-filtering: a data pattern on data that
    # is not JSON matches nothing (the record is dropped).
    poller = StreamPoller(
        _Context(), replace(PIPE, filters=('{"data": {"kind": ["order"]}}',)), PipeStats(), lambda _: True
    )  # type: ignore[arg-type]
    order = poller.record("shardId-1", {**RAW, "Data": json.dumps({"kind": "order"}).encode()})
    text = poller.record("shardId-1", {**RAW, "Data": b"kind=order"})

    assert poller.source.filtered(order)["data"] == {"kind": "order"}
    assert [f.matches_event(poller.source.filtered(order)) for f in poller.filters] == [True]
    assert [f.matches_event(poller.source.filtered(text)) for f in poller.filters] == [False]
