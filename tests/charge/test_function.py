"""The charge function on moto: a key is charged once, whichever layer catches the duplicate.

Tables are built from template.yaml's own properties, so a key schema change there is tested here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError
from moto import mock_aws

from functions.charge import app
from idemflow.contract import IDEMPOTENCY_TABLE_LOGICAL_ID, MAX_KEY_LENGTH
from idemflow.engine.stack import resolve_stack
from tests.paths import PROJECT_ROOT
from tests.unit._template import create_table_kwargs, properties, template

# A failed invocation has no metric to flush; Powertools warns about it, which is expected here.
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

# The charge function is the side effect the template deploys by default; its ledger is the table its
# environment names (both found in template.yaml, never copied here).
CHARGE_FUNCTION_LOGICAL_ID = resolve_stack().side_effect_function().logical_id
LEDGER_TABLE_LOGICAL_ID = properties(CHARGE_FUNCTION_LOGICAL_ID)["Environment"]["Variables"][app.LEDGER_TABLE_ENV][
    "Ref"
]
IDEMPOTENCY_TABLE = "test-idempotency"
LEDGER_TABLE = "test-ledger"
FUNCTION_NAME = "idemflow-ChargeFunction-abc123"
WINDOW_SECONDS = 3600
PAYLOAD = {"customerId": "cust-1", "amount": 4200, "currency": "EUR"}


@dataclass
class FakeContext:
    function_name: str = FUNCTION_NAME
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = f"arn:aws:lambda:us-east-1:123456789012:function:{FUNCTION_NAME}"
    aws_request_id: str = "6f1c2a5e-0000-4000-8000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 10_000


def charge_event(key: str = "order-1", attempt: int = 0, **payload: Any) -> dict[str, Any]:
    return {
        "idempotencyKey": key,
        "payload": {**PAYLOAD, **payload},
        "executionId": f"arn:aws:states:us-east-1:123456789012:execution:flow:run-{attempt}",
        "attempt": attempt,
    }


@pytest.fixture
def ddb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    env = {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_LAMBDA_FUNCTION_NAME": FUNCTION_NAME,  # what Powertools prefixes its keys with
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "IdempotentWorkflowTest",
        "IDEMPOTENCY_TABLE_NAME": IDEMPOTENCY_TABLE,
        "IDEMPOTENCY_WINDOW_SECONDS": str(WINDOW_SECONDS),
        "LEDGER_TABLE_NAME": LEDGER_TABLE,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    # Metrics read the namespace at import, which here happened before the env above was set.
    monkeypatch.setattr(app.metrics, "namespace", env["POWERTOOLS_METRICS_NAMESPACE"])
    app.reset()
    with mock_aws():
        resource = boto3.resource("dynamodb")
        resource.create_table(**create_table_kwargs(IDEMPOTENCY_TABLE_LOGICAL_ID, IDEMPOTENCY_TABLE))
        resource.create_table(**create_table_kwargs(LEDGER_TABLE_LOGICAL_ID, LEDGER_TABLE))
        yield resource
    app.reset()


def ledger_rows(ddb: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = ddb.Table(LEDGER_TABLE).scan(ConsistentRead=True)["Items"]
    return rows


def idempotency_records(ddb: Any) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = ddb.Table(IDEMPOTENCY_TABLE).scan(ConsistentRead=True)["Items"]
    return records


def delete_idempotency_records(ddb: Any) -> None:
    for record in idempotency_records(ddb):
        ddb.Table(IDEMPOTENCY_TABLE).delete_item(Key={"id": record["id"]})


def emitted_metrics(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Names of the metrics flushed (as EMF on stdout) since the last call."""
    names: list[str] = []
    for line in capsys.readouterr().out.splitlines():
        blob = json.loads(line) if line.startswith("{") else {}
        for directive in blob.get("_aws", {}).get("CloudWatchMetrics", []):
            names += [metric["Name"] for metric in directive["Metrics"]]
    return names


def failing(exc: Exception) -> Callable[..., Any]:
    def raise_it(*args: Any, **kwargs: Any) -> Any:
        raise exc

    return raise_it


def client_error(code: str, status: int = 400) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "PutItem"
    )


def test_first_charge_writes_one_ledger_row_and_returns_it(ddb: Any, capsys: pytest.CaptureFixture[str]) -> None:
    result = app.lambda_handler(charge_event(), FakeContext())

    assert result == {
        "chargeId": "order-1",
        "status": "CHARGED",
        "customerId": "cust-1",
        "amount": 4200,
        "currency": "EUR",
        "chargedAt": result["chargedAt"],
    }
    assert result["chargedAt"].endswith("Z")
    json.dumps(result)  # the workflow stores it as JSON
    [row] = ledger_rows(ddb)
    assert row["chargeId"] == "order-1"
    assert row["amount"] == Decimal(4200)
    assert row["currency"] == "EUR"
    assert row["customerId"] == "cust-1"
    assert row["executionId"].endswith("run-0")
    assert emitted_metrics(capsys) == ["ChargeCreated"]


def test_a_table_items_image_is_charged_as_its_plain_request(ddb: Any) -> None:
    # The table stream door's payload is the item's new image in DynamoDB JSON (docs/doors.md): the charge reads
    # it as the request it holds, its numbers as DynamoDB writes them (text) and the item's own key beside them.
    image = {
        "customerId": {"S": "cust-1"},
        "amount": {"N": "4200"},
        "currency": {"S": "EUR"},
        "idempotencyKey": {"S": "order-7"},
    }
    event = {**charge_event(), "payload": image}

    result = app.lambda_handler(event, FakeContext())

    assert (result["customerId"], result["amount"], result["currency"]) == ("cust-1", 4200, "EUR")
    [row] = ledger_rows(ddb)
    assert (row["customerId"], row["amount"], row["currency"]) == ("cust-1", Decimal(4200), "EUR")


@pytest.mark.parametrize(
    ("image", "field"),
    [
        ({"customerId": {"S": "cust-1"}, "amount": {"N": "42.5"}, "currency": {"S": "EUR"}}, "amount"),
        ({"customerId": {"S": "cust-1"}, "amount": {"N": "-5"}, "currency": {"S": "EUR"}}, "amount"),
        ({"customerId": {"N": "7"}, "amount": {"N": "4200"}, "currency": {"S": "EUR"}}, "customerId"),
        ({"customerId": {"S": "cust-1"}, "amount": {"N": "4200"}}, "currency"),
        # Not an image (one value is plain): read as it is, so the typed amount is refused.
        ({"customerId": "cust-1", "amount": {"N": "4200"}, "currency": "EUR"}, "amount"),
    ],
)
def test_a_table_items_image_is_validated_as_a_plain_request(ddb: Any, image: dict[str, Any], field: str) -> None:
    with pytest.raises(app.PaymentValidationError, match=field):
        app.lambda_handler({**charge_event(), "payload": image}, FakeContext())

    assert ledger_rows(ddb) == [] and idempotency_records(ddb) == []


def test_retry_after_lost_response_replays_the_powertools_record(
    ddb: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first = app.lambda_handler(charge_event(attempt=0), FakeContext())
    capsys.readouterr()
    # Proof that the ledger is not even asked: a second write would fail the test.
    monkeypatch.setattr(app.ledger_table(), "put_item", failing(AssertionError("ledger written twice")))

    again = app.lambda_handler(charge_event(attempt=1), FakeContext())

    assert again == first
    assert len(ledger_rows(ddb)) == 1
    assert emitted_metrics(capsys) == ["DuplicateReplayed"]
    [record] = idempotency_records(ddb)
    assert record["id"].startswith(f"{FUNCTION_NAME}.")
    assert not record["id"].startswith("payments#")
    assert record["status"] == "COMPLETED"
    assert json.loads(record["data"]) == first
    # Expiry in the attribute the template's TTL deletes by, after the configured window.
    ttl_attribute = properties(IDEMPOTENCY_TABLE_LOGICAL_ID)["TimeToLiveSpecification"]["AttributeName"]
    assert abs(int(record[ttl_attribute]) - (time.time() + WINDOW_SECONDS)) < 60


def test_ledger_condition_alone_prevents_a_double_charge(ddb: Any, capsys: pytest.CaptureFixture[str]) -> None:
    first = app.lambda_handler(charge_event(attempt=0), FakeContext())
    delete_idempotency_records(ddb)  # expired, or deleted after a failed attempt whose charge landed
    capsys.readouterr()

    again = app.lambda_handler(charge_event(attempt=1), FakeContext())

    assert again == first
    [row] = ledger_rows(ddb)
    assert row["executionId"].endswith("run-0"), "the original charge was not overwritten"
    assert emitted_metrics(capsys) == ["DuplicateCaughtByLedger"]
    [record] = idempotency_records(ddb)
    assert record["status"] == "COMPLETED"


@pytest.mark.parametrize("powertools_record", ["kept", "gone"])
def test_same_key_with_another_amount_is_a_conflict(ddb: Any, powertools_record: str) -> None:
    app.lambda_handler(charge_event(), FakeContext())
    if powertools_record == "gone":
        delete_idempotency_records(ddb)

    with pytest.raises(app.PaymentConflictError) as raised:
        app.lambda_handler(charge_event(amount=9900), FakeContext())

    assert type(raised.value).__name__ == "PaymentConflictError"
    assert "order-1" in str(raised.value)
    [row] = ledger_rows(ddb)
    assert row["amount"] == Decimal(4200)
    assert all(record["status"] == "COMPLETED" for record in idempotency_records(ddb))


def _without(field: str) -> dict[str, Any]:
    event = charge_event()
    del event["payload"][field]
    return event


@pytest.mark.parametrize(
    ("event", "field"),
    [
        (_without("customerId"), "customerId"),
        (charge_event(customerId=""), "customerId"),
        (charge_event(customerId="c" * 65), "customerId"),
        (charge_event(amount=0), "amount"),
        (charge_event(amount=-5), "amount"),
        (charge_event(amount="42"), "amount"),
        (charge_event(amount=4.2), "amount"),
        (charge_event(amount=True), "amount"),
        (_without("amount"), "amount"),
        (charge_event(currency="XYZ"), "currency"),
        (charge_event(currency="eur"), "currency"),
        (charge_event(key=""), "idempotencyKey"),
        (charge_event(key="k" * (MAX_KEY_LENGTH + 1)), "idempotencyKey"),
        ({"payload": PAYLOAD}, "idempotencyKey"),
        ({"idempotencyKey": "order-1", "payload": None}, "payload"),
        ({**charge_event(), "attempt": "1"}, "attempt"),
    ],
)
def test_invalid_input_is_rejected_before_anything_is_written(ddb: Any, event: dict[str, Any], field: str) -> None:
    with pytest.raises(app.PaymentValidationError, match=field):
        app.lambda_handler(event, FakeContext())

    assert ledger_rows(ddb) == []
    assert idempotency_records(ddb) == []  # not even an IN_PROGRESS record to wait for


@pytest.mark.parametrize(
    "failure",
    [
        client_error("ProvisionedThroughputExceededException"),
        client_error("ThrottlingException"),
        client_error("RequestLimitExceeded"),
        client_error("InternalServerError", 500),
        EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com"),
        ConnectionClosedError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com"),
    ],
    ids=["throughput", "throttling", "request-limit", "5xx", "endpoint", "connection-closed"],
)
def test_transient_ledger_failure_is_the_declared_retryable_error_and_a_retry_charges_once(
    ddb: Any, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    table = app.ledger_table()
    with monkeypatch.context() as patch:
        patch.setattr(table, "put_item", failing(failure))
        with pytest.raises(app.PaymentProviderUnavailableError) as raised:
            app.lambda_handler(charge_event(), FakeContext())

    # The exact name the state machine retries on (template parameter SideEffectTransientError).
    default = template()["Parameters"]["SideEffectTransientError"]["Default"]
    assert type(raised.value).__name__ == default
    assert ledger_rows(ddb) == []
    assert idempotency_records(ddb) == [], "Powertools must delete its IN_PROGRESS record on failure"

    result = app.lambda_handler(charge_event(attempt=1), FakeContext())

    assert result["status"] == "CHARGED"
    assert len(ledger_rows(ddb)) == 1


def test_a_non_transient_ledger_failure_is_not_retryable(ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app.ledger_table(), "put_item", failing(client_error("AccessDeniedException")))

    with pytest.raises(ClientError) as raised:
        app.lambda_handler(charge_event(), FakeContext())

    assert not isinstance(raised.value, app.PaymentProviderUnavailableError)
    assert idempotency_records(ddb) == []


def test_a_throttled_idempotency_store_is_retryable_and_charges_nothing(
    ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = app.persistence_store()
    assert isinstance(store, DynamoDBPersistenceLayer)
    monkeypatch.setattr(store.client, "put_item", failing(client_error("ThrottlingException")))

    with pytest.raises(app.PaymentProviderUnavailableError):
        app.lambda_handler(charge_event(), FakeContext())

    assert ledger_rows(ddb) == []


def test_the_idempotency_store_makes_no_boto3_session_of_its_own(ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # A new session loads DynamoDB's model and the endpoint rules again, at each cold start. The store takes a
    # client of boto3's default session, the ledger's.
    app.ledger_table()
    made: list[Any] = []
    init = boto3.session.Session.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        init(self, *args, **kwargs)

    monkeypatch.setattr(boto3.session.Session, "__init__", counted)
    store = app.persistence_store()

    assert isinstance(store, DynamoDBPersistenceLayer)
    assert made == []
    assert store.client is not app.ledger_table().meta.client  # its user agent names the idempotency utility


@pytest.mark.filterwarnings("ignore:Couldn't determine the remaining time left")
def test_runs_without_a_lambda_context(ddb: Any) -> None:
    assert app.lambda_handler(charge_event(), None)["status"] == "CHARGED"
    assert len(ledger_rows(ddb)) == 1


def test_injected_ledger_table_is_used_instead_of_env(ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEDGER_TABLE_NAME", "no-such-table")
    ddb.create_table(**create_table_kwargs(LEDGER_TABLE_LOGICAL_ID, "injected-ledger"))
    app.configure(ledger_table=ddb.Table("injected-ledger"))

    app.lambda_handler(charge_event(), FakeContext())

    assert len(ddb.Table("injected-ledger").scan()["Items"]) == 1


def test_missing_environment_is_named(ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IDEMPOTENCY_TABLE_NAME")

    with pytest.raises(app.ChargeConfigurationError, match="IDEMPOTENCY_TABLE_NAME"):
        app.lambda_handler(charge_event(), FakeContext())


def test_template_gives_the_function_every_variable_it_reads() -> None:
    variables = {
        **template()["Globals"]["Function"]["Environment"]["Variables"],
        **properties(CHARGE_FUNCTION_LOGICAL_ID)["Environment"]["Variables"],
    }
    assert {
        app.IDEMPOTENCY_TABLE_ENV,
        app.IDEMPOTENCY_WINDOW_ENV,
        app.LEDGER_TABLE_ENV,
        "POWERTOOLS_SERVICE_NAME",
        "POWERTOOLS_METRICS_NAMESPACE",
    } <= set(variables)
    assert app.MAX_KEY_LENGTH == MAX_KEY_LENGTH


def test_imports_without_any_environment() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POWERTOOLS_", "IDEMPOTENCY_"))}
    env.pop("LEDGER_TABLE_NAME", None)
    subprocess.run([sys.executable, "-c", "import functions.charge.app"], cwd=PROJECT_ROOT, env=env, check=True)
