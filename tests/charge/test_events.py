"""Every file in events/ (inputs for the project's template, whose default side effect is the charge) is an
input a user can start an execution with; each one's outcome is pinned here."""

from __future__ import annotations

import json
from pathlib import Path

from idemflow.contract import WorkflowError
from idemflow.engine import Engine
from tests.paths import PROJECT_ROOT

from .side_effect import ledger_rows

EVENTS = PROJECT_ROOT / "events"
# Run in this order on one engine: the duplicate and the reused key follow the sample event's first run.
EXPECTED: dict[str, tuple[str, bool | None]] = {
    "event.json": ("SUCCEEDED", False),
    "duplicate-payment.json": ("SUCCEEDED", True),
    "reused-key-other-amount.json": (WorkflowError.KEY_REUSED, None),
    "unicode-key.json": ("SUCCEEDED", False),
    "invalid-key-missing.json": (WorkflowError.KEY_INVALID, None),
    "invalid-key-empty.json": (WorkflowError.KEY_INVALID, None),
    "invalid-key-not-a-string.json": (WorkflowError.KEY_INVALID, None),
    "invalid-payload-missing.json": (WorkflowError.PAYLOAD_INVALID, None),
    "invalid-payload-null.json": (WorkflowError.PAYLOAD_INVALID, None),
    "payment-fails-validation.json": ("PaymentValidationError", None),
    "payment-unknown-currency.json": ("PaymentValidationError", None),
}


def test_every_event_file_has_a_pinned_outcome() -> None:
    assert {p.name for p in EVENTS.glob("*.json")} == set(EXPECTED)


def test_events_run_with_their_documented_outcomes(engine: Engine) -> None:
    for name, (expected, replayed) in EXPECTED.items():
        execution_input = json.loads(Path(EVENTS / name).read_text())
        outcome = engine.run(execution_input)
        got = outcome.status if outcome.status == "SUCCEEDED" else outcome.error
        assert got == expected, f"{name}: {outcome.status} {outcome.error} {outcome.cause}"
        if replayed is not None:
            assert outcome.replayed is replayed, name
    charges = ledger_rows(engine, "order-2026-0001")
    assert [row["amount"] for row in charges] == [4200]
