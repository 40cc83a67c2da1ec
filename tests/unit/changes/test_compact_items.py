"""``compact-items`` (``services/dynamodb/compact_items.py``): moto 5.2.5 holds every item as an object per
attribute; with the change, a table without a sort key holds each item packed (deflated with the table's
dictionary once its first items have made one), and every answer is moto's own: the same requests, with and
without the change, answer byte for byte the same (items, errors, conditional writes' old items, update
expressions, queries, scans, transactions, batches, the table stream's images)."""

from __future__ import annotations

import gc
import hashlib
import json
import pickle
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from moto import mock_aws

from idemflow.engine import registry
from idemflow.engine.services.dynamodb.compact_items import DICTIONARY_BYTES
from tests import sessions
from tests.unit.changes.machines import REGION
from tests.unit.changes.speedups.compare import outcome

pytestmark = pytest.mark.unit

TABLE = "compact"


def table(ddb: Any) -> str:
    answer = ddb.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    return str(answer["TableDescription"]["LatestStreamArn"])


def stored(key: str) -> Any:
    """What moto's table holds for ``key``, as held (not as read)."""
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.dynamo_type import DynamoType

    items = dynamodb_backends["123456789012"][REGION].get_table(TABLE).items
    held = dict(dict.items(items))
    return held[key] if type(items).__name__ == "CompactItems" else held[DynamoType({"S": key})]


RECORD = {
    "id": {"S": "k1"},
    "status": {"S": "IN_PROGRESS"},
    "lockToken": {"S": "t-1"},
    "count": {"N": "1"},
    "tags": {"SS": ["a", "b"]},
    "blob": {"B": b"\x00\x01bytes"},
    "nested": {"M": {"list": {"L": [{"S": "x"}, {"N": "2"}, {"M": {"deep": {"BOOL": True}}}]}, "none": {"NULL": True}}},
}


def workflow_record(n: int) -> dict[str, Any]:
    """An item shaped as the workflow's idempotency record (its attributes' names and kinds of value), the n-th."""
    digest = hashlib.sha256(str(n).encode()).hexdigest()
    token = str(uuid.UUID(int=n))
    return {
        "id": {"S": f"payments#{digest}"},
        "status": {"S": "COMPLETED"},
        "owner": {"S": f"arn:aws:states:us-east-1:123456789012:express:Workflow:{token}:{token}"},
        "lockToken": {"S": token},
        "fingerprint": {"S": hashlib.sha256(digest.encode()).hexdigest()},
        "startedAt": {"S": f"2026-11-29T09:{n % 60:02}:01.709Z"},
        "ttl": {"N": str(1796030641 + n)},
        "result": {"S": json.dumps({"chargeId": f"c-{n}", "status": "CHARGED", "amount": 4200 + n})},
        "resultStored": {"BOOL": True},
    }


def shapes() -> list[dict[str, Any]]:
    """Items of as many shapes (attributes' names) as fill a table's dictionary: it is made when they are written."""
    items = [{**workflow_record(n), f"note{n}": {"S": "-"}} for n in range(100, 125)]
    assert sum(len(json.dumps(item)) for item in items) > 2 * DICTIONARY_BYTES
    return items


def requests(ddb: Any) -> list[Any]:
    t = TABLE
    calls: list[Callable[[], Any]] = [
        # first, items for the table's dictionary: the items after are held deflated with it
        lambda: ddb.batch_write_item(RequestItems={t: [{"PutRequest": {"Item": item}} for item in shapes()]}),
        lambda: ddb.put_item(TableName=t, Item=RECORD),
        lambda: ddb.put_item(
            TableName=t,
            Item={"id": {"S": "k1"}},
            ConditionExpression="attribute_not_exists(id)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        ),
        lambda: ddb.get_item(TableName=t, Key={"id": {"S": "k1"}}, ConsistentRead=True),
        lambda: ddb.get_item(
            TableName=t,
            Key={"id": {"S": "k1"}},
            ProjectionExpression="#s, nested.#l[2], tags",
            ExpressionAttributeNames={"#s": "status", "#l": "list"},
        ),
        lambda: ddb.get_item(TableName=t, Key={"id": {"S": "missing"}}),
        lambda: ddb.update_item(
            TableName=t,
            Key={"id": {"S": "k1"}},
            UpdateExpression="SET #s = :done, nested.#l = list_append(nested.#l, :more) ADD #c :one, tags :tag"
            " REMOVE nested.#n",
            ConditionExpression="lockToken = :token AND #s = :ip",
            ExpressionAttributeNames={"#s": "status", "#l": "list", "#c": "count", "#n": "none"},
            ExpressionAttributeValues={
                ":done": {"S": "COMPLETED"},
                ":more": {"L": [{"S": "y"}]},
                ":one": {"N": "1"},
                ":tag": {"SS": ["c"]},
                ":token": {"S": "t-1"},
                ":ip": {"S": "IN_PROGRESS"},
            },
            ReturnValues="ALL_NEW",
        ),
        lambda: ddb.update_item(
            TableName=t,
            Key={"id": {"S": "k1"}},
            UpdateExpression="SET #s = :x",
            ConditionExpression="#s = :ip",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":x": {"S": "X"}, ":ip": {"S": "IN_PROGRESS"}},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        ),
        lambda: ddb.update_item(
            TableName=t,
            Key={"id": {"S": "k2"}},
            UpdateExpression="SET a = :a, b = if_not_exists(b, :a)",
            ExpressionAttributeValues={":a": {"N": "5"}},
            ReturnValues="UPDATED_OLD",
        ),
        lambda: ddb.update_item(
            TableName=t,
            Key={"id": {"S": "k2"}},
            UpdateExpression="SET a = a + :a",
            ExpressionAttributeValues={":a": {"N": "5"}},
            ReturnValues="UPDATED_NEW",
        ),
        lambda: ddb.update_item(
            TableName=t,
            Key={"id": {"S": "k2"}},
            UpdateExpression="SET big = :big",
            ExpressionAttributeValues={":big": {"S": "x" * 410_000}},
        ),
        lambda: ddb.query(
            TableName=t,
            KeyConditionExpression="id = :k",
            ExpressionAttributeValues={":k": {"S": "k1"}},
        ),
        lambda: ddb.scan(TableName=t),
        lambda: ddb.scan(
            TableName=t, FilterExpression="attribute_exists(a)", ProjectionExpression="id, a", ConsistentRead=True
        ),
        lambda: ddb.batch_write_item(
            RequestItems={
                t: [
                    {"PutRequest": {"Item": {"id": {"S": "k3"}, "v": {"S": "three"}}}},
                    {"PutRequest": {"Item": {"id": {"S": "k4"}, "v": {"S": "four"}}}},
                    {"DeleteRequest": {"Key": {"id": {"S": "k2"}}}},
                ]
            }
        ),
        lambda: ddb.batch_get_item(RequestItems={t: {"Keys": [{"id": {"S": "k3"}}, {"id": {"S": "k2"}}]}}),
        lambda: ddb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": t, "Item": {"id": {"S": "k5"}, "v": {"S": "five"}}}},
                {
                    "Update": {
                        "TableName": t,
                        "Key": {"id": {"S": "k3"}},
                        "UpdateExpression": "SET v = :v",
                        "ConditionExpression": "v = :old",
                        "ExpressionAttributeValues": {":v": {"S": "3"}, ":old": {"S": "not three"}},
                    }
                },
            ]
        ),
        lambda: ddb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": t, "Item": {"id": {"S": "k6"}, "v": {"S": "six"}}}},
                {
                    "Update": {
                        "TableName": t,
                        "Key": {"id": {"S": "k3"}},
                        "UpdateExpression": "SET v = :v",
                        "ConditionExpression": "v = :old",
                        "ExpressionAttributeValues": {":v": {"S": "3"}, ":old": {"S": "three"}},
                    }
                },
                {"Delete": {"TableName": t, "Key": {"id": {"S": "k4"}}}},
            ]
        ),
        lambda: ddb.transact_get_items(
            TransactItems=[{"Get": {"TableName": t, "Key": {"id": {"S": k}}}} for k in ("k3", "k4", "k5", "k6")]
        ),
        lambda: ddb.delete_item(
            TableName=t,
            Key={"id": {"S": "k1"}},
            ConditionExpression="#s = :ip",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":ip": {"S": "IN_PROGRESS"}},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        ),
        lambda: ddb.delete_item(TableName=t, Key={"id": {"S": "k1"}}, ReturnValues="ALL_OLD"),
        lambda: ddb.execute_statement(Statement=f"SELECT * FROM \"{t}\" WHERE id = 'k3'"),
        lambda: ddb.execute_statement(Statement=f"UPDATE \"{t}\" SET v = 'partiql' WHERE id = 'k6'"),
        lambda: ddb.scan(TableName=t),
        lambda: {"count": ddb.describe_table(TableName=t)["Table"]["ItemCount"]},
        # one value set in two attributes; a large item
        lambda: ddb.update_item(
            TableName=t,
            Key={"id": {"S": "k7"}},
            UpdateExpression="SET a = :v, b = :v",
            ExpressionAttributeValues={":v": {"L": [{"S": "same"}, {"SS": ["x", "y"]}]}},
        ),
        lambda: ddb.update_item(
            TableName=t,
            Key={"id": {"S": "k7"}},
            UpdateExpression="SET a[0] = :w, b[1] = :x",
            ExpressionAttributeValues={":w": {"S": "changed"}, ":x": {"SS": ["z"]}},
            ReturnValues="ALL_NEW",
        ),
        lambda: ddb.put_item(TableName=t, Item={**workflow_record(9), "big": {"S": "é" * 150_000}}),
        lambda: ddb.get_item(TableName=t, Key={"id": workflow_record(9)["id"]}),
        lambda: ddb.scan(TableName=t, ProjectionExpression="id, lockToken, a, b"),
    ]
    answers = [outcome(call) for call in calls]
    from moto.dynamodb.models import dynamodb_backends

    # the table stream's records as moto keeps them (what GetRecords of DynamoDB Streams answers)
    shard = dynamodb_backends["123456789012"][REGION].get_table(TABLE).stream_shard
    from moto.core.utils import unix_time

    assert shard is not None
    records = []
    for kept in shard.items:
        record = dict(kept.record, dynamodb=dict(kept.record["dynamodb"]))
        del record["eventID"]  # drawn at random
        # the clock's: SizeBytes counts its text too (moto's dynamo_json_dump writes it as unix_time)
        written = record["dynamodb"].pop("ApproximateCreationDateTime")
        record["dynamodb"]["SizeBytes"] -= len(json.dumps(unix_time(written)))
        records.append(record)
    return [*answers, records]


def number_key_requests(ddb: Any) -> list[Any]:
    """A table whose hash key is a number: moto finds an item by the number's value (1 and 1.0 are one key)."""
    ddb.create_table(
        TableName="numbers",
        KeySchema=[{"AttributeName": "n", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "n", "AttributeType": "N"}],
        BillingMode="PAY_PER_REQUEST",
    )
    t = "numbers"
    calls: list[Callable[[], Any]] = [
        lambda: ddb.put_item(TableName=t, Item={"n": {"N": "1"}, "v": {"S": "one"}}),
        lambda: ddb.put_item(TableName=t, Item={"n": {"N": "2"}, "v": {"S": "two"}}),
        lambda: ddb.get_item(TableName=t, Key={"n": {"N": "1.0"}}),
        lambda: ddb.put_item(TableName=t, Item={"n": {"N": "1.00"}, "v": {"S": "again"}}, ReturnValues="ALL_OLD"),
        lambda: ddb.update_item(
            TableName=t,
            Key={"n": {"N": "2"}},
            UpdateExpression="SET v = :v",
            ExpressionAttributeValues={":v": {"S": "deux"}},
            ReturnValues="ALL_NEW",
        ),
        lambda: ddb.get_item(TableName=t, Key={"n": {"S": "1"}}),
        lambda: ddb.scan(TableName=t),
        lambda: ddb.delete_item(TableName=t, Key={"n": {"N": "1"}}, ReturnValues="ALL_OLD"),
        lambda: ddb.delete_item(TableName=t, Key={"n": {"N": "3"}}, ReturnValues="ALL_OLD"),
        lambda: ddb.scan(TableName=t),
    ]
    return [outcome(call) for call in calls]


def both_ways(run: Callable[[Any], list[Any]] = requests) -> tuple[list[Any], list[Any]]:
    results = []
    for without in (["compact-items"], []):
        registry.apply(without=without)
        with mock_aws():
            ddb = sessions.client("dynamodb", region_name=REGION)
            table(ddb)
            results.append(run(ddb))
    return results[0], results[1]


def test_unpatched_moto_5_2_5_holds_an_item_as_an_object_per_attribute() -> None:
    from moto.dynamodb.models.dynamo_type import Item

    registry.apply(without=["compact-items"])
    with mock_aws():
        ddb = sessions.client("dynamodb", region_name=REGION)
        table(ddb)
        ddb.put_item(TableName=TABLE, Item=RECORD)
        held = stored("k1")
        assert type(held) is Item and gc.is_tracked(held.attrs)
        assert len(held.attrs) == len(RECORD)


def test_patched_holds_an_item_packed_out_of_the_collectors_view() -> None:
    registry.apply()
    with mock_aws():
        ddb = sessions.client("dynamodb", region_name=REGION)
        table(ddb)
        ddb.put_item(TableName=TABLE, Item=RECORD)
        ddb.update_item(
            TableName=TABLE,
            Key={"id": {"S": "k1"}},
            UpdateExpression="ADD #c :one",
            ExpressionAttributeNames={"#c": "count"},
            ExpressionAttributeValues={":one": {"N": "1"}},
        )
        held = stored("k1")
        assert not gc.is_tracked(held)
        assert ddb.get_item(TableName=TABLE, Key={"id": {"S": "k1"}})["Item"]["count"] == {"N": "2"}


def test_patched_answers_every_request_as_moto_does() -> None:
    moto_only, compact = both_ways()
    assert json.dumps(compact, default=repr) == json.dumps(moto_only, default=repr)
    assert moto_only[3][0] == "ok" and moto_only[6][0] == "ok"  # the requests reached the items they name
    assert moto_only[2][1] == "ConditionalCheckFailedException"
    assert len(moto_only[-1]) >= 10  # the stream holds the writes' images


def test_patched_holds_a_tables_items_deflated_with_the_tables_dictionary() -> None:
    from moto.dynamodb.models import dynamodb_backends

    registry.apply()
    with mock_aws():
        ddb = sessions.client("dynamodb", region_name=REGION)
        table(ddb)
        for item in [*shapes(), workflow_record(1)]:
            ddb.put_item(TableName=TABLE, Item=item)
        store: Any = dynamodb_backends["123456789012"][REGION].get_table(TABLE).items
        item = store.values()[0]  # read outside a request: a fresh copy
        whole = pickle.dumps({**vars(item), "attrs": dict(item.attrs)}, pickle.HIGHEST_PROTOCOL)
        held = stored(workflow_record(1)["id"]["S"])
        # the item as moto's objects pickled: about 800 bytes; deflated with the dictionary: about 150
        assert len(held) * 3 < len(whole)
        answer = ddb.get_item(TableName=TABLE, Key={"id": workflow_record(1)["id"]}, ConsistentRead=True)
        assert answer["Item"] == workflow_record(1)


def test_patched_holds_an_item_marshal_cannot_write_as_a_pickle() -> None:
    from decimal import Decimal

    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.dynamo_type import DynamoType

    registry.apply()
    with mock_aws():
        ddb = sessions.client("dynamodb", region_name=REGION)
        table(ddb)
        ddb.put_item(TableName=TABLE, Item=RECORD)
        store: Any = dynamodb_backends["123456789012"][REGION].get_table(TABLE).items
        item = store[DynamoType({"S": "k1"})]
        item.attrs["odd"] = DynamoType({"N": Decimal("1.5")})  # no request writes a Decimal: marshal has no such type
        store[DynamoType({"S": "k1"})] = item
        assert stored("k1")[:1] == pickle.PROTO
        assert store[DynamoType({"S": "k1"})].attrs["odd"].value == Decimal("1.5")


def test_patched_holds_a_string_key_as_its_string_and_a_number_key_as_moto_does() -> None:
    from moto.dynamodb.models import dynamodb_backends

    moto_only, compact = both_ways(number_key_requests)
    assert json.dumps(compact, default=repr) == json.dumps(moto_only, default=repr)
    assert moto_only[2][1]["Item"]["v"] == {"S": "one"}  # 1.0 found the item written as 1
    assert len(moto_only[-1][1]["Items"]) == 1
    with mock_aws():
        ddb = sessions.client("dynamodb", region_name=REGION)
        table(ddb)
        ddb.put_item(TableName=TABLE, Item=RECORD)
        store: Any = dynamodb_backends["123456789012"][REGION].get_table(TABLE).items
        assert list(dict.keys(store)) == ["k1"]  # not a DynamoType: an object and its attributes less
        assert [key.to_json() for key in store] == [{"S": "k1"}]
