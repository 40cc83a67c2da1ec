"""DynamoDB as the interpreter's tasks use it (``dynamodb.py``): ``atomic-writes``. For each change, moto 5.2.5's
behaviour without it and the engine's with it."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

pytestmark = pytest.mark.unit


# ---------------------------------------------------------------------------------------------
# atomic-writes
# ---------------------------------------------------------------------------------------------


def _create_table(ddb: Any) -> str:
    name = f"locks-{uuid.uuid4().hex[:8]}"
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def _race_conditional_puts(ddb: Any, table: str, threads: int) -> tuple[list[int], list[str]]:
    """`threads` concurrent `attribute_not_exists(pk)` puts of the same key; returns winners and errors."""
    start_line = threading.Barrier(threads)
    winners: list[int] = []
    errors: list[str] = []

    def put(owner: int) -> None:
        start_line.wait(timeout=10)
        try:
            ddb.put_item(
                TableName=table,
                Item={"pk": {"S": "job-1"}, "owner": {"N": str(owner)}},
                ConditionExpression="attribute_not_exists(pk)",
            )
            winners.append(owner)
        except ClientError as error:
            errors.append(error.response["Error"]["Code"])

    workers = [threading.Thread(target=put, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
    return winners, errors


def test_unpatched_moto_5_2_5_loses_conditional_write_race(
    unpatched: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import moto.dynamodb.models.table as table_module

    threads = 8
    # Table.put_item reads the current item, then builds and evaluates the condition. Holding every
    # thread at a barrier between the two makes the race certain: all read "no item", all write.
    inside_window = threading.Barrier(threads)
    original = getattr(table_module, "get_filter_expression")  # noqa: B009 (not re-exported for mypy)

    def condition_after_everyone_has_read(*args: Any, **kwargs: Any) -> Any:
        inside_window.wait(timeout=10)
        return original(*args, **kwargs)

    monkeypatch.setattr(table_module, "get_filter_expression", condition_after_everyone_has_read)
    table = _create_table(ddb)

    winners, errors = _race_conditional_puts(ddb, table, threads)

    assert errors == []
    assert len(winners) == threads  # every "create if absent" succeeded


def test_patched_concurrent_conditional_puts_have_exactly_one_winner(
    patched: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import moto.dynamodb.models.table as table_module

    original = getattr(table_module, "get_filter_expression")  # noqa: B009

    def slow_condition(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.001)  # a wider window than moto's own, to give a race every chance
        return original(*args, **kwargs)

    monkeypatch.setattr(table_module, "get_filter_expression", slow_condition)
    table = _create_table(ddb)

    winners, errors = _race_conditional_puts(ddb, table, 50)

    assert len(winners) == 1
    assert errors == ["ConditionalCheckFailedException"] * 49
    item = ddb.get_item(TableName=table, Key={"pk": {"S": "job-1"}}, ConsistentRead=True)["Item"]
    assert item["owner"] == {"N": str(winners[0])}
