"""The charge example (``functions/charge``, the function template.yaml deploys when SideEffectFunctionArn is
empty) as the workflow's generic tests see it (tests/functional/side_effects.py finds this module).

It guards itself: Powertools' ``idempotent_function`` on the key and a ledger write conditioned on the key,
so a second invocation for a key charges nothing more. Its effects are its ledger rows.
"""

from __future__ import annotations

from typing import Any

from functions.charge import app
from idemflow.contract import sample_payload
from idemflow.engine import Engine
from tests.paths import TEMPLATE_PATH


def payment(amount: int = 4200, currency: str = "EUR", customer: str = "cust-1") -> dict[str, Any]:
    return {"customerId": customer, "amount": amount, "currency": currency}


def ledger_rows(engine: Engine, idempotency_key: str | None = None) -> list[dict[str, Any]]:
    """The charges in the ledger, read from the table the function's environment names (for one key, when
    given: the ledger's partition key is the idempotency key)."""
    stack = engine.stack
    assert stack is not None, "start the engine first"
    name = stack.side_effect_function().environment[app.LEDGER_TABLE_ENV]
    table = next(t for t in stack.tables.values() if t.name == name)
    rows = engine.tables.items(table.name)
    return [r for r in rows if idempotency_key is None or r.get(table.partition_key) == idempotency_key]


NAME = "charge"
TEMPLATE = TEMPLATE_PATH
PAYLOAD = sample_payload(TEMPLATE_PATH)
OTHER_PAYLOAD = {**PAYLOAD, "amount": PAYLOAD["amount"] + 5700}
REJECTED_PAYLOAD = {**PAYLOAD, "amount": 0}
REJECTED_ERROR = app.PaymentValidationError.__name__
GUARDED = True


def effects(engine: Engine, key: str) -> int:
    return len(ledger_rows(engine, key))
