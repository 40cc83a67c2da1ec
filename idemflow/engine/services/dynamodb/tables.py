"""The deployed tables' items, read and written on moto's DynamoDB backend or through its API.

The interleaving checker reads a record after every step of every schedule and every table's keys after
each schedule; a GetItem or a paginated Scan through botocore would serialize and parse what the backend
already holds. So what can be read from the backend is read there, under the engine's write lock (as the
API's own calls are served), and the rest goes through the engine's DynamoDB API.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from moto.core.models import DEFAULT_ACCOUNT_ID

from idemflow import client
from idemflow.engine.services.dynamodb.atomic_writes import DYNAMODB_LOCK

__all__ = ["ItemKey", "Tables"]

ItemKey = tuple[tuple[str, str, Any], ...]
"""An item's key: ``(attribute name, DynamoDB type, value)`` for its hash key, then its range key if any."""
_FLAT_TYPES = frozenset({"S", "N", "BOOL", "NULL"})
"""DynamoDB attribute types whose value moto keeps as the API writes it."""


def _flat(kind: str, value: Any) -> Any:
    """A flat attribute's plain value, as ``client.plain_item`` makes it (whole numbers as int, others as
    float), without boto3's deserializer: the checker reads a record at every step it explores."""
    if kind == "S":
        return value
    if kind == "N":
        return client.plain_value(Decimal(value))
    if kind == "BOOL":
        return bool(value)
    return None  # NULL


class Tables:
    """The items of the tables a running engine deployed."""

    def __init__(self, region: str, dynamodb: Callable[[], Any]):
        self.region = region
        self._dynamodb = dynamodb  # the engine's in-process DynamoDB client, made when first asked for

    def _backend(self) -> Any:
        from moto.backends import get_backend

        return get_backend("dynamodb")[DEFAULT_ACCOUNT_ID][self.region]  # type: ignore[index]

    def item(self, table: str, key: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
        """One item as plain values (None when there is none), as a consistent GetItem reads it.

        An item with a nested or binary attribute is read through the API: moto keeps those in its own
        form, which only its serializer turns back into what the API answers."""
        # moto's writes change its item in place: the attributes are copied under the lock its writes hold.
        with DYNAMODB_LOCK:
            found = self._backend().get_item(table, key)
            if found is None:
                return None
            attributes = [(name, a.type, a.value) for name, a in found.attrs.items()]
        if all(kind in _FLAT_TYPES for _, kind, _ in attributes):
            return {name: _flat(kind, value) for name, kind, value in attributes}
        answer = self._dynamodb().get_item(TableName=table, Key=key, ConsistentRead=True)
        return client.plain_item(answer["Item"]) if "Item" in answer else None

    def items(self, table: str) -> list[dict[str, Any]]:
        """Every item of a table, as plain values (a consistent scan, every page)."""
        pages = self._dynamodb().get_paginator("scan").paginate(TableName=table, ConsistentRead=True)
        return [client.plain_item(item) for page in pages for item in page.get("Items", [])]

    def keys(self, table: str) -> set[ItemKey]:
        """The key of every item of a table, each ``((name, type, value), ...)``, its hash key first."""
        with DYNAMODB_LOCK:
            found = self._backend().get_table(table)
            hash_name, range_name = found.hash_key_attr, found.range_key_attr
            return {
                ((hash_name, item.hash_key.type, item.hash_key.value),)
                + (((range_name, item.range_key.type, item.range_key.value),) if range_name else ())
                for item in found.all_items()
            }

    def delete(self, table: str, keys: Iterable[ItemKey]) -> None:
        """Delete items by key (as :meth:`keys` gives them): the backend call a BatchWriteItem's DeleteRequest
        makes (moto's ``delete_item``, stream records and all)."""
        with DYNAMODB_LOCK:
            backend = self._backend()
            for key in keys:
                backend.delete_item(table, {name: {kind: value} for name, kind, value in key})

    def count(self, table: str, attribute: str, value: str) -> int:
        """How many items have ``attribute`` = ``value`` (a consistent scan that returns only the count: a side
        effect's rows for one key, say, without reading the whole table back)."""
        pages = (
            self._dynamodb()
            .get_paginator("scan")
            .paginate(
                TableName=table,
                ConsistentRead=True,
                Select="COUNT",
                FilterExpression="#a = :v",
                ExpressionAttributeNames={"#a": attribute},
                ExpressionAttributeValues={":v": {"S": value}},
            )
        )
        return sum(int(page["Count"]) for page in pages)
