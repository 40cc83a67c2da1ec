"""Writes a notification into the outbox: the side effect this application wraps in the idempotent workflow.

Deliberately *not* idempotent by itself: every invocation writes a new row under a random id, with no
condition. Run twice for a key, it writes two rows. So the outbox shows directly what the workflow
guarantees: one row per idempotency key, except where the workflow's documented limits say otherwise
(a response lost after the write, or a lease that ends while the function still runs; see the side-effect
contract in docs/contract.md).

It follows the contract: it reads ``idempotencyKey`` and ``payload`` (and records ``executionId`` and
``attempt``), returns a small JSON object, raises ``NotificationRejectedError`` when the request can never
succeed (the workflow releases the key) and ``OutboxUnavailableError`` when a retry may (the template
passes that name as ``SideEffectTransientError``, so the workflow retries it).
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime
from typing import Any

import boto3
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

OUTBOX_TABLE_ENV = "OUTBOX_TABLE_NAME"
RETRYABLE_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerError"})

_table: Any = None


class NotificationRejectedError(Exception):
    """The request is malformed: not retried, and nothing was written (the workflow releases the key)."""


class OutboxUnavailableError(Exception):
    """The outbox could not be written this time: the workflow retries (its SideEffectTransientError)."""


def _outbox() -> Any:
    global _table
    if _table is None:
        _table = boto3.resource("dynamodb").Table(os.environ[OUTBOX_TABLE_ENV])
    return _table


_TYPES = frozenset({"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"})


def _plain(payload: Any) -> Any:
    """A request row's image as a DynamoDB table's stream delivers it (DynamoDB JSON: {"to": {"S": "..."}}), as
    plain values; any other payload as it is."""
    if (
        isinstance(payload, dict)
        and payload
        and all(isinstance(v, dict) and len(v) == 1 and next(iter(v)) in _TYPES for v in payload.values())
    ):
        deserializer = TypeDeserializer()
        return {k: deserializer.deserialize(v) for k, v in payload.items()}
    return payload


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    payload = _plain(event.get("payload"))
    if not isinstance(payload, dict) or not isinstance(payload.get("to"), str) or not payload["to"]:
        raise NotificationRejectedError(f"payload.to must be a non-empty string, got {payload!r}")
    notification = {
        "notificationId": str(uuid.uuid4()),
        "idempotencyKey": event["idempotencyKey"],
        "to": payload["to"],
        "message": str(payload.get("message", "")),
        "executionId": str(event.get("executionId", "")),
        "attempt": int(event.get("attempt", 0)),
        "sentAt": datetime.now(UTC).isoformat(timespec="milliseconds"),
    }
    try:
        _outbox().put_item(Item=notification)  # no condition: a second invocation writes a second row
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in RETRYABLE_CODES:
            raise OutboxUnavailableError(str(exc)) from exc
        raise
    return {"notificationId": notification["notificationId"], "sentAt": notification["sentAt"]}
