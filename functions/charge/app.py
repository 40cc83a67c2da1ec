"""Charges a payment at most once per idempotency key: the workflow's side effect.

The state machine lets one execution at a time run this function for a key and replays the stored
result to duplicates, but it also *retries* this function: after a timeout, or after a response that
was lost on the way back (the charge happened, the workflow never heard of it). So the function is
idempotent on its own, in two layers that fail differently:

* Powertools idempotency replays the first result from the idempotency table (its records are keyed
  ``<function name>.<module>.<function>#<md5>``, never colliding with the workflow's ``payments#...``)
  and rejects a key reused with another payload. Its record is only a cache, though: it expires, it is
  deleted when an attempt fails, and its key changes with the function's name.
* The ledger write *is* the charge, and it is conditional on the charge id being new. Whatever happened
  to the Powertools record, a key is charged once; a duplicate gets the existing charge back.

Input is validated before either layer is touched, so a bad request writes nothing. The request is plain
JSON, or a table item's new image in DynamoDB JSON (the table stream door's payload), read as the same
request. Errors are named classes because Lambda reports the class name as errorType: the state machine
retries ``PaymentProviderUnavailableError`` and nothing else of ours.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.idempotency import (
    BasePersistenceLayer,
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyInconsistentStateError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotocoreConnectionError

IDEMPOTENCY_TABLE_ENV = "IDEMPOTENCY_TABLE_NAME"
IDEMPOTENCY_WINDOW_ENV = "IDEMPOTENCY_WINDOW_SECONDS"
LEDGER_TABLE_ENV = "LEDGER_TABLE_NAME"

CURRENCIES = frozenset({"EUR", "USD", "GBP", "JPY", "CHF", "CAD", "AUD", "SEK", "NOK", "DKK", "PLN"})
MAX_KEY_LENGTH = 255  # the workflow's limit (idemflow.contract.MAX_KEY_LENGTH); the key is the ledger's key
MAX_CUSTOMER_ID_LENGTH = 64
CHARGED = "CHARGED"

# Throttling and server-side failures: nothing was written, or a conditional write was, so a retry
# is safe. Connection failures (refused, closed, timed out) likewise.
TRANSIENT_ERROR_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
    }
)

CONNECTION_ERRORS = (BotocoreConnectionError, HTTPClientError)

logger = Logger()
tracer = Tracer()
metrics = Metrics()


class PaymentError(Exception):
    """Base of this function's errors; the subclass name is the errorType the workflow sees."""


class PaymentValidationError(PaymentError):
    """The request is malformed. Not retryable: the same input fails the same way."""


class PaymentConflictError(PaymentError):
    """The key was already used for a different charge. Not retryable."""


class PaymentProviderUnavailableError(PaymentError):
    """A transient failure (throttling, 5xx, connection). The workflow retries on this exact name."""


class ChargeConfigurationError(RuntimeError):
    """The function's environment is incomplete (a deployment error, not a request error)."""


@dataclass(frozen=True)
class ChargeRequest:
    idempotency_key: str
    customer_id: str
    amount: int
    """In minor units (cents; yen for JPY)."""
    currency: str
    execution_id: str | None = None
    attempt: int = 0

    @classmethod
    def from_event(cls, event: Any) -> ChargeRequest:
        if not isinstance(event, dict):
            raise PaymentValidationError(f"event must be a JSON object, got {type(event).__name__}")
        payload = event.get("payload")
        if not isinstance(payload, dict):
            raise PaymentValidationError(f"payload must be a JSON object, got {payload!r}")
        payload = _from_image(payload)
        execution_id = event.get("executionId")
        if execution_id is not None:
            execution_id = _text(execution_id, "executionId", 2048)
        attempt = event.get("attempt", 0)
        if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 0:
            raise PaymentValidationError(f"attempt must be a non-negative integer, got {attempt!r}")
        return cls(
            idempotency_key=_text(event.get("idempotencyKey"), "idempotencyKey", MAX_KEY_LENGTH),
            customer_id=_text(payload.get("customerId"), "payload.customerId", MAX_CUSTOMER_ID_LENGTH),
            amount=_amount(payload.get("amount")),
            currency=_currency(payload.get("currency")),
            execution_id=execution_id,
            attempt=attempt,
        )


IMAGE_TYPES = frozenset({"S", "N", "B", "BOOL", "NULL", "M", "L", "SS", "NS", "BS"})
"""DynamoDB JSON's type descriptors (DynamoDB developer guide, "Supported data types")."""


def _from_image(payload: dict[str, Any]) -> dict[str, Any]:
    """A table item's new image in DynamoDB JSON (``{"amount": {"N": "4200"}}``), which the table stream door
    hands over as the payload (docs/doors.md, "A table's stream: the transactional outbox"), as the plain JSON
    the other doors bring (a whole number as an int); any other payload as it is. An image is a payload whose
    every value is one typed value: a plain request's customerId is a string, never an object."""
    if not payload or not all(
        isinstance(value, dict) and len(value) == 1 and next(iter(value)) in IMAGE_TYPES for value in payload.values()
    ):
        return payload
    try:
        plain = {name: TypeDeserializer().deserialize(value) for name, value in payload.items()}
    except (TypeError, ValueError, ArithmeticError) as exc:  # {"N": "x"}: decimal.InvalidOperation
        raise PaymentValidationError(f"payload is a table item's image that cannot be read: {exc}") from None
    return {
        name: int(value) if isinstance(value, Decimal) and value == value.to_integral_value() else value
        for name, value in plain.items()
    }


def _text(value: Any, name: str, max_length: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PaymentValidationError(f"{name} must be a non-empty string, got {value!r}")
    if len(value) > max_length:
        raise PaymentValidationError(f"{name} must be at most {max_length} characters, got {len(value)}")
    return value


def _amount(value: Any) -> int:
    # bool is an int in Python, and a float amount means someone forgot the minor units.
    if isinstance(value, bool) or not isinstance(value, int):
        raise PaymentValidationError(f"payload.amount must be an integer in minor units, got {value!r}")
    if value <= 0:
        raise PaymentValidationError(f"payload.amount must be positive, got {value}")
    return value


def _currency(value: Any) -> str:
    if value not in CURRENCIES:
        raise PaymentValidationError(f"payload.currency must be one of {sorted(CURRENCIES)}, got {value!r}")
    return str(value)


# --- AWS handles: built on first use, so that env is read at call time, not at import time. ---


@dataclass
class Dependencies:
    ledger_table: Any = None
    """A boto3 DynamoDB ``Table`` resource."""
    persistence_store: BasePersistenceLayer | None = None
    idempotency_config: IdempotencyConfig | None = None


_deps = Dependencies()


def configure(
    *,
    ledger_table: Any = None,
    persistence_store: BasePersistenceLayer | None = None,
    idempotency_config: IdempotencyConfig | None = None,
) -> None:
    """Inject handles (tests, or another session); what is not given is still built from env."""
    if ledger_table is not None:
        _deps.ledger_table = ledger_table
    if persistence_store is not None:
        _deps.persistence_store = persistence_store
    if idempotency_config is not None:
        _deps.idempotency_config = idempotency_config


def reset() -> None:
    """Forget every handle; the next invocation builds them again from env."""
    global _deps
    _deps = Dependencies()


def _env(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise ChargeConfigurationError(f"environment variable {name} must be set")
    return value


def ledger_table() -> Any:
    if _deps.ledger_table is None:
        _deps.ledger_table = boto3.resource("dynamodb").Table(_env(LEDGER_TABLE_ENV))
    return _deps.ledger_table


def persistence_store() -> BasePersistenceLayer:
    if _deps.persistence_store is None:
        # A client of boto3's default session, the ledger's: left to itself, the persistence layer makes a
        # session of its own, which loads DynamoDB's model and the endpoint rules again at each cold start.
        _deps.persistence_store = DynamoDBPersistenceLayer(
            table_name=_env(IDEMPOTENCY_TABLE_ENV),
            key_attr="id",
            expiry_attr="ttl",
            boto3_client=boto3.client("dynamodb"),
        )
    return _deps.persistence_store


def idempotency_config() -> IdempotencyConfig:
    if _deps.idempotency_config is None:
        raw = _env(IDEMPOTENCY_WINDOW_ENV)
        if not raw.isdigit() or int(raw) <= 0:
            raise ChargeConfigurationError(f"{IDEMPOTENCY_WINDOW_ENV} must be a positive integer: {raw!r}")
        _deps.idempotency_config = IdempotencyConfig(
            event_key_jmespath="idempotencyKey",
            payload_validation_jmespath="payload",
            expires_after_seconds=int(raw),
            raise_on_no_idempotency_key=True,
            response_hook=_replayed,
        )
    return _deps.idempotency_config


# --- The charge. ---


def _error_code(exc: Exception) -> str:
    return str(exc.response.get("Error", {}).get("Code", "")) if isinstance(exc, ClientError) else ""


def _is_transient(exc: BaseException | None) -> bool:
    if isinstance(exc, CONNECTION_ERRORS):
        return True
    if isinstance(exc, ClientError):
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
        return _error_code(exc) in TRANSIENT_ERROR_CODES or status >= 500
    return False


def _result(item: dict[str, Any]) -> dict[str, Any]:
    # Built from the ledger row (DynamoDB numbers come back as Decimal), so that a first charge and a
    # duplicate found in the ledger return the very same dict.
    return {
        "chargeId": str(item["chargeId"]),
        "status": CHARGED,
        "customerId": str(item["customerId"]),
        "amount": int(item["amount"]),
        "currency": str(item["currency"]),
        "chargedAt": str(item["chargedAt"]),
    }


def _now() -> str:
    moment = datetime.now(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _replayed(response: Any, idempotent_data: DataRecord) -> Any:
    metrics.add_metric(name="DuplicateReplayed", unit=MetricUnit.Count, value=1)
    logger.info("Duplicate: replaying the stored result", extra={"layer": "powertools"})
    return response


@tracer.capture_method
def _charge(*, event: dict[str, Any], request: ChargeRequest) -> dict[str, Any]:
    """The side effect. ``event`` is what Powertools hashes (key and payload); ``request`` is what we use."""
    item: dict[str, Any] = {
        "chargeId": request.idempotency_key,
        "customerId": request.customer_id,
        "amount": request.amount,
        "currency": request.currency,
        "chargedAt": _now(),
    }
    if request.execution_id is not None:
        item["executionId"] = request.execution_id
    table = ledger_table()
    try:
        table.put_item(Item=item, ConditionExpression="attribute_not_exists(chargeId)")
    except (ClientError, *CONNECTION_ERRORS) as exc:
        if _error_code(exc) != "ConditionalCheckFailedException":
            if _is_transient(exc):
                raise PaymentProviderUnavailableError(f"ledger unavailable while charging: {exc}") from exc
            raise
    else:
        metrics.add_metric(name="ChargeCreated", unit=MetricUnit.Count, value=1)
        logger.info("Charged", extra={"amount": request.amount, "currency": request.currency})
        return _result(item)
    return _existing_charge(table, request)


def _existing_charge(table: Any, request: ChargeRequest) -> dict[str, Any]:
    # Only reached when the Powertools record was missing (expired, deleted after a failed attempt
    # whose charge had landed, or a renamed function): the ledger is the last line against a double charge.
    try:
        found = table.get_item(Key={"chargeId": request.idempotency_key}, ConsistentRead=True).get("Item")
    except (ClientError, *CONNECTION_ERRORS) as exc:
        if _is_transient(exc):
            raise PaymentProviderUnavailableError(f"ledger unavailable while reading: {exc}") from exc
        raise
    if found is None:  # The ledger never deletes; a row that failed the condition cannot vanish for long.
        raise PaymentProviderUnavailableError("ledger rejected the charge as a duplicate but has no such row")
    existing = _result(found)
    if (existing["customerId"], existing["amount"], existing["currency"]) != (
        request.customer_id,
        request.amount,
        request.currency,
    ):
        raise PaymentConflictError(
            f"idempotencyKey {request.idempotency_key!r} already charged "
            f"{existing['amount']} {existing['currency']} to {existing['customerId']!r}"
        )
    metrics.add_metric(name="DuplicateCaughtByLedger", unit=MetricUnit.Count, value=1)
    logger.warning("Duplicate: the ledger already holds this charge", extra={"layer": "ledger"})
    return existing


@metrics.log_metrics(raise_on_empty_metrics=False)
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext | None) -> dict[str, Any]:
    key = event.get("idempotencyKey") if isinstance(event, dict) else None
    logger.set_correlation_id(key if isinstance(key, str) else None)  # also clears the previous one
    request = ChargeRequest.from_event(event)
    config = idempotency_config()
    if context is not None:
        # Without it a crashed attempt's record stays IN_PROGRESS for the whole window, not until timeout.
        config.register_lambda_context(context)
    charge_once = idempotent_function(
        data_keyword_argument="event", persistence_store=persistence_store(), config=config
    )(_charge)
    try:
        result: dict[str, Any] = charge_once(event=event, request=request)
    except IdempotencyValidationError as exc:
        raise PaymentConflictError(
            f"idempotencyKey {request.idempotency_key!r} was already used with a different payload"
        ) from exc
    except (IdempotencyPersistenceLayerError, IdempotencyInconsistentStateError) as exc:
        # Powertools wraps its store's failures; a throttled idempotency table is as transient as the ledger.
        if isinstance(exc, IdempotencyInconsistentStateError) or _is_transient(exc.__cause__):
            raise PaymentProviderUnavailableError(f"idempotency store unavailable: {exc}") from exc
        raise
    return result
