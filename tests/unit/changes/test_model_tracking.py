"""``untracked-models`` (``core/model_tracking.py``): moto 5.2.5 keeps every model instance it makes in a list for its
dashboard; with the change, only the ones S3's reset reads."""

from __future__ import annotations

from typing import Any

import pytest

from tests import sessions
from tests.unit.changes.machines import REGION

pytestmark = pytest.mark.unit


def item_copies(ddb: Any, updates: int) -> int:
    """How many more DynamoDB items moto tracks after ``updates`` UpdateItems of one item: the table holds one."""
    from moto.dynamodb.models.dynamo_type import Item

    ddb.create_table(
        TableName="tracked",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    ddb.put_item(TableName="tracked", Item={"pk": {"S": "k"}, "n": {"N": "1"}})
    before = len(Item.instances_tracked)  # type: ignore[attr-defined]
    for _ in range(updates):
        ddb.update_item(
            TableName="tracked",
            Key={"pk": {"S": "k"}},
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )
    assert ddb.get_item(TableName="tracked", Key={"pk": {"S": "k"}})["Item"]["n"] == {"N": str(1 + updates)}
    return len(Item.instances_tracked) - before  # type: ignore[attr-defined]


def test_unpatched_moto_5_2_5_tracks_every_item_version_an_update_replaced(unpatched: None, ddb: Any) -> None:
    assert item_copies(ddb, 20) >= 20


def test_patched_an_update_leaves_nothing_tracked(patched: None, ddb: Any) -> None:
    assert item_copies(ddb, 20) == 0


def test_patched_s3_keys_are_still_tracked_for_s3s_reset(patched: None, aws: None) -> None:
    # S3Backend.reset closes the buffers of every key through FakeKey.instances_tracked.
    from moto.s3.models import FakeKey

    s3 = sessions.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="tracked")
    before = len(FakeKey.instances_tracked)  # type: ignore[attr-defined]
    s3.put_object(Bucket="tracked", Key="a", Body=b"1")

    assert len(FakeKey.instances_tracked) > before  # type: ignore[attr-defined]
