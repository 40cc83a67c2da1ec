"""Serializer speedups (``serialize_speedups.py``): ``serializer-keys``, ``iso-timestamps``, ``json-parse``. For
each, the work moto 5.2.5 repeats without it, and the same answers with it (success, stored item, error code and
message; the parameters a request is parsed into), compared request by request."""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from moto import mock_aws

from idemflow.engine import registry, state
from idemflow.engine.core import serialize_speedups
from idemflow.engine.services.stepfunctions.executions import wait_for_execution
from tests import sessions
from tests.unit.changes.speedups.compare import (
    REGION,
    TABLE,
    both_ways,
    counting,
    outcome,
    small_table,
)

pytestmark = [pytest.mark.unit, pytest.mark.usefixtures("restore_registry")]


# ---------------------------------------------------------------------------------------------
# serializer-keys and iso-timestamps: the same response bytes
# ---------------------------------------------------------------------------------------------
SERIALIZER = ("serializer-keys", "iso-timestamps")
ROLE_ARN = "arn:aws:iam::123456789012:role/stepfunctions"
SFN_CONFIG: Any = {"stepfunctions": {"execute_state_machine": True}}

# Every kind of state, a retried and caught failure, a Map and a DynamoDB task (that fails: no table), so
# the history holds most event detail shapes; a second machine fails outright.
BUSY_MACHINE = {
    "StartAt": "Start",
    "States": {
        "Start": {"Type": "Pass", "Result": {"items": [1, 2, 3], "text": "é ü \u2603"}, "Next": "Pause"},
        "Pause": {"Type": "Wait", "Seconds": 0, "Next": "Each"},
        "Each": {
            "Type": "Map",
            "ItemsPath": "$.items",
            "ResultPath": "$.mapped",
            "ItemProcessor": {"StartAt": "Double", "States": {"Double": {"Type": "Pass", "End": True}}},
            "Next": "Branches",
        },
        "Branches": {
            "Type": "Parallel",
            "Branches": [
                {"StartAt": "Explode", "States": {"Explode": {"Type": "Fail", "Error": "Boom", "Cause": "x"}}}
            ],
            "Retry": [{"ErrorEquals": ["Boom"], "MaxAttempts": 1, "IntervalSeconds": 1}],
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Read"}],
        },
        "Read": {
            "Type": "Task",
            "Resource": "arn:aws:states:::dynamodb:getItem",
            "Parameters": {"TableName": "no-such-table", "Key": {"id": {"S": "k"}}},
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.readError", "Next": "Decide"}],
            "End": True,
        },
        "Decide": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.text", "IsPresent": True, "Next": "Done"}],
            "Default": "Done",
        },
        "Done": {"Type": "Succeed"},
    },
}
FAILING_MACHINE = {"StartAt": "No", "States": {"No": {"Type": "Fail", "Error": "Refused", "Cause": "on purpose"}}}


def raw_bodies(client: Any, calls: list[Callable[[Any], Any]]) -> list[bytes]:
    """The HTTP body moto answered to each call, as sent (before botocore parses it)."""
    bodies: list[bytes] = []

    def keep(http_response: Any, **_: Any) -> None:
        bodies.append(http_response.content)

    client.meta.events.register("after-call", keep)
    try:
        for call in calls:
            call(client)
    finally:
        client.meta.events.unregister("after-call", keep)
    assert len(bodies) == len(calls)
    return bodies


@pytest.fixture
def answers() -> Iterator[list[tuple[Any, list[Callable[[Any], Any]]]]]:
    """Step Functions, SQS and EventBridge clients with requests to answer, once everything they read has
    ended (so the two serializations below read the same state)."""
    registry.apply()
    state.update(wait_time_scale=0)
    with mock_aws(config=SFN_CONFIG):
        sfn = sessions.client("stepfunctions", region_name=REGION)
        executions = []
        for definition in (BUSY_MACHINE, FAILING_MACHINE):
            machine = sfn.create_state_machine(
                name=f"sm-{uuid.uuid4().hex[:8]}", definition=json.dumps(definition), roleArn=ROLE_ARN
            )["stateMachineArn"]
            arn = sfn.start_execution(stateMachineArn=machine, input=json.dumps({"text": "ä"}))["executionArn"]
            assert wait_for_execution(arn, 10)
            executions.append((machine, arn))
        sfn_calls: list[Callable[[Any], Any]] = [lambda c: c.list_state_machines()]
        for machine, arn in executions:
            sfn_calls += [
                lambda c, arn=arn: c.get_execution_history(executionArn=arn),
                lambda c, arn=arn: c.get_execution_history(
                    executionArn=arn, reverseOrder=True, includeExecutionData=False
                ),
                lambda c, arn=arn: c.describe_execution(executionArn=arn),
                lambda c, machine=machine: c.list_executions(stateMachineArn=machine),
                lambda c, machine=machine: c.describe_state_machine(stateMachineArn=machine),
            ]
        sqs = sessions.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="q", Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
        sqs.send_message(
            QueueUrl=url, MessageBody="body", MessageAttributes={"a": {"DataType": "String", "StringValue": "v"}}
        )
        sqs_calls: list[Callable[[Any], Any]] = [
            lambda c: c.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]),
            lambda c: c.list_queues(),
        ]
        events = sessions.client("events", region_name=REGION)
        events.put_rule(Name="r", EventPattern=json.dumps({"source": ["s"]}))
        events_calls: list[Callable[[Any], Any]] = [lambda c: c.describe_rule(Name="r"), lambda c: c.list_rules()]
        # A REST-JSON service: its serializer puts each top-level member in the body or a header itself.
        pipes = sessions.client("pipes", region_name=REGION)
        pipes.create_pipe(
            Name="p", Source=queue_arn(sqs, url), Target=ROLE_ARN.replace(":iam::", ":states:"), RoleArn=ROLE_ARN
        )
        pipes_calls: list[Callable[[Any], Any]] = [lambda c: c.list_pipes(), lambda c: c.describe_pipe(Name="p")]
        yield [(sfn, sfn_calls), (sqs, sqs_calls), (events, events_calls), (pipes, pipes_calls)]


def test_unpatched_moto_5_2_5_probes_every_member_of_every_event_for_its_key(
    answers: list[tuple[Any, list[Callable[[Any], Any]]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.core import serialize

    sfn, calls = answers[0]
    registry.apply(without=SERIALIZER)
    probes = counting(monkeypatch, serialize.ShapeNameAlias, "has_alias")
    events = len(calls[1](sfn)["events"])

    for _ in range(3):
        calls[1](sfn)

    assert events > 20
    assert len(probes) > 3 * events * 50  # a history event's shape has ~60 members, each probed each time


def test_unpatched_moto_5_2_5_parses_each_timestamp_with_dateutil(
    answers: list[tuple[Any, list[Callable[[Any], Any]]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import botocore.utils

    sfn, calls = answers[0]
    registry.apply(without=SERIALIZER)
    parsed = counting(monkeypatch, botocore.utils, "parse_timestamp")

    events = calls[1](sfn)["events"]

    assert len(parsed) >= len(events)  # one ISO 8601 string per event, at least


def test_patched_probes_each_member_once_and_parses_no_timestamp_with_dateutil(
    answers: list[tuple[Any, list[Callable[[Any], Any]]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import botocore.utils
    from moto.core import serialize

    sfn, calls = answers[0]
    calls[1](sfn)
    probes = counting(monkeypatch, serialize.ShapeNameAlias, "has_alias")
    parsed = counting(monkeypatch, botocore.utils, "parse_timestamp")

    for _ in range(3):
        calls[1](sfn)

    assert probes == [] and parsed == []
    assert serialize_speedups.cache_info()["key_entries"] > 50


def queue_arn(sqs: Any, url: str) -> str:
    return str(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])


def test_patched_answers_are_the_same_bytes(answers: list[tuple[Any, list[Callable[[Any], Any]]]]) -> None:
    for client, calls in answers:
        registry.apply(without=SERIALIZER)
        moto_bodies = raw_bodies(client, calls)
        registry.apply()
        fast_bodies = raw_bodies(client, calls)

        for call, moto_body, fast_body in zip(calls, moto_bodies, fast_bodies, strict=True):
            assert fast_body == moto_body, inspect.getsource(call).strip()
    assert json.loads(raw_bodies(answers[3][0], answers[3][1][:1])[0])["Pipes"][0]["Name"] == "p"  # not just "{}"
    # What was compared holds what the speedups touch: ISO timestamps, nested details, non-ASCII text.
    history = json.loads(raw_bodies(answers[0][0], [answers[0][1][1]])[0])
    types = {event["type"] for event in history["events"]}
    assert {"MapStateStarted", "ParallelStateFailed", "TaskFailed", "ExecutionSucceeded"} <= types, types
    # Epoch seconds with milliseconds; an event on a whole second is written as a whole number (moto's
    # serializer, with the speedups or without: one event in a thousand, so it failed one run in some fifty).
    stamps = [event["timestamp"] for event in history["events"]]
    assert all(isinstance(t, int | float) and not isinstance(t, bool) for t in stamps), stamps
    assert any(isinstance(t, float) for t in stamps), stamps


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-25T17:46:57Z",
        "2026-11-25T17:46:57.5Z",
        "2026-11-25T17:46:57.123Z",
        "2026-11-25T17:46:57.123456Z",
        "2026-11-25T23:59:59.999+02:00",
        "2026-01-01T00:00:00.001-05:30",
        "2026-11-25",  # not complete: dateutil's, as before
        "1700000000",
    ],
)
def test_iso_timestamps_serialize_as_dateutil_parses_them(text: str) -> None:
    import botocore.utils
    from moto.core import serialize

    registry.apply()
    fast = serialize.parse_to_aware_datetime(text)
    slow = botocore.utils.parse_to_aware_datetime(text)
    formats = ("iso8601", "iso8601_zeroed", "rfc822", "unixtimestamp")

    assert fast == slow and fast.utcoffset() == slow.utcoffset()
    for timestamp_format in formats:
        converter = getattr(serialize.TimestampSerializer("iso8601"), f"_timestamp_{timestamp_format}")
        assert converter(fast) == converter(slow), timestamp_format


# ---------------------------------------------------------------------------------------------
# json-parse: a JSON request's parameters, the same as moto's walk of its input shape makes them
# ---------------------------------------------------------------------------------------------
EVERY_TYPE = {
    "s": {"S": "é ✓"},
    "n": {"N": "1.50"},
    "b": {"B": "aGVsbG8="},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2"]},
    "bs": {"BS": ["AAE=", "/w=="]},
    "m": {"M": {"deep": {"L": [{"S": "x"}, {"M": {"b": {"B": "AA=="}}}, {"NULL": True}]}}},
    "l": {"L": [{"BOOL": False}, {"N": "-0"}]},
    "null": {"NULL": True},
    "bool": {"BOOL": True},
}
PARSED_REQUESTS: list[tuple[str, Any]] = [
    ("PutItem", {"TableName": "t", "Item": {"id": {"S": "k"}, **EVERY_TYPE}, "ReturnValues": "ALL_OLD"}),
    (
        "PutItem",
        {
            "Item": {"id": {"S": "k"}},
            "TableName": "t",  # members in another order than the shape's: moto's order wins
            "ConditionExpression": "attribute_not_exists(#id) OR #e < :now",
            "ExpressionAttributeNames": {"#id": "id", "#e": "expiry"},
            "ExpressionAttributeValues": {":now": {"N": "1764410000"}},
            "Unknown": {"ignored": True},
            "ReturnConsumedCapacity": None,
        },
    ),
    (
        "UpdateItem",
        {
            "TableName": "t",
            "Key": {"id": {"S": "k"}},
            "UpdateExpression": "SET #s = :s, #r = :r REMOVE #x",
            "ExpressionAttributeNames": {"#s": "status", "#r": "result", "#x": "x"},
            "ExpressionAttributeValues": {":s": {"S": "COMPLETED"}, ":r": {"M": EVERY_TYPE}},
            "ReturnValues": "ALL_NEW",
        },
    ),
    ("GetItem", {"TableName": "t", "Key": {"id": {"S": "k"}}, "ConsistentRead": True, "AttributesToGet": ["a"]}),
    (
        "Query",
        {
            "TableName": "t",
            "Limit": 10,
            "KeyConditions": {"id": {"AttributeValueList": [{"S": "k"}], "ComparisonOperator": "EQ"}},
            "ExclusiveStartKey": {"id": {"S": "j"}},
        },
    ),
    (
        "CreateTable",
        {
            "TableName": "t",
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": "7"},
        },
    ),
    ("ListBackups", {"TimeRangeLowerBound": 1764410000, "TimeRangeUpperBound": "2026-11-29T10:00:00Z", "Limit": 3}),
    (
        "TransactWriteItems",
        {
            "TransactItems": [
                {"Put": {"TableName": "t", "Item": {"id": {"S": "a"}, "b": {"B": "AQ=="}}}},
                {"Delete": {"TableName": "t", "Key": {"id": {"S": "b"}}}},
            ]
        },
    ),
    ("PutItem", {"TableName": "t", "Item": None}),
    ("PutItem", {"TableName": "t", "Item": {"id": "not an attribute value"}}),  # moto's error, as moto raises it
    ("PutItem", {"TableName": "t", "Item": ["a list"]}),
    ("Query", {"TableName": "t", "Limit": "ten"}),
    ("PutItem", {"TableName": "t", "Item": {"id": {"B": "not base64!"}}}),
]


def parse_both_ways(operation: str, body: Any) -> tuple[Any, Any]:
    """moto's walk of the operation's input shape over ``body``, and the json-parse plan's: what each returns (as
    its repr: key order, bytes and numbers' types included) or raises."""
    from moto.core.parse import JSONParser
    from moto.core.utils import get_service_model

    shape = get_service_model("dynamodb").operation_model(operation).input_shape
    parser = JSONParser(get_service_model("dynamodb").operation_model(operation))
    outcomes = []
    for parse in (parser._parse_shape, lambda s, v: serialize_speedups._plan(s)(parser, v)):
        try:
            outcomes.append(("ok", repr(parse(shape, json.loads(json.dumps(body))))))
        except Exception as exc:
            outcomes.append(("raised", type(exc).__name__, str(exc)))
    return outcomes[0], outcomes[1]


@pytest.mark.parametrize(("operation", "body"), PARSED_REQUESTS)
def test_a_plan_parses_as_moto_walks_the_shape(operation: str, body: Any) -> None:
    moto_own, planned = parse_both_ways(operation, body)

    assert planned == moto_own


def test_unpatched_moto_5_2_5_looks_up_a_handler_for_every_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.core.parse import JSONParser

    registry.apply(without=("json-parse",))
    with mock_aws():
        ddb = small_table()
        walked = counting(monkeypatch, JSONParser, "_parse_shape")
        ddb.put_item(TableName=TABLE, Item={"id": {"S": "k"}, **EVERY_TYPE})

    assert len(walked) >= 40  # every member of every AttributeValue, every structure, list and map


def test_patched_the_same_answers_without_a_handler_looked_up(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.core.parse import JSONParser

    def requests(ddb: Any) -> list[Any]:
        calls: list[Callable[[], Any]] = [
            lambda: ddb.put_item(TableName=TABLE, Item={"id": {"S": "k"}, **EVERY_TYPE}),
            lambda: ddb.get_item(TableName=TABLE, Key={"id": {"S": "k"}}),
            lambda: ddb.update_item(
                TableName=TABLE,
                Key={"id": {"S": "k"}},
                UpdateExpression="SET #m.#d = :v",
                ExpressionAttributeNames={"#m": "m", "#d": "more"},
                ExpressionAttributeValues={":v": {"BS": [b"\x00\x01"]}},
                ReturnValues="ALL_NEW",
            ),
            lambda: ddb.put_item(
                TableName=TABLE, Item={"id": {"S": "k"}}, ConditionExpression="attribute_not_exists(id)"
            ),
            lambda: ddb.get_item(TableName="no-such-table", Key={"id": {"S": "k"}}),
        ]
        return [outcome(call) for call in calls]

    moto_own, fast = both_ways(requests)
    with mock_aws():
        ddb = small_table()
        walked = counting(monkeypatch, JSONParser, "_parse_shape")
        requests(ddb)

    assert fast == moto_own
    assert fast[1][1]["Item"]["b"] == {"B": b"aGVsbG8="}  # botocore sent the text's bytes, base64-encoded
    assert walked == []
