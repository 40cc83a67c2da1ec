"""The registry's DynamoDB and dispatch speedups against moto 5.2.5: for each, the work moto repeats
without it, and the same answers with it (success, stored item, error code and message), compared request
by request with every speedup left out (``registry.apply(without=registry.names("speedup"))``).
In-process moto (``mock_aws``), one small table: no server, no engine. Sections are named by the
registry's names; the speedups that need a server are shown in ``test_hooks.py``, ``parse-cache`` in
``test_patches.py``.
"""

from __future__ import annotations

import inspect
import json
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from idemflow.engine import patches, registry, state
from idemflow.engine.changes import dynamodb_speedups, serialize_speedups

pytestmark = [pytest.mark.unit, pytest.mark.usefixtures("restore_registry")]

REGION = "us-east-1"
TABLE = "speedups"


def without_speedups() -> None:
    registry.apply(without=registry.names("speedup"))


def with_speedups() -> None:
    without_speedups()  # empty caches: each test sees its own first parse
    registry.apply()


@pytest.fixture
def fast() -> None:
    with_speedups()


@pytest.fixture
def moto_only() -> None:
    without_speedups()


@pytest.fixture
def ddb() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        client.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client


def outcome(call: Callable[[], Any]) -> Any:
    """What a request returns, or its error code and message: what both code paths must agree on."""
    try:
        response = call()
    except ClientError as exc:
        return ("error", exc.response["Error"]["Code"], exc.response["Error"]["Message"])
    except Exception as exc:  # moto lets some bad requests escape as Python errors: so must the speedups
        return ("raised", type(exc).__name__, str(exc))
    response.pop("ResponseMetadata", None)
    return ("ok", response)


def counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[Any]:
    """Record each call of owner.name (left working)."""
    calls: list[Any] = []
    original = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    return calls


def both_ways(requests: Callable[[Any], list[Any]]) -> tuple[list[Any], list[Any]]:
    """The outcomes of the same requests on a fresh table, first with moto's code, then with the speedups."""
    results = []
    for install in (without_speedups, with_speedups):
        install()
        with mock_aws():
            client = boto3.client("dynamodb", region_name=REGION)
            client.create_table(
                TableName=TABLE,
                KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )
            results.append(requests(client))
    return results[0], results[1]


# ---------------------------------------------------------------------------------------------
# condition-cache
# ---------------------------------------------------------------------------------------------
# Powertools' put condition, as a function using its idempotency sends it (its values change on every call).
POWERTOOLS_CONDITION = (
    "attribute_not_exists(#id) OR #expiry < :now OR "
    "(#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)"
)
POWERTOOLS_NAMES = {"#id": "id", "#expiry": "expiration", "#status": "status", "#in_progress_expiry": "ipe"}


def powertools_put(client: Any, key: str, now: int) -> Any:
    return client.put_item(
        TableName=TABLE,
        Item={"id": {"S": key}, "expiration": {"N": str(now + 60)}, "status": {"S": "INPROGRESS"}},
        ConditionExpression=POWERTOOLS_CONDITION,
        ExpressionAttributeNames=POWERTOOLS_NAMES,
        ExpressionAttributeValues={
            ":now": {"N": str(now)},
            ":now_in_millis": {"N": str(now * 1000)},
            ":inprogress": {"S": "INPROGRESS"},
        },
    )


def test_unpatched_moto_5_2_5_parses_a_condition_on_every_request(
    moto_only: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.dynamodb.comparisons import ConditionExpressionParser

    lexed = counting(monkeypatch, ConditionExpressionParser, "_lex_condition_expression")

    for i in range(5):
        powertools_put(ddb, f"k{i}", 1_700_000_000 + i)

    assert len(lexed) == 2 * 5  # the handler parses it to check the names used, the table to evaluate it


def test_patched_parses_a_condition_once_whatever_its_values(
    fast: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.dynamodb.comparisons import ConditionExpressionParser

    lexed = counting(monkeypatch, ConditionExpressionParser, "_lex_condition_expression")

    for i in range(5):
        powertools_put(ddb, f"k{i}", 1_700_000_000 + i)

    assert len(lexed) == 1
    assert dynamodb_speedups.cache_info()["condition_hits"] == 2 * 5 - 1


def test_patched_binds_each_requests_values_into_the_cached_condition(fast: None, ddb: Any) -> None:
    ddb.put_item(TableName=TABLE, Item={"id": {"S": "n"}, "n": {"N": "5"}})

    def put_if_below(limit: int) -> Any:
        return outcome(
            lambda: ddb.put_item(
                TableName=TABLE,
                Item={"id": {"S": "n"}, "n": {"N": str(limit)}},
                ConditionExpression="#n < :limit",
                ExpressionAttributeNames={"#n": "n"},
                ExpressionAttributeValues={":limit": {"N": str(limit)}},
            )
        )

    # The same expression three times: the condition holds or not depending on this request's value.
    assert put_if_below(3)[:2] == ("error", "ConditionalCheckFailedException")
    assert put_if_below(10)[0] == "ok"
    assert put_if_below(7)[:2] == ("error", "ConditionalCheckFailedException")  # n is 10 now
    assert dynamodb_speedups.cache_info() == {"conditions": 1, "condition_hits": 2 * 3 - 1, "condition_misses": 1}


CONDITION_CASES: list[dict[str, Any]] = [
    {"ConditionExpression": "attribute_not_exists(id)"},
    {"ConditionExpression": "attribute_exists(id)"},
    {
        "ConditionExpression": "#s = :a AND (size(#s) > :n OR begins_with(#s, :p))",
        "ExpressionAttributeNames": {"#s": "s"},
        "ExpressionAttributeValues": {":a": {"S": "abc"}, ":n": {"N": "1"}, ":p": {"S": "ab"}},
    },
    {
        "ConditionExpression": "#s IN (:a, :b) OR #m.#k BETWEEN :lo AND :hi",
        "ExpressionAttributeNames": {"#s": "s", "#m": "m", "#k": "k"},
        "ExpressionAttributeValues": {
            ":a": {"S": "x"},
            ":b": {"S": "abc"},
            ":lo": {"N": "1"},
            ":hi": {"N": "9"},
        },
    },
    {
        "ConditionExpression": "attribute_type(#s, :t)",
        "ExpressionAttributeNames": {"#s": "s"},
        "ExpressionAttributeValues": {":t": {"S": "S"}},
    },
    {
        "ConditionExpression": "NOT contains(#s, :c)",
        "ExpressionAttributeNames": {"#s": "s"},
        "ExpressionAttributeValues": {":c": {"S": "b"}},
    },
    # moto's errors: an unused value, a missing value, a missing name, a syntax error.
    {"ConditionExpression": "attribute_exists(id)", "ExpressionAttributeValues": {":unused": {"S": "x"}}},
    {
        "ConditionExpression": "#s = :missing",
        "ExpressionAttributeNames": {"#s": "s"},
        "ExpressionAttributeValues": {":a": {"S": "x"}},
    },
    {"ConditionExpression": "#missing = :a", "ExpressionAttributeValues": {":a": {"S": "x"}}},
    {"ConditionExpression": "s = = :a", "ExpressionAttributeValues": {":a": {"S": "x"}}},
]


def test_patched_conditions_answer_like_moto(fast: None) -> None:
    def requests(client: Any) -> list[Any]:
        client.put_item(TableName=TABLE, Item={"id": {"S": "i"}, "s": {"S": "abc"}, "m": {"M": {"k": {"N": "4"}}}})
        results = []
        for _ in range(2):  # the second round is served from the cache
            for case in CONDITION_CASES:
                results.append(
                    outcome(lambda case=case: client.put_item(TableName=TABLE, Item={"id": {"S": "new"}}, **case))
                )
                results.append(
                    outcome(
                        lambda case=case: client.update_item(
                            TableName=TABLE,
                            Key={"id": {"S": "i"}},
                            UpdateExpression="SET #touched = :one",
                            **{
                                **case,
                                "ExpressionAttributeNames": {
                                    **case.get("ExpressionAttributeNames", {}),
                                    "#touched": "t",
                                },
                                "ExpressionAttributeValues": {
                                    **case.get("ExpressionAttributeValues", {}),
                                    ":one": {"N": "1"},
                                },
                            },
                        )
                    )
                )
                client.delete_item(TableName=TABLE, Key={"id": {"S": "new"}})
        results.append(outcome(lambda: client.get_item(TableName=TABLE, Key={"id": {"S": "i"}})))
        return results

    moto_answers, fast_answers = both_ways(requests)

    assert fast_answers == moto_answers
    assert {a[0] for a in moto_answers} == {"ok", "error", "raised"}  # the cases do exercise each


# ---------------------------------------------------------------------------------------------
# item-size
# ---------------------------------------------------------------------------------------------
def measured_attributes(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    from moto.dynamodb.models.dynamo_type import DynamoType

    return counting(monkeypatch, DynamoType, "size")


WIDE_ITEM = {"id": {"S": "wide"}, **{f"a{i:03d}": {"S": "v" * 10} for i in range(200)}}


def test_unpatched_moto_5_2_5_measures_an_item_in_quadratic_time(
    moto_only: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = measured_attributes(monkeypatch)

    ddb.put_item(TableName=TABLE, Item=WIDE_ITEM)

    assert len(sizes) >= 201 * 200 // 2


def test_patched_measures_each_attribute_once(fast: None, ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = measured_attributes(monkeypatch)

    ddb.put_item(TableName=TABLE, Item=WIDE_ITEM)

    assert len(sizes) <= 2 * 201  # once to store, and moto's own checks before it
    assert ddb.get_item(TableName=TABLE, Key={"id": {"S": "wide"}})["Item"] == WIDE_ITEM


def test_patched_item_size_limit_is_moto_s(fast: None) -> None:
    def requests(client: Any) -> list[Any]:
        just_under = 405000 - len("id") - len("u") - len("big") - 1000
        return [
            outcome(lambda: client.put_item(TableName=TABLE, Item={"id": {"S": "u"}, "big": {"S": "x" * just_under}})),
            outcome(lambda: client.put_item(TableName=TABLE, Item={"id": {"S": "o"}, "big": {"S": "x" * 405001}})),
            # Over the limit only in total, over many attributes.
            outcome(
                lambda: client.put_item(
                    TableName=TABLE, Item={"id": {"S": "t"}, **{f"a{i}": {"S": "x" * 5000} for i in range(90)}}
                )
            ),
            outcome(lambda: client.scan(TableName=TABLE, Select="COUNT")),
        ]

    moto_answers, fast_answers = both_ways(requests)

    assert fast_answers == moto_answers
    assert [a[0] for a in moto_answers] == ["ok", "error", "error", "ok"]


# ---------------------------------------------------------------------------------------------
# update-expression-cache, validator-copy
# ---------------------------------------------------------------------------------------------
def save_result(client: Any, key: str, amount: int) -> Any:
    return client.update_item(
        TableName=TABLE,
        Key={"id": {"S": key}},
        UpdateExpression="SET #status = :status, #result = :result, #attempts = if_not_exists(#attempts, :zero) + :one",
        ExpressionAttributeNames={"#status": "status", "#result": "result", "#attempts": "attempts"},
        ExpressionAttributeValues={
            ":status": {"S": "COMPLETED"},
            ":result": {"M": {"amount": {"N": str(amount)}}},
            ":zero": {"N": "0"},
            ":one": {"N": "1"},
        },
        ReturnValues="ALL_NEW",
    )


def tokenized(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    from moto.dynamodb.parsing.tokens import ExpressionTokenizer

    return counting(monkeypatch, ExpressionTokenizer, "make_list")


def test_unpatched_moto_5_2_5_parses_an_update_expression_twice_per_request(
    moto_only: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = tokenized(monkeypatch)

    for amount in range(3):
        save_result(ddb, "u", amount)

    assert len(tokens) == 6


def test_patched_parses_an_update_expression_once(fast: None, ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = tokenized(monkeypatch)

    answers = [save_result(ddb, "u", amount)["Attributes"] for amount in range(3)]

    assert len(tokens) == 1
    # The cached tree is never changed by a request: each one applies its own values.
    assert [(a["result"]["M"]["amount"]["N"], a["attempts"]["N"]) for a in answers] == [
        ("0", "1"),
        ("1", "2"),
        ("2", "3"),
    ]


UPDATE_CASES: list[dict[str, Any]] = [
    {"UpdateExpression": "SET a = :v, b = :v", "ExpressionAttributeValues": {":v": {"N": "1"}}},
    {"UpdateExpression": "SET a = a + :v REMOVE b", "ExpressionAttributeValues": {":v": {"N": "2"}}},
    {
        "UpdateExpression": "SET #l = list_append(if_not_exists(#l, :e), :v)",
        "ExpressionAttributeNames": {"#l": "l"},
        "ExpressionAttributeValues": {":e": {"L": []}, ":v": {"L": [{"S": "x"}]}},
    },
    {"UpdateExpression": "ADD c :s DELETE d :s", "ExpressionAttributeValues": {":s": {"SS": ["p"]}}},
    {"UpdateExpression": "SET m.k = :v", "ExpressionAttributeValues": {":v": {"S": "deep"}}},
    # moto's errors: overlapping paths, an unknown placeholder, a syntax error, a key attribute.
    {"UpdateExpression": "SET a = :v, a = :v", "ExpressionAttributeValues": {":v": {"N": "1"}}},
    {"UpdateExpression": "SET a = :nope", "ExpressionAttributeValues": {":v": {"N": "1"}}},
    {"UpdateExpression": "SET = :v", "ExpressionAttributeValues": {":v": {"N": "1"}}},
    {"UpdateExpression": "SET id = :v", "ExpressionAttributeValues": {":v": {"S": "other"}}},
]


def test_patched_updates_answer_like_moto(fast: None) -> None:
    def requests(client: Any) -> list[Any]:
        client.put_item(
            TableName=TABLE, Item={"id": {"S": "i"}, "a": {"N": "1"}, "m": {"M": {}}, "d": {"SS": ["p", "q"]}}
        )
        answers = []
        for _ in range(2):
            for case in UPDATE_CASES:
                answers.append(
                    outcome(
                        lambda case=case: client.update_item(
                            TableName=TABLE, Key={"id": {"S": "i"}}, ReturnValues="ALL_NEW", **case
                        )
                    )
                )
        return answers

    moto_answers, fast_answers = both_ways(requests)

    assert fast_answers == moto_answers
    assert {a[0] for a in moto_answers} == {"ok", "error"}


def copy_module_calls(call: Callable[[], Any]) -> int:
    """Python-level calls into the copy module (deepcopy's recursion) while call() runs."""
    copy_file = str(Path(inspect.getfile(__import__("copy"))))
    calls = 0

    def profiler(frame: FrameType, event: str, _: Any) -> None:
        nonlocal calls
        if event == "call" and frame.f_code.co_filename == copy_file:
            calls += 1

    sys.setprofile(profiler)
    try:
        call()
    finally:
        sys.setprofile(None)
    return calls


def test_unpatched_moto_5_2_5_deep_copies_the_update_tree_in_python(moto_only: None, ddb: Any) -> None:
    save_result(ddb, "c", 1)

    assert copy_module_calls(lambda: save_result(ddb, "c", 2)) > 200


def test_patched_copies_the_update_tree_without_deepcopy(fast: None, ddb: Any) -> None:
    save_result(ddb, "c", 1)

    # What is left is moto's copy of the stored item (Item.__deepcopy__), for ReturnValues.
    assert copy_module_calls(lambda: save_result(ddb, "c", 2)) < 50


def test_copy_is_deep_and_keeps_parent_links() -> None:
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

    tree = UpdateExpressionParser.make("SET a = :v, b.c = if_not_exists(b.c, :w)")
    copied = dynamodb_speedups._copy(tree)

    from moto.dynamodb.parsing.ast_nodes import Node

    def nodes(node: Any) -> Iterator[Any]:
        yield node
        for child in node.children or []:
            if isinstance(child, Node):
                yield from nodes(child)

    originals, copies = list(nodes(tree)), list(nodes(copied))
    assert [type(n) for n in copies] == [type(n) for n in originals]
    assert not {id(n) for n in copies} & {id(n) for n in originals}
    for node in copies[1:]:
        if hasattr(node, "parent") and node.parent is not None:
            assert any(node.parent is c for c in copies)


# ---------------------------------------------------------------------------------------------
# action-lookup
# ---------------------------------------------------------------------------------------------
def test_unpatched_moto_5_2_5_lists_the_handler_methods_per_request(
    moto_only: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    listings = counting(monkeypatch, inspect, "getmembers")

    for _ in range(5):
        ddb.get_item(TableName=TABLE, Key={"id": {"S": "x"}})

    assert len(listings) >= 5


def test_patched_lists_the_handler_methods_once(fast: None, ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ddb.get_item(TableName=TABLE, Key={"id": {"S": "x"}})
    listings = counting(monkeypatch, inspect, "getmembers")

    for _ in range(5):
        ddb.get_item(TableName=TABLE, Key={"id": {"S": "x"}})
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        ddb.get_item(TableName="no-such-table", Key={"id": {"S": "x"}})  # still moto's own answer

    assert listings == []


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
        sfn = boto3.client("stepfunctions", region_name=REGION)
        executions = []
        for definition in (BUSY_MACHINE, FAILING_MACHINE):
            machine = sfn.create_state_machine(
                name=f"sm-{uuid.uuid4().hex[:8]}", definition=json.dumps(definition), roleArn=ROLE_ARN
            )["stateMachineArn"]
            arn = sfn.start_execution(stateMachineArn=machine, input=json.dumps({"text": "ä"}))["executionArn"]
            assert patches.wait_for_execution(arn, 10)
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
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="q", Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
        sqs.send_message(
            QueueUrl=url, MessageBody="body", MessageAttributes={"a": {"DataType": "String", "StringValue": "v"}}
        )
        sqs_calls: list[Callable[[Any], Any]] = [
            lambda c: c.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]),
            lambda c: c.list_queues(),
        ]
        events = boto3.client("events", region_name=REGION)
        events.put_rule(Name="r", EventPattern=json.dumps({"source": ["s"]}))
        events_calls: list[Callable[[Any], Any]] = [lambda c: c.describe_rule(Name="r"), lambda c: c.list_rules()]
        yield [(sfn, sfn_calls), (sqs, sqs_calls), (events, events_calls)]


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


def test_patched_answers_are_the_same_bytes(answers: list[tuple[Any, list[Callable[[Any], Any]]]]) -> None:
    for client, calls in answers:
        registry.apply(without=SERIALIZER)
        moto_bodies = raw_bodies(client, calls)
        registry.apply()
        fast_bodies = raw_bodies(client, calls)

        for call, moto_body, fast_body in zip(calls, moto_bodies, fast_bodies, strict=True):
            assert fast_body == moto_body, inspect.getsource(call).strip()
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
# apply() / remove()
# ---------------------------------------------------------------------------------------------
def test_each_speedup_is_left_out_and_put_back() -> None:
    from moto.core import responses
    from moto.dynamodb.comparisons import ConditionExpressionParser
    from moto.dynamodb.models.dynamo_type import Item
    from moto.dynamodb.parsing import validators

    def current() -> tuple[Any, ...]:
        return (ConditionExpressionParser.parse, Item.__init__, validators.deepcopy, responses.method_names_from_class)

    registry.remove()
    originals = current()
    without_speedups()
    assert current() == originals

    registry.apply()
    registry.apply()
    applied = current()
    registry.remove()

    assert all(a is not o for a, o in zip(applied, originals, strict=True))
    assert current() == originals
    assert registry.left_out() is None
