"""The two paths that matter most (a first run, a duplicate), refused input and reused keys."""

from __future__ import annotations

import json
from typing import Any

import pytest

from idemflow import keys
from idemflow.contract import RecordStatus, WorkflowError
from idemflow.engine import Engine

from ..side_effects import SideEffect
from .helpers import ANY_PAYLOAD, FUTURE, put_lock, start, stored_result, tasks


# -- the two paths that matter most -----------------------------------------------------------------
def test_first_run_runs_the_side_effect_once_and_completes_the_record(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.output["replayed"] is False
    assert outcome.output["idempotencyKey"] == key
    assert outcome.path == [
        "ValidateInput",
        "DeriveKeys",
        "ReadRecord",
        "CheckRecord",
        "ComputeLease",
        "AcquireLock",
        "CheckLease",
        "RunSideEffect",
        "SaveResult",
        "ReturnResult",
    ]
    assert tasks(engine, outcome.arn, "dynamodb") == ["getItem", "putItem", "updateItem"]
    record = engine.workflow.record(key)
    assert record is not None
    assert record["status"] == RecordStatus.COMPLETED
    assert record["owner"] == outcome.arn
    assert record["fingerprint"] == keys.fingerprint(side_effect.payload)
    assert record["resultStored"] is True
    assert record["leaseExpiresAt"] < record["expiresAt"]
    assert isinstance(record["ttl"], int) and record["ttl"] > 1_700_000_000
    assert outcome.output["result"] == stored_result(engine, key) is not None
    assert engine.workflow.side_effect_runs(key) == 1
    assert side_effect.effects(engine, key) == 1


def test_duplicate_is_served_from_the_record_without_invoking_the_side_effect(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    first = engine.run(start(key, side_effect.payload))
    runs_before = len(engine.workflow.invocations())

    duplicate = engine.run(start(key, side_effect.payload))

    assert duplicate.status == "SUCCEEDED"
    assert duplicate.output == {**first.output, "replayed": True}
    assert len(engine.workflow.invocations()) == runs_before, "the side-effecting function was invoked"
    assert "ComputeLease" not in duplicate.path, "the clock function is on the duplicate path"
    # The cost of a duplicate: 5 state transitions, 1 DynamoDB request (one consistent read) and no
    # Lambda invocation at all.
    assert duplicate.path == ["ValidateInput", "DeriveKeys", "ReadRecord", "CheckRecord", "ReturnCached"]
    assert tasks(engine, duplicate.arn, "dynamodb") == ["getItem"]
    assert tasks(engine, duplicate.arn, "lambda") == []
    assert side_effect.effects(engine, key) == 1


# -- invalid input ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("execution_input", "error"),
    [
        ({"payload": ANY_PAYLOAD}, WorkflowError.KEY_INVALID),
        ({"idempotencyKey": None, "payload": ANY_PAYLOAD}, WorkflowError.KEY_INVALID),
        ({"idempotencyKey": 42, "payload": ANY_PAYLOAD}, WorkflowError.KEY_INVALID),
        ({"idempotencyKey": ["a"], "payload": ANY_PAYLOAD}, WorkflowError.KEY_INVALID),
        ({"idempotencyKey": "", "payload": ANY_PAYLOAD}, WorkflowError.KEY_INVALID),
        # The key grammar (docs/contract.md, "Keys"): whitespace at an end is refused, never trimmed into
        # another key (" k" and "k" would be two records and two side effects).
        ({"idempotencyKey": " order-x", "payload": ANY_PAYLOAD}, WorkflowError.KEY_INVALID),
        ({"idempotencyKey": "order-x ", "payload": ANY_PAYLOAD}, WorkflowError.KEY_INVALID),
        ({"idempotencyKey": "\torder-x", "payload": ANY_PAYLOAD}, WorkflowError.KEY_INVALID),
        ({"idempotencyKey": "order-x\t", "payload": ANY_PAYLOAD}, WorkflowError.KEY_INVALID),
        ({"idempotencyKey": "order-x"}, WorkflowError.PAYLOAD_INVALID),
        ({"idempotencyKey": "order-x", "payload": None}, WorkflowError.PAYLOAD_INVALID),
    ],
)
def test_invalid_input_fails_with_a_named_error_and_writes_nothing(
    engine: Engine, execution_input: dict[str, Any], error: WorkflowError
) -> None:
    records_before = engine.client("dynamodb").scan(TableName=engine.workflow.idempotency_table)["Count"]
    runs_before = len(engine.workflow.invocations())

    outcome = engine.run(execution_input)

    assert outcome.status == "FAILED"
    assert outcome.error == error
    assert outcome.path[0] == "ValidateInput" and len(outcome.path) == 2
    assert engine.client("dynamodb").scan(TableName=engine.workflow.idempotency_table)["Count"] == records_before
    assert len(engine.workflow.invocations()) == runs_before


def test_any_string_key_works_and_is_hashed_like_the_python_derivation(engine: Engine, side_effect: SideEffect) -> None:
    key = "ключ-🔑 with inner spaces/and'quotes\"{}"
    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    record = engine.workflow.record(key)  # looked up by keys.record_key: proves States.Hash agrees with hashlib
    assert record is not None and record["status"] == RecordStatus.COMPLETED
    assert record["id"].startswith(f"{engine.workflow.scope}#") and key not in record["id"]


def test_payload_that_fails_the_functions_validation_fails_named_and_releases_the_lock(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    outcome = engine.run(start(key, side_effect.rejected_payload))

    assert outcome.status == "FAILED"
    assert outcome.error == side_effect.rejected_error
    # The cause is the function's errorMessage alone: its stack trace stays in the history.
    assert outcome.cause and "\n" not in outcome.cause and "stackTrace" not in outcome.cause
    failed = [e for e in engine.history(outcome.arn) if e["type"] == "TaskFailed"]
    raised = json.loads(failed[-1]["taskFailedEventDetails"]["cause"])
    assert outcome.cause == raised["errorMessage"] and raised["stackTrace"]
    assert outcome.path[-4:] == ["ReleaseLock", "ReadFunctionError", "FunctionErrorMessage", "SideEffectFailed"]
    assert engine.workflow.record(key) is None
    assert side_effect.effects(engine, key) == 0


# -- key reuse ---------------------------------------------------------------------------------------
def test_reused_key_with_another_payload_fails_and_leaves_the_record_untouched(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.run(start(key, side_effect.payload))
    record_before = engine.workflow.record(key)
    runs_before = len(engine.workflow.invocations())

    outcome = engine.run(start(key, side_effect.other_payload))

    assert outcome.status == "FAILED"
    assert outcome.error == WorkflowError.KEY_REUSED
    assert engine.workflow.record(key) == record_before
    assert len(engine.workflow.invocations()) == runs_before
    assert side_effect.effects(engine, key) == 1


def test_reused_key_while_the_first_payload_is_in_progress_fails_at_once(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    put_lock(engine, key, side_effect.payload, leaseExpiresAt=FUTURE)

    outcome = engine.run(start(key, side_effect.other_payload))

    assert outcome.error == WorkflowError.KEY_REUSED
    assert "WaitForOwner" not in outcome.path
    assert engine.workflow.record(key)["lockToken"] == "token-of-another-execution"  # type: ignore[index]


# -- non-ASCII payloads ------------------------------------------------------------------------------
def test_a_non_ascii_payload_is_fingerprinted_as_the_client_fingerprints_it(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # 1,600 "é": 9,6xx characters of JSON if States.JsonToString escaped them, inside the client's limit
    # either way. The engine writes them as they are (`json-to-string`), as the client's fingerprint does.
    body = {**side_effect.payload, "note": "é" * 1600}
    keys.check_input(key, body)

    outcome = engine.run({"idempotencyKey": key, "payload": body})

    assert outcome.status == "SUCCEEDED", outcome.cause
    record = engine.workflow.record(key)
    assert record is not None and record["fingerprint"] == keys.fingerprint(body)


def test_a_payload_whose_escaped_json_exceeds_the_hash_limit_is_refused_before_a_start(
    key: str, side_effect: SideEffect
) -> None:
    # 2,000 "é" are 2,0xx characters written as they are but 12,0xx escaped: were AWS to escape them,
    # DeriveKeys would fail with States.Runtime (uncatchable); the client refuses the payload by name.
    with pytest.raises(keys.IdempotencyPayloadInvalidError, match="non-ASCII counted as"):
        keys.check_input(key, {**side_effect.payload, "note": "é" * 2000})
    keys.check_input(key, {**side_effect.payload, "note": "é" * 1600})
