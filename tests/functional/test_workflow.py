"""Every path of the state machine, on the embedded engine, from the real templates and definition.

The module runs once per side effect (tests/functional/side_effects.py): one that guards itself and one
that does not. Each test asserts the execution's outcome, the idempotency record's final state, how many
times the side effect's handler ran (the local Lambda runtime counts them) and how many effects it left
for the key (in its own table).
"""

from __future__ import annotations

import datetime
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from idemflow import keys
from idemflow.contract import MAX_STATE_PAYLOAD_BYTES, STILL_RUNNING_ERROR, RecordStatus, WorkflowError
from idemflow.engine import Engine, patches

from .side_effects import DECLINED, SIDE_EFFECTS, SideEffect

ANY_PAYLOAD = {"note": "refused before the side effect"}


@pytest.fixture(scope="module")
def engine(side_effect: SideEffect) -> Iterator[Engine]:
    with Engine(side_effect.template, wait_time_scale=0) as running:
        yield running


def stored_result(engine: Engine, key: str) -> Any:
    record = engine.record(key)
    assert record is not None and "result" in record, record
    return json.loads(record["result"])


def start(key: str, body: Any) -> dict[str, Any]:
    return {"idempotencyKey": key, "payload": body}


def tasks(engine: Engine, arn: str, resource_type: str) -> list[str]:
    """The task calls an execution made, e.g. ``["putItem", "getItem"]`` for resource type dynamodb."""
    return [
        e["taskScheduledEventDetails"]["resource"]
        for e in engine.history(arn)
        if "taskScheduledEventDetails" in e and e["taskScheduledEventDetails"]["resourceType"] == resource_type
    ]


def set_record(engine: Engine, key: str, **fields: str | None) -> None:
    """Change a record as another actor (or the passing of time) would."""
    record_key = keys.record_key(engine.scope, key)
    ddb = engine.client("dynamodb")
    for name, value in fields.items():
        if value is None:
            ddb.update_item(
                TableName=engine.idempotency_table,
                Key={"id": {"S": record_key}},
                UpdateExpression="REMOVE #f",
                ExpressionAttributeNames={"#f": name},
            )
        else:
            ddb.update_item(
                TableName=engine.idempotency_table,
                Key={"id": {"S": record_key}},
                UpdateExpression="SET #f = :v",
                ExpressionAttributeNames={"#f": name},
                ExpressionAttributeValues={":v": {"S": value}},
            )


PAST = "2000-01-01T00:00:00.000Z"
FUTURE = "2999-01-01T00:00:00.000Z"


def put_lock(engine: Engine, key: str, body: Any, **extra: str | None) -> None:
    """An IN_PROGRESS record as an execution that is running (or died) would have left it: by default
    with a live lease; ``leaseExpiresAt=PAST`` makes it a dead owner's, a field set to None is left out."""
    fields: dict[str, str | None] = {
        "status": RecordStatus.IN_PROGRESS.value,
        "owner": "arn:aws:states:us-east-1:123456789012:execution:other:crashed",
        "lockToken": "token-of-another-execution",
        "fingerprint": keys.fingerprint(body),
        "startedAt": "2026-01-01T00:00:00.000Z",
        "leaseExpiresAt": FUTURE,
        "expiresAt": FUTURE,
        **extra,
    }
    item: dict[str, Any] = {k: {"S": v} for k, v in fields.items() if v is not None}
    item["id"] = {"S": keys.record_key(engine.scope, key)}
    engine.client("dynamodb").put_item(TableName=engine.idempotency_table, Item=item)


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
        "RunSideEffect",
        "SaveResult",
        "ReturnResult",
    ]
    assert tasks(engine, outcome.arn, "dynamodb") == ["getItem", "putItem", "updateItem"]
    record = engine.record(key)
    assert record is not None
    assert record["status"] == RecordStatus.COMPLETED
    assert record["owner"] == outcome.arn
    assert record["fingerprint"] == keys.fingerprint(side_effect.payload)
    assert record["resultStored"] is True
    assert record["leaseExpiresAt"] < record["expiresAt"]
    assert isinstance(record["ttl"], int) and record["ttl"] > 1_700_000_000
    assert outcome.output["result"] == stored_result(engine, key) is not None
    assert engine.side_effect_runs(key) == 1
    assert side_effect.effects(engine, key) == 1


def test_duplicate_is_served_from_the_record_without_invoking_the_side_effect(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    first = engine.run(start(key, side_effect.payload))
    runs_before = len(engine.invocations())

    duplicate = engine.run(start(key, side_effect.payload))

    assert duplicate.status == "SUCCEEDED"
    assert duplicate.output == {**first.output, "replayed": True}
    assert len(engine.invocations()) == runs_before, "the side-effecting function was invoked"
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
    records_before = engine.client("dynamodb").scan(TableName=engine.idempotency_table)["Count"]
    runs_before = len(engine.invocations())

    outcome = engine.run(execution_input)

    assert outcome.status == "FAILED"
    assert outcome.error == error
    assert outcome.path[0] == "ValidateInput" and len(outcome.path) == 2
    assert engine.client("dynamodb").scan(TableName=engine.idempotency_table)["Count"] == records_before
    assert len(engine.invocations()) == runs_before


def test_any_string_key_works_and_is_hashed_like_the_python_derivation(engine: Engine, side_effect: SideEffect) -> None:
    key = "ключ-🔑 with inner spaces/and'quotes\"{}"
    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    record = engine.record(key)  # looked up by keys.record_key: proves States.Hash agrees with hashlib
    assert record is not None and record["status"] == RecordStatus.COMPLETED
    assert record["id"].startswith(f"{engine.scope}#") and key not in record["id"]


def test_payload_that_fails_the_functions_validation_fails_named_and_releases_the_lock(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    outcome = engine.run(start(key, side_effect.rejected_payload))

    assert outcome.status == "FAILED"
    assert outcome.error == side_effect.rejected_error
    assert outcome.cause
    assert outcome.path[-2:] == ["ReleaseLock", "SideEffectFailed"]
    assert engine.record(key) is None
    assert side_effect.effects(engine, key) == 0


# -- key reuse ---------------------------------------------------------------------------------------
def test_reused_key_with_another_payload_fails_and_leaves_the_record_untouched(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.run(start(key, side_effect.payload))
    record_before = engine.record(key)
    runs_before = len(engine.invocations())

    outcome = engine.run(start(key, side_effect.other_payload))

    assert outcome.status == "FAILED"
    assert outcome.error == WorkflowError.KEY_REUSED
    assert engine.record(key) == record_before
    assert len(engine.invocations()) == runs_before
    assert side_effect.effects(engine, key) == 1


def test_reused_key_while_the_first_payload_is_in_progress_fails_at_once(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    put_lock(engine, key, side_effect.payload, leaseExpiresAt=FUTURE)

    outcome = engine.run(start(key, side_effect.other_payload))

    assert outcome.error == WorkflowError.KEY_REUSED
    assert "WaitForOwner" not in outcome.path
    assert engine.record(key)["lockToken"] == "token-of-another-execution"  # type: ignore[index]


# -- in progress, stale and expired records --------------------------------------------------------------
def test_live_lock_makes_a_duplicate_wait_bounded_then_fail_in_progress(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    put_lock(engine, key, side_effect.payload, leaseExpiresAt=FUTURE)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "FAILED"
    assert outcome.error == WorkflowError.IN_PROGRESS
    max_polls = int(engine.workflow_stack.parameters["InProgressMaxPolls"])
    poll_seconds = float(engine.workflow_stack.parameters["InProgressPollSeconds"])
    assert outcome.path.count("WaitForOwner") == max_polls
    waits = [d for d in patches.recorded_delays(outcome.arn) if d.kind == "wait"]
    assert [d.requested_seconds for d in waits] == [poll_seconds] * max_polls
    assert engine.record(key)["lockToken"] == "token-of-another-execution"  # type: ignore[index]
    assert engine.side_effect_runs(key) == 0


def test_duplicate_waiting_for_the_owner_returns_the_owners_result(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    first = engine.run(start(key, side_effect.payload))
    saved = engine.record(key)
    assert saved is not None
    # Make the completed record look in progress again, and let the "owner" finish while we poll.
    set_record(engine, key, status=RecordStatus.IN_PROGRESS.value)
    engine.faults.before_dynamodb("ReadRecord", lambda: None)  # the first read sees IN_PROGRESS
    engine.faults.before_dynamodb("ReadRecord", lambda: set_record(engine, key, status=RecordStatus.COMPLETED.value))

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.path.count("WaitForOwner") == 1
    assert outcome.output["replayed"] is True
    assert outcome.output["result"] == first.output["result"]
    assert engine.side_effect_runs(key) == 1


def test_stale_lock_of_a_crashed_owner_is_taken_over_and_run_once(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    put_lock(engine, key, side_effect.payload, leaseExpiresAt=PAST)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert "AcquireLock" in outcome.path and "WaitForOwner" not in outcome.path
    record = engine.record(key)
    assert record is not None
    assert record["status"] == RecordStatus.COMPLETED and record["owner"] == outcome.arn
    assert record["lockToken"] != "token-of-another-execution"
    assert engine.side_effect_runs(key) == 1
    assert side_effect.effects(engine, key) == 1


@pytest.mark.parametrize("missing", ["leaseExpiresAt", "expiresAt", "fingerprint", "lockToken", "status"])
def test_a_record_missing_a_field_is_reported_never_judged(
    engine: Engine, key: str, missing: str, side_effect: SideEffect
) -> None:
    # Every record the workflow writes has all of these from its first write: a record without one was
    # written by something else, and taking it over or waiting on it would be a guess.
    put_lock(engine, key, side_effect.payload, **{"leaseExpiresAt": PAST, missing: None})

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.RECORD_INVALID
    assert engine.record(key)["owner"].endswith(":crashed")  # type: ignore[index]
    assert engine.side_effect_runs(key) == 0


def test_a_lease_that_is_not_a_timestamp_is_reported(engine: Engine, key: str, side_effect: SideEffect) -> None:
    put_lock(engine, key, side_effect.payload, leaseExpiresAt="soon")

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.RECORD_INVALID
    assert engine.side_effect_runs(key) == 0


def test_an_expiry_that_is_not_a_timestamp_is_reported(engine: Engine, key: str, side_effect: SideEffect) -> None:
    put_lock(engine, key, side_effect.payload, leaseExpiresAt=PAST, expiresAt="tomorrow")

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.RECORD_INVALID
    assert engine.side_effect_runs(key) == 0


def test_a_key_that_keeps_changing_hands_gives_up_after_the_attempt_budget(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # Each time we find the key free, another execution takes it first, and has released it by the time
    # we read again: acquisition is bounded (three attempts), then IdempotencyInProgress.
    record_key = keys.record_key(engine.scope, key)
    ddb = engine.client("dynamodb")
    for _ in range(5):
        engine.faults.before_dynamodb(
            "AcquireLock", lambda: put_lock(engine, key, side_effect.payload, lockToken="the-other")
        )
        engine.faults.before_dynamodb(
            "ReadRecord",
            lambda: ddb.delete_item(TableName=engine.idempotency_table, Key={"id": {"S": record_key}}),
        )

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.IN_PROGRESS
    assert outcome.path.count("AcquireLock") == 3 and outcome.path.count("ReadRecord") == 4
    assert engine.side_effect_runs(key) == 0


def put_completed(
    engine: Engine, key: str, body: Any, *, expires: str, result: Any = None, stored: bool = True
) -> None:
    """A COMPLETED record as another execution left it (``result=None``: no result attribute)."""
    put_lock(engine, key, body, status=RecordStatus.COMPLETED.value, leaseExpiresAt=PAST, expiresAt=expires)
    ddb, record_key = engine.client("dynamodb"), keys.record_key(engine.scope, key)
    values: dict[str, Any] = {":s": {"BOOL": stored}}
    update = "SET resultStored = :s"
    if result is not None:
        values[":r"] = {"S": json.dumps(result)}
        update += ", #r = :r"
    ddb.update_item(
        TableName=engine.idempotency_table,
        Key={"id": {"S": record_key}},
        UpdateExpression=update,
        ExpressionAttributeValues=values,
        **({"ExpressionAttributeNames": {"#r": "result"}} if result is not None else {}),
    )


def test_a_dead_owners_lock_is_taken_over_whatever_payload_it_had(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # Only a live record of another payload is a reused key; a dead owner's lock is free to take.
    put_lock(engine, key, side_effect.other_payload, leaseExpiresAt=PAST)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED" and outcome.output["replayed"] is False, outcome.error
    assert engine.side_effect_runs(key) == 1


@pytest.mark.parametrize("stored", [True, False])
def test_an_expired_result_runs_again_whatever_payload_or_result_it_had(
    engine: Engine, key: str, stored: bool, side_effect: SideEffect
) -> None:
    put_completed(
        engine, key, side_effect.other_payload, expires=PAST, result={"old": 1} if stored else None, stored=stored
    )

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED" and outcome.output["replayed"] is False, outcome.error
    assert outcome.output["result"] == stored_result(engine, key) != {"old": 1}
    assert engine.side_effect_runs(key) == 1


@pytest.mark.parametrize("stored_flag", [True, None])
def test_a_live_result_that_is_not_there_is_reported(
    engine: Engine, key: str, stored_flag: bool | None, side_effect: SideEffect
) -> None:
    # resultStored true without a result, or a result without resultStored: written by something else.
    put_completed(engine, key, side_effect.payload, expires=FUTURE, result=None if stored_flag else {"r": 1})
    if stored_flag is None:
        set_record(engine, key, resultStored=None)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.RECORD_INVALID
    assert engine.side_effect_runs(key) == 0


@pytest.mark.parametrize("status", [RecordStatus.IN_PROGRESS, RecordStatus.COMPLETED])
@pytest.mark.parametrize("payload", ["payload", "other_payload"])
def test_a_record_that_flips_between_dead_and_renewed_gives_up_after_the_attempt_budget(
    engine: Engine, key: str, status: RecordStatus, payload: str, side_effect: SideEffect
) -> None:
    # We judge the record free (its lease or expiry has passed); before our write it is renewed, and by
    # our next read it has passed again. Three acquisitions, then IdempotencyInProgress, whatever
    # payload the record had.
    time_field = "leaseExpiresAt" if status == RecordStatus.IN_PROGRESS else "expiresAt"
    put_lock(engine, key, getattr(side_effect, payload), status=status.value, leaseExpiresAt=PAST, expiresAt=PAST)
    if status == RecordStatus.COMPLETED:
        put_completed(engine, key, getattr(side_effect, payload), expires=PAST, result={"old": 1})
    engine.faults.before_dynamodb("ReadRecord", lambda: None)  # the first read finds it free
    for _ in range(5):
        engine.faults.before_dynamodb("AcquireLock", lambda: set_record(engine, key, **{time_field: FUTURE}))
        engine.faults.before_dynamodb("ReadRecord", lambda: set_record(engine, key, **{time_field: PAST}))

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.IN_PROGRESS
    assert outcome.path.count("AcquireLock") == 3
    assert engine.side_effect_runs(key) == 0


def test_every_lock_carries_its_lease_expiry_and_ttl_from_its_first_write(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # A lock written without its lease (to be stamped by a later write) would never expire if its owner
    # died in between: the lock is one write, so seen while the side effect runs, it has all three.
    seen: list[dict[str, Any] | None] = []
    engine.faults.before_dynamodb("SaveResult", lambda: seen.append(engine.record(key)))

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    lock = seen[0]
    assert lock is not None and lock["status"] == RecordStatus.IN_PROGRESS
    assert lock["startedAt"] < lock["leaseExpiresAt"] < lock["expiresAt"]
    assert isinstance(lock["ttl"], int) and lock["ttl"] > 1_700_000_000
    lease = int(engine.workflow_stack.parameters["LockLeaseSeconds"])
    started = patches.parse_rfc3339(lock["startedAt"])
    assert started is not None
    assert patches.parse_rfc3339(lock["leaseExpiresAt"]) == started + datetime.timedelta(seconds=lease)


def test_expired_completed_record_is_run_again_once(engine: Engine, key: str, side_effect: SideEffect) -> None:
    first = engine.run(start(key, side_effect.payload))
    set_record(engine, key, expiresAt=PAST)

    again = engine.run(start(key, side_effect.payload))

    assert again.status == "SUCCEEDED", again.cause
    assert again.output["replayed"] is False
    assert "AcquireLock" in again.path and "RunSideEffect" in again.path
    record = engine.record(key)
    assert record is not None and record["owner"] == again.arn and record["expiresAt"] > PAST
    assert engine.side_effect_runs(key) == 2
    # The record's window ended: the workflow ran the function again. A function that guards itself
    # (longer than the window) still has one effect, and both runs agree; one that does not has two.
    if side_effect.guarded:
        assert side_effect.effects(engine, key) == 1
        assert again.output["result"] == first.output["result"]
    else:
        assert side_effect.effects(engine, key) == 2
    duplicate = engine.run(start(key, side_effect.payload))
    assert duplicate.output["replayed"] is True and engine.side_effect_runs(key) == 2


def test_takeover_loses_to_another_duplicate_that_took_the_key_first(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    put_lock(engine, key, side_effect.payload, leaseExpiresAt=PAST)
    # Another duplicate takes the stale lock over between our read and our write: ours must lose.
    engine.faults.before_dynamodb(
        "AcquireLock",
        lambda: put_lock(engine, key, side_effect.payload, leaseExpiresAt=FUTURE, lockToken="the-winners-token"),
    )

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.IN_PROGRESS  # it read again and found the winner's live lock
    assert "CountAttempt" in outcome.path
    assert engine.record(key)["lockToken"] == "the-winners-token"  # type: ignore[index]
    assert engine.side_effect_runs(key) == 0


def test_takeover_decided_on_an_old_read_never_overwrites_the_owners_completion(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # A duplicate reads an expired lease, then the slow owner's completion lands: a takeover fenced only
    # on the token it read would overwrite COMPLETED and run the side effect again.
    put_lock(engine, key, side_effect.payload, leaseExpiresAt=PAST)
    stored = {"id": key, "done": True}

    def owner_completes() -> None:
        set_record(engine, key, status=RecordStatus.COMPLETED.value, expiresAt=FUTURE, result=json.dumps(stored))
        engine.client("dynamodb").update_item(
            TableName=engine.idempotency_table,
            Key={"id": {"S": keys.record_key(engine.scope, key)}},
            UpdateExpression="SET resultStored = :t",
            ExpressionAttributeValues={":t": {"BOOL": True}},
        )

    engine.faults.before_dynamodb("AcquireLock", owner_completes)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.output == {"idempotencyKey": key, "replayed": True, "result": stored}
    record = engine.record(key)
    assert record is not None and record["status"] == RecordStatus.COMPLETED
    assert record["lockToken"] == "token-of-another-execution"
    assert engine.side_effect_runs(key) == 0


def test_takeover_decided_on_an_old_read_loses_to_a_renewed_lease(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    put_lock(engine, key, side_effect.payload, leaseExpiresAt=PAST)
    engine.faults.before_dynamodb("AcquireLock", lambda: set_record(engine, key, leaseExpiresAt=FUTURE))

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.IN_PROGRESS
    assert engine.record(key)["lockToken"] == "token-of-another-execution"  # type: ignore[index]
    assert engine.side_effect_runs(key) == 0


def test_owner_released_while_we_waited_so_we_acquire(engine: Engine, key: str, side_effect: SideEffect) -> None:
    put_lock(engine, key, side_effect.payload)
    record_key = keys.record_key(engine.scope, key)
    engine.faults.before_dynamodb("ReadRecord", lambda: None)  # the first read sees the live lock
    engine.faults.before_dynamodb(
        "ReadRecord",
        lambda: engine.client("dynamodb").delete_item(
            TableName=engine.idempotency_table, Key={"id": {"S": record_key}}
        ),
    )

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.path.count("WaitForOwner") == 1 and outcome.path.count("AcquireLock") == 1
    assert engine.side_effect_runs(key) == 1


def test_patience_is_counted_per_owner(engine: Engine, key: str, side_effect: SideEffect) -> None:
    # A poll budget carried over from one owner to the next would make a duplicate give up on (or take
    # over) a fresh lock without waiting for it.
    put_lock(engine, key, side_effect.payload, lockToken="first-owner")
    for _ in range(5):
        engine.faults.before_dynamodb("ReadRecord", lambda: None)
    engine.faults.before_dynamodb("ReadRecord", lambda: set_record(engine, key, lockToken="second-owner"))

    outcome = engine.run(start(key, side_effect.payload))

    max_polls = int(engine.workflow_stack.parameters["InProgressMaxPolls"])
    assert outcome.error == WorkflowError.IN_PROGRESS
    assert outcome.path.count("WaitForOwner") == 5 + max_polls
    assert outcome.path.count("WatchOwner") == 2
    assert engine.record(key)["lockToken"] == "second-owner"  # type: ignore[index]
    assert engine.side_effect_runs(key) == 0


def test_unknown_record_status_is_a_named_error(engine: Engine, key: str, side_effect: SideEffect) -> None:
    put_lock(engine, key, side_effect.payload, status="SOMETHING_ELSE", leaseExpiresAt=PAST, expiresAt=PAST)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.RECORD_INVALID
    assert engine.side_effect_runs(key) == 0


# -- failures of the side effect ----------------------------------------------------------------------
def test_transient_failures_are_retried_with_backoff_then_run_once(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.faults.fail_next(engine.side_effect_function, 2, side_effect.transient_error(engine))
    engine.faults.fail_next(engine.side_effect_function, 1, "Lambda.TooManyRequestsException")

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert engine.side_effect_runs(key) == 1
    assert side_effect.effects(engine, key) == 1
    retries = [d for d in patches.recorded_delays(outcome.arn) if d.kind == "retry"]
    assert [d.state_name for d in retries] == ["RunSideEffect"] * 3
    # Full jitter: each delay is drawn between 0 and the exponential backoff, capped.
    caps = [2, 4, 1]  # transient error: 2 s then 4 s; Lambda throttling: its own retrier's first 1 s
    assert all(0 <= d.requested_seconds <= cap for d, cap in zip(retries, caps, strict=True))


def test_a_transient_failure_of_the_clock_function_is_retried(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    clock = engine.workflow_stack.functions["ClockFunction"].name
    engine.faults.fail_next(clock, 1, "Lambda.ServiceException")

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    retries = [d.state_name for d in patches.recorded_delays(outcome.arn) if d.kind == "retry"]
    assert retries == ["ComputeLease"]
    assert engine.side_effect_runs(key) == 1


def test_lost_response_is_retried_and_only_a_function_that_guards_itself_has_one_effect(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.faults.lose_response_next(engine.side_effect_function)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert engine.side_effect_runs(key) == 2, "the handler ran twice (the first response was lost)"
    # The contract's first case for the function's own guard (docs/contract.md: the side-effect contract).
    assert side_effect.effects(engine, key) == (1 if side_effect.guarded else 2)


def test_function_timeout_is_retried(engine: Engine, key: str, side_effect: SideEffect) -> None:
    engine.faults.timeout_next(engine.side_effect_function)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert [i.outcome for i in engine.invocations() if i.event.get("idempotencyKey") == key] == ["timeout", "ok"]


def test_permanent_failure_releases_the_lock_and_a_later_retry_runs_once(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.faults.fail_next(engine.side_effect_function, 1, DECLINED, "declined for good")

    failed = engine.run(start(key, side_effect.payload))

    assert failed.status == "FAILED"
    assert failed.error == DECLINED and "declined for good" in (failed.cause or "")
    assert engine.record(key) is None, "the lock was not released"
    assert side_effect.effects(engine, key) == 0

    retried = engine.run(start(key, side_effect.payload))

    assert retried.status == "SUCCEEDED" and retried.output["replayed"] is False
    assert side_effect.effects(engine, key) == 1


def test_exhausted_retries_fail_with_the_functions_error_and_release_the_lock(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.faults.fail_next(engine.side_effect_function, 4, side_effect.transient_error(engine), "provider down")

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "FAILED"
    assert outcome.error == side_effect.transient_error(engine)
    assert outcome.path.count("RunSideEffect") == 1 and outcome.path[-1] == "SideEffectFailed"
    assert engine.record(key) is None
    assert engine.side_effect_runs(key) == 0


def test_worker_crash_keeps_the_lock_until_its_lease_ends_then_a_retry_runs_once(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # A process that dies may die after the effect: its outcome is unknown, so the key is not released.
    engine.faults.crash_next(engine.side_effect_function)

    crashed = engine.run(start(key, side_effect.payload))

    assert crashed.error == WorkflowError.OUTCOME_UNKNOWN
    failures = [
        e["taskFailedEventDetails"]["error"] for e in engine.history(crashed.arn) if "taskFailedEventDetails" in e
    ]
    assert failures == ["Runtime.ExitError"]
    record = engine.record(key)
    assert record is not None and record["status"] == RecordStatus.IN_PROGRESS and record["owner"] == crashed.arn
    assert engine.run(start(key, side_effect.payload)).error == WorkflowError.IN_PROGRESS  # the lease still runs
    set_record(engine, key, leaseExpiresAt=PAST)  # the lease ends
    retried = engine.run(start(key, side_effect.payload))
    assert retried.status == "SUCCEEDED", retried.cause
    assert side_effect.effects(engine, key) == 1


def test_an_invocation_still_in_progress_is_waited_out_longer_than_the_function_timeout(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # IdempotencyAlreadyInProgressError (the function's own guard sees an earlier invocation still
    # running) retried for less than the function's timeout would release the lock while that invocation
    # could still be running.
    engine.faults.fail_next(engine.side_effect_function, 5, STILL_RUNNING_ERROR)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.OUTCOME_UNKNOWN
    waits = [d.requested_seconds for d in patches.recorded_delays(outcome.arn) if d.kind == "retry"]
    timeout = engine.stack.side_effect_function(engine.workflow_path).timeout  # type: ignore[union-attr]
    assert len(waits) == 4 and sum(waits) > timeout
    record = engine.record(key)
    assert record is not None and record["status"] == RecordStatus.IN_PROGRESS and record["owner"] == outcome.arn


def test_an_invocation_in_progress_that_ends_in_time_completes(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.faults.fail_next(engine.side_effect_function, 4, STILL_RUNNING_ERROR)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert side_effect.effects(engine, key) == 1


# -- saving the result ------------------------------------------------------------------------------------
def test_result_too_large_to_store_completes_without_it_and_never_runs_twice(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    huge = {"id": key, "receipt": "x" * 500_000}
    engine.faults.replace_response_next(engine.side_effect_function, huge)

    first = engine.run(start(key, side_effect.payload))

    assert first.status == "SUCCEEDED", first.cause
    assert first.output == {"idempotencyKey": key, "replayed": False, "result": None, "resultStored": False}
    assert "SaveWithoutResult" in first.path and "ReleaseLock" not in first.path
    record = engine.record(key)
    assert record is not None and record["status"] == RecordStatus.COMPLETED and record["resultStored"] is False
    assert "result" not in record

    duplicate = engine.run(start(key, side_effect.payload))

    assert duplicate.output == {"idempotencyKey": key, "replayed": True, "result": None, "resultStored": False}
    assert engine.side_effect_runs(key) == 1


@pytest.mark.parametrize("key_prefix", ["order-with-a-longer-key-", "k"])
def test_results_around_the_payload_quota_never_run_the_side_effect_twice_while_the_record_lives(
    engine: Engine, key_prefix: str, side_effect: SideEffect
) -> None:
    # A result that fits RunSideEffect could overflow SaveResult if it were escaped into a string there,
    # failing after the side effect with the lock held. The result's JSON string is made at RunSideEffect,
    # and SaveResult's input after Parameters is that string and its constants. Sizes are UTF-8 bytes of
    # compact JSON, as AWS counts them (the registry's `payload-size`).
    # Three regions, from small to large:
    #   stored: the result and the execution's state fit RunSideEffect's output;
    #   window: the connector's result fits, the state's output does not (the execution's own ~1 KB of
    #     state on top of the result): AWS documents the error, not whether the state's Catch applies;
    #     the engine fails the execution, keeping the lock until its lease ends (docs/performance.md: Limits);
    #   unstored: the connector's result is over the quota: caught by name (AWS-recorded, see
    #     test_definition_rules), the record completes without it.
    # A duplicate carries the stored result plus its own state and the record's other attributes: for a
    # stored result in the top "replay margin", its read fails States.DataLimitExceeded, and nothing runs.
    # With a short key, the execution's state is smaller than SaveResult's constants: SaveResult's input
    # after Parameters is then the first to overflow, is caught by name, and completes without the result.
    if side_effect.name != SIDE_EFFECTS[0].name:
        # The sweep replaces the function's response with results of chosen sizes (replace_response_next):
        # what it proves is the definition's, whatever the function; it runs for the first side effect only.
        pytest.skip(f"the payload sweep runs once, for {SIDE_EFFECTS[0].name}")
    regions: dict[str, list[int]] = {"stored": [], "window": [], "unstored": [], "replay margin": []}
    caught_at_save = []
    for size in range(MAX_STATE_PAYLOAD_BYTES - 2400, MAX_STATE_PAYLOAD_BYTES + 300, 50):
        key = f"{key_prefix}{uuid.uuid4().hex[:6]}"
        result = {"id": key, "receipt": ""}
        result["receipt"] = "x" * (size - patches.payload_bytes(result))
        engine.faults.replace_response_next(engine.side_effect_function, result)

        first = engine.run(start(key, side_effect.payload))
        duplicate = engine.run(start(key, side_effect.payload))

        assert engine.side_effect_runs(key) == 1, size
        record = engine.record(key)
        assert record is not None and record["owner"] == first.arn, size
        if first.status == "FAILED":
            assert first.error == "States.DataLimitExceeded", (size, first.error)
            assert record["status"] == RecordStatus.IN_PROGRESS and record["ttl"], size
            assert duplicate.error == WorkflowError.IN_PROGRESS, size
            regions["window"].append(size)
            continue
        assert record["status"] == RecordStatus.COMPLETED, size
        if duplicate.error == "States.DataLimitExceeded":
            assert duplicate.path[-1] == "ReadRecord" and engine.record(key) == record, size
            regions["replay margin"].append(size)
        else:
            assert duplicate.status == "SUCCEEDED" and duplicate.output == {**first.output, "replayed": True}, size
        if first.output["result"] == result:
            regions["stored"].append(size)
        else:
            assert first.output == {"idempotencyKey": key, "replayed": False, "result": None, "resultStored": False}
            regions["unstored"].append(size)
            if "SaveResult" in first.path:
                caught_at_save.append(size)
    stored, window, unstored = regions["stored"], regions["window"], regions["unstored"]
    assert stored and window and unstored, regions
    assert max(stored) < min(window + unstored)
    # The window is contiguous and as wide as the execution's own state (about a kilobyte at most).
    assert window == list(range(min(window), max(window) + 1, 50)) and max(window) - min(window) <= 1200
    # Below the window, a result not stored was caught at SaveResult; above it, at RunSideEffect.
    assert {u for u in unstored if u < min(window)} == set(caught_at_save)
    assert max(window) < max(unstored) and not {u for u in caught_at_save if u > max(window)}
    if key_prefix == "k":
        assert caught_at_save, "with a short key SaveResult's input is the first to overflow"
    assert set(regions["replay margin"]) <= set(stored[-8:]), regions["replay margin"]


def test_a_zombie_owner_cannot_overwrite_a_newer_run(engine: Engine, key: str, side_effect: SideEffect) -> None:
    # Our lease ran out while the side effect was running and another execution took the key over.
    engine.faults.before_dynamodb("SaveResult", lambda: set_record(engine, key, lockToken="the-new-owner"))

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.LOCK_LOST
    record = engine.record(key)
    assert record is not None
    assert record["status"] == RecordStatus.IN_PROGRESS and record["lockToken"] == "the-new-owner"
    assert "result" not in record


def test_a_completion_by_another_execution_after_ours_failed_is_lock_lost(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # Our lease ran out, another execution took the key over and completed it before our SaveResult:
    # its record is COMPLETED but not ours, so our run did not complete the key.
    engine.faults.before_dynamodb(
        "SaveResult",
        lambda: set_record(engine, key, lockToken="the-new-owner", status=RecordStatus.COMPLETED.value),
    )

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.LOCK_LOST
    assert engine.record(key)["lockToken"] == "the-new-owner"  # type: ignore[index]


HUGE_RESULT = {"receipt": "x" * 300_000}  # over the quota: SaveWithoutResult


@pytest.mark.parametrize(("state", "result"), [("SaveResult", None), ("SaveWithoutResult", HUGE_RESULT)])
def test_a_completion_that_cannot_be_written_keeps_the_lock_until_its_lease_ends(
    engine: Engine, key: str, state: str, result: Any, side_effect: SideEffect
) -> None:
    if result is not None:
        engine.faults.replace_response_next(engine.side_effect_function, result)
    engine.faults.throttle_next(state, 5)  # one attempt and its four retries

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.RESULT_NOT_SAVED
    record = engine.record(key)
    assert record is not None and record["status"] == RecordStatus.IN_PROGRESS and record["owner"] == outcome.arn
    assert engine.run(start(key, side_effect.payload)).error == WorkflowError.IN_PROGRESS
    assert engine.side_effect_runs(key) == 1


def test_lost_response_of_our_own_completion_without_result_is_still_a_success(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.faults.replace_response_next(engine.side_effect_function, HUGE_RESULT)
    engine.faults.lose_dynamodb_response_next("SaveWithoutResult")

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.error
    assert outcome.output == {"idempotencyKey": key, "replayed": False, "result": None, "resultStored": False}
    assert outcome.path[-3:] == ["ReadAfterSave", "CheckSaved", "ReturnUnstoredResult"]


def test_a_completion_that_cannot_be_checked_is_reported_lock_lost(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.faults.before_dynamodb("SaveResult", lambda: set_record(engine, key, lockToken="the-new-owner"))
    engine.faults.throttle_next("ReadAfterSave", 5)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.LOCK_LOST
    assert outcome.path[-2:] == ["ReadAfterSave", "LockLost"]


def test_a_release_that_cannot_be_written_still_fails_with_the_functions_error(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.faults.fail_next(engine.side_effect_function, 1, DECLINED, "declined for good")
    engine.faults.throttle_next("ReleaseLock", 5)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == DECLINED
    record = engine.record(key)  # not released: the lease bounds it, and its ttl removes it
    assert record is not None and record["status"] == RecordStatus.IN_PROGRESS and record["ttl"]


# -- DynamoDB faults on the workflow's own writes ---------------------------------------------------------
def test_throttled_lock_write_is_retried(engine: Engine, key: str, side_effect: SideEffect) -> None:
    engine.faults.throttle_next("AcquireLock", 2)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    retries = [d for d in patches.recorded_delays(outcome.arn) if d.kind == "retry"]
    assert [d.state_name for d in retries] == ["AcquireLock", "AcquireLock"]
    assert engine.side_effect_runs(key) == 1


def test_lost_response_of_our_own_lock_write_is_recognised_as_ours(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # The put succeeded, its response was lost, the retry hits our own lock: we still own the key.
    engine.faults.lose_dynamodb_response_next("AcquireLock")

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.path[4:10] == [
        "ComputeLease",
        "AcquireLock",
        "CountAttempt",
        "ReadRecord",
        "CheckRecord",
        "RunSideEffect",
    ]
    assert "WaitForOwner" not in outcome.path
    assert engine.side_effect_runs(key) == 1


def test_lost_response_of_our_own_completion_is_still_a_success(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # SaveResult wrote COMPLETED, its response was lost, the retry's condition (still IN_PROGRESS) fails:
    # the record shows our own completion, so the run succeeded.
    engine.faults.lose_dynamodb_response_next("SaveResult")

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.error
    assert outcome.output["replayed"] is False and outcome.output["result"] == stored_result(engine, key)
    assert "CheckSaved" in outcome.path and outcome.path[-1] == "ReturnResult"
    record = engine.record(key)
    assert record is not None and record["status"] == RecordStatus.COMPLETED and record["owner"] == outcome.arn
    assert engine.side_effect_runs(key) == 1


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
    record = engine.record(key)
    assert record is not None and record["fingerprint"] == keys.fingerprint(body)


def test_a_payload_whose_escaped_json_exceeds_the_hash_limit_is_refused_before_a_start(
    key: str, side_effect: SideEffect
) -> None:
    # 2,000 "é" are 2,0xx characters written as they are but 12,0xx escaped: were AWS to escape them,
    # DeriveKeys would fail with States.Runtime (uncatchable); the client refuses the payload by name.
    with pytest.raises(keys.IdempotencyPayloadInvalidError, match="non-ASCII counted as"):
        keys.check_input(key, {**side_effect.payload, "note": "é" * 2000})
    keys.check_input(key, {**side_effect.payload, "note": "é" * 1600})
