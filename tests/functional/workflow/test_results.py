"""Saving the result: around the payload quota, zombies, and completions that cannot be written."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from idemflow.contract import MAX_STATE_PAYLOAD_BYTES, RecordStatus, WorkflowError
from idemflow.engine import Engine
from idemflow.engine.services.stepfunctions.payload import payload_bytes

from ..side_effects import DECLINED, SIDE_EFFECTS, SideEffect
from .helpers import set_record, start


# -- saving the result ------------------------------------------------------------------------------------
def test_result_too_large_to_store_completes_without_it_and_never_runs_twice(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    huge = {"id": key, "receipt": "x" * 500_000}
    engine.faults.replace_response_next(engine.workflow.side_effect_function, huge)

    first = engine.run(start(key, side_effect.payload))

    assert first.status == "SUCCEEDED", first.cause
    assert first.output == {"idempotencyKey": key, "replayed": False, "result": None, "resultStored": False}
    assert "SaveWithoutResult" in first.path and "ReleaseLock" not in first.path
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == RecordStatus.COMPLETED and record["resultStored"] is False
    assert "result" not in record

    duplicate = engine.run(start(key, side_effect.payload))

    assert duplicate.output == {"idempotencyKey": key, "replayed": True, "result": None, "resultStored": False}
    assert engine.workflow.side_effect_runs(key) == 1


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
    # Every boundary lies within a kilobyte under the quota (the execution's own state and the record's other
    # attributes are smaller): the sweep starts 1,200 bytes under it, with eight stored sizes or more below the
    # replay margin, and ends 300 bytes over it. (Measured: the margin starts 800 bytes under the quota.)
    for size in range(MAX_STATE_PAYLOAD_BYTES - 1200, MAX_STATE_PAYLOAD_BYTES + 300, 50):
        key = f"{key_prefix}{uuid.uuid4().hex[:6]}"
        result = {"id": key, "receipt": ""}
        result["receipt"] = "x" * (size - payload_bytes(result))
        engine.faults.replace_response_next(engine.workflow.side_effect_function, result)

        first = engine.run(start(key, side_effect.payload))
        duplicate = engine.run(start(key, side_effect.payload))

        assert engine.workflow.side_effect_runs(key) == 1, size
        record = engine.workflow.record(key)
        assert record is not None and record["owner"] == first.arn, size
        if first.status == "FAILED":
            assert first.error == "States.DataLimitExceeded", (size, first.error)
            assert record["status"] == RecordStatus.IN_PROGRESS and record["ttl"], size
            assert duplicate.error == WorkflowError.IN_PROGRESS, size
            regions["window"].append(size)
            continue
        assert record["status"] == RecordStatus.COMPLETED, size
        if duplicate.error == "States.DataLimitExceeded":
            assert duplicate.path[-1] == "ReadRecord" and engine.workflow.record(key) == record, size
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
    record = engine.workflow.record(key)
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
    assert engine.workflow.record(key)["lockToken"] == "the-new-owner"  # type: ignore[index]


HUGE_RESULT = {"receipt": "x" * 300_000}  # over the quota: SaveWithoutResult


@pytest.mark.parametrize(("state", "result"), [("SaveResult", None), ("SaveWithoutResult", HUGE_RESULT)])
def test_a_completion_that_cannot_be_written_keeps_the_lock_until_its_lease_ends(
    engine: Engine, key: str, state: str, result: Any, side_effect: SideEffect
) -> None:
    if result is not None:
        engine.faults.replace_response_next(engine.workflow.side_effect_function, result)
    engine.faults.throttle_next(state, 5)  # one attempt and its four retries

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.RESULT_NOT_SAVED
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == RecordStatus.IN_PROGRESS and record["owner"] == outcome.arn
    assert engine.run(start(key, side_effect.payload)).error == WorkflowError.IN_PROGRESS
    assert engine.workflow.side_effect_runs(key) == 1


def test_lost_response_of_our_own_completion_without_result_is_still_a_success(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.faults.replace_response_next(engine.workflow.side_effect_function, HUGE_RESULT)
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
    engine.faults.fail_next(engine.workflow.side_effect_function, 1, DECLINED, "declined for good")
    engine.faults.throttle_next("ReleaseLock", 5)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == DECLINED
    record = engine.workflow.record(key)  # not released: the lease bounds it, and its ttl removes it
    assert record is not None and record["status"] == RecordStatus.IN_PROGRESS and record["ttl"]
