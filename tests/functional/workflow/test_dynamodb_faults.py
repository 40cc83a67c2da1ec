"""DynamoDB faults on the workflow's own writes."""

from __future__ import annotations

from idemflow.contract import RecordStatus
from idemflow.engine import Engine
from idemflow.engine.services.stepfunctions.clock import recorded_delays

from ..side_effects import SideEffect
from .helpers import start, stored_result


# -- DynamoDB faults on the workflow's own writes ---------------------------------------------------------
def test_throttled_lock_write_is_retried(engine: Engine, key: str, side_effect: SideEffect) -> None:
    engine.faults.throttle_next("AcquireLock", 2)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    retries = [d for d in recorded_delays(outcome.arn) if d.kind == "retry"]
    assert [d.state_name for d in retries] == ["AcquireLock", "AcquireLock"]
    assert engine.workflow.side_effect_runs(key) == 1


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
    assert engine.workflow.side_effect_runs(key) == 1


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
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == RecordStatus.COMPLETED and record["owner"] == outcome.arn
    assert engine.workflow.side_effect_runs(key) == 1
