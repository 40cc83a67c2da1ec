"""What the charge leaves in its ledger when the workflow wraps it (the workflow's own paths are proven for
every side effect in tests/functional/workflow/): a charge per key, for the amount of the request
that ran, whatever duplicates, reused keys and lost responses came after."""

from __future__ import annotations

import json
from typing import Any

from idemflow.contract import WorkflowError
from idemflow.engine import Engine
from tests.paths import PROJECT_ROOT

from .side_effect import OTHER_PAYLOAD, PAYLOAD, REJECTED_ERROR, REJECTED_PAYLOAD, ledger_rows


def start(key: str, payload: Any) -> dict[str, Any]:
    return {"idempotencyKey": key, "payload": payload}


def test_a_first_run_and_its_duplicate_charge_the_requested_amount_once(engine: Engine, key: str) -> None:
    first = engine.run(start(key, PAYLOAD))
    duplicate = engine.run(start(key, PAYLOAD))

    assert first.status == duplicate.status == "SUCCEEDED", first.cause
    charge = first.output["result"]
    assert (charge["chargeId"], charge["status"], charge["amount"]) == (key, "CHARGED", PAYLOAD["amount"])
    assert duplicate.output["result"] == charge
    (row,) = ledger_rows(engine, key)
    assert (row["amount"], row["currency"], row["customerId"]) == (
        PAYLOAD["amount"],
        PAYLOAD["currency"],
        PAYLOAD["customerId"],
    )


def test_a_reused_key_keeps_the_first_amount(engine: Engine, key: str) -> None:
    engine.run(start(key, PAYLOAD))

    reused = engine.run(start(key, OTHER_PAYLOAD))

    assert reused.error == WorkflowError.KEY_REUSED
    assert [row["amount"] for row in ledger_rows(engine, key)] == [PAYLOAD["amount"]]


def test_an_invalid_amount_is_refused_by_name_and_charges_nothing(engine: Engine, key: str) -> None:
    outcome = engine.run(start(key, REJECTED_PAYLOAD))

    assert outcome.error == REJECTED_ERROR and "amount" in (outcome.cause or "")
    assert ledger_rows(engine, key) == [] and engine.workflow.record(key) is None


def test_a_lost_response_runs_the_handler_twice_and_charges_once(engine: Engine, key: str) -> None:
    engine.faults.lose_response_next(engine.workflow.side_effect_function)

    outcome = engine.run(start(key, PAYLOAD))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert engine.workflow.side_effect_runs(key) == 2
    assert len(ledger_rows(engine, key)) == 1


def test_the_mock_configs_side_effect_result_is_what_the_charge_returns_for_its_test_input(
    engine: Engine,
) -> None:
    # statemachine/MockConfigFile.json stands in for the charge in Step Functions Local test cases: its
    # mocked result (and the record that replays it) must be what the real charge returns for the input
    # the cases start with, the time of the charge aside.
    config = json.loads((PROJECT_ROOT / "statemachine" / "MockConfigFile.json").read_text(encoding="utf-8"))
    mocked = config["MockedResponses"]["RunSideEffectSucceeded"]["0"]["Return"]["Payload"]
    key = mocked["chargeId"]

    real = engine.run(start(key, PAYLOAD)).output["result"]

    assert {k: v for k, v in mocked.items() if k != "chargedAt"} == {k: v for k, v in real.items() if k != "chargedAt"}


def test_a_key_whose_records_are_gone_is_charged_once_the_ledger_answers_the_second_run(
    engine: Engine, key: str
) -> None:
    # Both records are caches the ledger outlives (they expire; a renamed function has new Powertools keys): the
    # second run finds neither, charges again, the ledger's conditional write refuses it and its row is read back.
    first = engine.run(start(key, PAYLOAD))
    table = engine.workflow.idempotency_table
    gone = {item["id"] for item in engine.tables.items(table) if key in json.dumps(item, default=str)}
    assert len(gone) == 2, "the workflow's record and the function's Powertools record"
    engine.tables.delete(table, {k for k in engine.tables.keys(table) if k[0][2] in gone})

    again = engine.run(start(key, PAYLOAD))

    assert again.status == "SUCCEEDED", again.cause
    assert engine.workflow.side_effect_runs(key) == 2
    assert again.output["result"] == first.output["result"]
    assert len(ledger_rows(engine, key)) == 1
