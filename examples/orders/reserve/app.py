"""Reserves an order's stock: the side effect of the order's first guarded step.

Deliberately *not* idempotent by itself: every invocation writes a new reservation under a random id, with no
condition. Run twice for an order, it reserves twice. The workflow nested as ``ReserveGuard`` runs it once per
idempotency key (``<orderId>#reserve``).

It follows the side-effect contract (docs/contract.md): it reads ``idempotencyKey`` and ``payload`` (the order's
``orderId`` and ``items``), returns a small JSON object, raises ``ReservationRejectedError`` when the request can
never succeed (the workflow releases the key) and ``StockUnavailableError`` when a retry may (the template passes
that name as ``SideEffectTransientError``).
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import boto3
from botocore.exceptions import ClientError

RESERVATIONS_TABLE_ENV = "RESERVATIONS_TABLE_NAME"
RETRYABLE_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerError"})

_table: Any = None


class ReservationRejectedError(Exception):
    """The order has no items to reserve: not retried, and nothing was written."""


class StockUnavailableError(Exception):
    """The reservation could not be written this time: the workflow retries (its SideEffectTransientError)."""


def _reservations() -> Any:
    global _table
    if _table is None:
        _table = boto3.resource("dynamodb").Table(os.environ[RESERVATIONS_TABLE_ENV])
    return _table


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    payload = event.get("payload") or {}
    items = payload.get("items")
    if not isinstance(items, list) or not items:
        raise ReservationRejectedError("the order has no items to reserve")
    reservation_id = str(uuid.uuid4())
    try:
        _reservations().put_item(
            Item={
                "reservationId": reservation_id,
                "idempotencyKey": event["idempotencyKey"],
                "orderId": str(payload.get("orderId", "")),
                "lines": len(items),
                "executionId": str(event.get("executionId", "")),
            }
        )
    except ClientError as exc:
        if exc.response["Error"]["Code"] in RETRYABLE_CODES:
            raise StockUnavailableError(str(exc)) from exc
        raise
    return {"reservationId": reservation_id, "lines": len(items)}
