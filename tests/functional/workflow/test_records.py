"""Records in progress, stale, expired, or not as the workflow wrote them."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from idemflow import keys
from idemflow.contract import RecordStatus, WorkflowError
from idemflow.engine import Engine
from idemflow.engine.services.stepfunctions.clock import parse_rfc3339, recorded_delays

from ..side_effects import SideEffect
from .helpers import FUTURE, PAST, put_completed, put_lock, set_record, start, stored_result


# -- in progress, stale and expired records --------------------------------------------------------------
def test_live_lock_makes_a_duplicate_wait_bounded_then_fail_in_progress(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    put_lock(engine, key, side_effect.payload, leaseExpiresAt=FUTURE)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "FAILED"
    assert outcome.error == WorkflowError.IN_PROGRESS
    max_polls = int(engine.workflow.stack.parameters["InProgressMaxPolls"])
    poll_seconds = float(engine.workflow.stack.parameters["InProgressPollSeconds"])
    assert outcome.path.count("WaitForOwner") == max_polls
    waits = [d for d in recorded_delays(outcome.arn) if d.kind == "wait"]
    assert [d.requested_seconds for d in waits] == [poll_seconds] * max_polls
    assert engine.workflow.record(key)["lockToken"] == "token-of-another-execution"  # type: ignore[index]
    assert engine.workflow.side_effect_runs(key) == 0


def test_duplicate_waiting_for_the_owner_returns_the_owners_result(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    first = engine.run(start(key, side_effect.payload))
    saved = engine.workflow.record(key)
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
    assert engine.workflow.side_effect_runs(key) == 1


def test_stale_lock_of_a_crashed_owner_is_taken_over_and_run_once(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    put_lock(engine, key, side_effect.payload, leaseExpiresAt=PAST)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert "AcquireLock" in outcome.path and "WaitForOwner" not in outcome.path
    record = engine.workflow.record(key)
    assert record is not None
    assert record["status"] == RecordStatus.COMPLETED and record["owner"] == outcome.arn
    assert record["lockToken"] != "token-of-another-execution"
    assert engine.workflow.side_effect_runs(key) == 1
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
    assert engine.workflow.record(key)["owner"].endswith(":crashed")  # type: ignore[index]
    assert engine.workflow.side_effect_runs(key) == 0


def test_a_lease_that_is_not_a_timestamp_is_reported(engine: Engine, key: str, side_effect: SideEffect) -> None:
    put_lock(engine, key, side_effect.payload, leaseExpiresAt="soon")

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.RECORD_INVALID
    assert engine.workflow.side_effect_runs(key) == 0


def test_an_expiry_that_is_not_a_timestamp_is_reported(engine: Engine, key: str, side_effect: SideEffect) -> None:
    put_lock(engine, key, side_effect.payload, leaseExpiresAt=PAST, expiresAt="tomorrow")

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.RECORD_INVALID
    assert engine.workflow.side_effect_runs(key) == 0


def test_a_key_that_keeps_changing_hands_gives_up_after_the_attempt_budget(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # Each time we find the key free, another execution takes it first, and has released it by the time
    # we read again: acquisition is bounded (three attempts), then IdempotencyInProgress.
    record_key = keys.record_key(engine.workflow.scope, key)
    ddb = engine.client("dynamodb")
    for _ in range(5):
        engine.faults.before_dynamodb(
            "AcquireLock", lambda: put_lock(engine, key, side_effect.payload, lockToken="the-other")
        )
        engine.faults.before_dynamodb(
            "ReadRecord",
            lambda: ddb.delete_item(TableName=engine.workflow.idempotency_table, Key={"id": {"S": record_key}}),
        )

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.IN_PROGRESS
    assert outcome.path.count("AcquireLock") == 3 and outcome.path.count("ReadRecord") == 4
    assert engine.workflow.side_effect_runs(key) == 0


def test_a_dead_owners_lock_is_taken_over_whatever_payload_it_had(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # Only a live record of another payload is a reused key; a dead owner's lock is free to take.
    put_lock(engine, key, side_effect.other_payload, leaseExpiresAt=PAST)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED" and outcome.output["replayed"] is False, outcome.error
    assert engine.workflow.side_effect_runs(key) == 1


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
    assert engine.workflow.side_effect_runs(key) == 1


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
    assert engine.workflow.side_effect_runs(key) == 0


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
    assert engine.workflow.side_effect_runs(key) == 0


def test_every_lock_carries_its_lease_expiry_and_ttl_from_its_first_write(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # A lock written without its lease (to be stamped by a later write) would never expire if its owner
    # died in between: the lock is one write, so seen while the side effect runs, it has all three.
    seen: list[dict[str, Any] | None] = []
    engine.faults.before_dynamodb("SaveResult", lambda: seen.append(engine.workflow.record(key)))

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    lock = seen[0]
    assert lock is not None and lock["status"] == RecordStatus.IN_PROGRESS
    assert lock["startedAt"] < lock["leaseExpiresAt"] < lock["expiresAt"]
    assert isinstance(lock["ttl"], int) and lock["ttl"] > 1_700_000_000
    lease = int(engine.workflow.stack.parameters["LockLeaseSeconds"])
    started = parse_rfc3339(lock["startedAt"])
    assert started is not None
    assert parse_rfc3339(lock["leaseExpiresAt"]) == started + datetime.timedelta(seconds=lease)


def test_expired_completed_record_is_run_again_once(engine: Engine, key: str, side_effect: SideEffect) -> None:
    first = engine.run(start(key, side_effect.payload))
    set_record(engine, key, expiresAt=PAST)

    again = engine.run(start(key, side_effect.payload))

    assert again.status == "SUCCEEDED", again.cause
    assert again.output["replayed"] is False
    assert "AcquireLock" in again.path and "RunSideEffect" in again.path
    record = engine.workflow.record(key)
    assert record is not None and record["owner"] == again.arn and record["expiresAt"] > PAST
    assert engine.workflow.side_effect_runs(key) == 2
    # The record's window ended: the workflow ran the function again. A function that guards itself
    # (longer than the window) still has one effect, and both runs agree; one that does not has two.
    if side_effect.guarded:
        assert side_effect.effects(engine, key) == 1
        assert again.output["result"] == first.output["result"]
    else:
        assert side_effect.effects(engine, key) == 2
    duplicate = engine.run(start(key, side_effect.payload))
    assert duplicate.output["replayed"] is True and engine.workflow.side_effect_runs(key) == 2


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
    assert engine.workflow.record(key)["lockToken"] == "the-winners-token"  # type: ignore[index]
    assert engine.workflow.side_effect_runs(key) == 0


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
            TableName=engine.workflow.idempotency_table,
            Key={"id": {"S": keys.record_key(engine.workflow.scope, key)}},
            UpdateExpression="SET resultStored = :t",
            ExpressionAttributeValues={":t": {"BOOL": True}},
        )

    engine.faults.before_dynamodb("AcquireLock", owner_completes)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.output == {"idempotencyKey": key, "replayed": True, "result": stored}
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == RecordStatus.COMPLETED
    assert record["lockToken"] == "token-of-another-execution"
    assert engine.workflow.side_effect_runs(key) == 0


def test_takeover_decided_on_an_old_read_loses_to_a_renewed_lease(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    put_lock(engine, key, side_effect.payload, leaseExpiresAt=PAST)
    engine.faults.before_dynamodb("AcquireLock", lambda: set_record(engine, key, leaseExpiresAt=FUTURE))

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.IN_PROGRESS
    assert engine.workflow.record(key)["lockToken"] == "token-of-another-execution"  # type: ignore[index]
    assert engine.workflow.side_effect_runs(key) == 0


def test_owner_released_while_we_waited_so_we_acquire(engine: Engine, key: str, side_effect: SideEffect) -> None:
    put_lock(engine, key, side_effect.payload)
    record_key = keys.record_key(engine.workflow.scope, key)
    engine.faults.before_dynamodb("ReadRecord", lambda: None)  # the first read sees the live lock
    engine.faults.before_dynamodb(
        "ReadRecord",
        lambda: engine.client("dynamodb").delete_item(
            TableName=engine.workflow.idempotency_table, Key={"id": {"S": record_key}}
        ),
    )

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.path.count("WaitForOwner") == 1 and outcome.path.count("AcquireLock") == 1
    assert engine.workflow.side_effect_runs(key) == 1


def test_patience_is_counted_per_owner(engine: Engine, key: str, side_effect: SideEffect) -> None:
    # A poll budget carried over from one owner to the next would make a duplicate give up on (or take
    # over) a fresh lock without waiting for it.
    put_lock(engine, key, side_effect.payload, lockToken="first-owner")
    for _ in range(5):
        engine.faults.before_dynamodb("ReadRecord", lambda: None)
    engine.faults.before_dynamodb("ReadRecord", lambda: set_record(engine, key, lockToken="second-owner"))

    outcome = engine.run(start(key, side_effect.payload))

    max_polls = int(engine.workflow.stack.parameters["InProgressMaxPolls"])
    assert outcome.error == WorkflowError.IN_PROGRESS
    assert outcome.path.count("WaitForOwner") == 5 + max_polls
    assert outcome.path.count("WatchOwner") == 2
    assert engine.workflow.record(key)["lockToken"] == "second-owner"  # type: ignore[index]
    assert engine.workflow.side_effect_runs(key) == 0


def test_unknown_record_status_is_a_named_error(engine: Engine, key: str, side_effect: SideEffect) -> None:
    put_lock(engine, key, side_effect.payload, status="SOMETHING_ELSE", leaseExpiresAt=PAST, expiresAt=PAST)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.RECORD_INVALID
    assert engine.workflow.side_effect_runs(key) == 0
