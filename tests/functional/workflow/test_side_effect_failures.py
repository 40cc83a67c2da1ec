"""Failures of the side effect: retried, released, or waited out."""

from __future__ import annotations

from idemflow.contract import STILL_RUNNING_ERROR, RecordStatus, WorkflowError
from idemflow.engine import Engine
from idemflow.engine.services.stepfunctions.clock import recorded_delays

from ..side_effects import DECLINED, SideEffect
from .helpers import PAST, set_record, start


# -- failures of the side effect ----------------------------------------------------------------------
def test_transient_failures_are_retried_with_backoff_then_run_once(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.faults.fail_next(engine.workflow.side_effect_function, 2, side_effect.transient_error(engine))
    engine.faults.fail_next(engine.workflow.side_effect_function, 1, "Lambda.TooManyRequestsException")

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert engine.workflow.side_effect_runs(key) == 1
    assert side_effect.effects(engine, key) == 1
    retries = [d for d in recorded_delays(outcome.arn) if d.kind == "retry"]
    assert [d.state_name for d in retries] == ["RunSideEffect"] * 3
    # Full jitter: each delay is drawn between 0 and the exponential backoff, capped.
    caps = [2, 4, 1]  # transient error: 2 s then 4 s; Lambda throttling: its own retrier's first 1 s
    assert all(0 <= d.requested_seconds <= cap for d, cap in zip(retries, caps, strict=True))


def test_a_transient_failure_of_the_clock_function_is_retried(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    clock = engine.workflow.stack.functions["ClockFunction"].name
    engine.faults.fail_next(clock, 1, "Lambda.ServiceException")

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    retries = [d.state_name for d in recorded_delays(outcome.arn) if d.kind == "retry"]
    assert retries == ["ComputeLease"]
    assert engine.workflow.side_effect_runs(key) == 1


def test_lost_response_is_retried_and_only_a_function_that_guards_itself_has_one_effect(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.faults.lose_response_next(engine.workflow.side_effect_function)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert engine.workflow.side_effect_runs(key) == 2, "the handler ran twice (the first response was lost)"
    # The contract's first case for the function's own guard (docs/contract.md: the side-effect contract).
    assert side_effect.effects(engine, key) == (1 if side_effect.guarded else 2)


def test_function_timeout_is_retried(engine: Engine, key: str, side_effect: SideEffect) -> None:
    engine.faults.timeout_next(engine.workflow.side_effect_function)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert [i.outcome for i in engine.workflow.invocations() if i.event.get("idempotencyKey") == key] == [
        "timeout",
        "ok",
    ]


def test_permanent_failure_releases_the_lock_and_a_later_retry_runs_once(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.faults.fail_next(engine.workflow.side_effect_function, 1, DECLINED, "declined for good")

    failed = engine.run(start(key, side_effect.payload))

    assert failed.status == "FAILED"
    assert failed.error == DECLINED and "declined for good" in (failed.cause or "")
    assert engine.workflow.record(key) is None, "the lock was not released"
    assert side_effect.effects(engine, key) == 0

    retried = engine.run(start(key, side_effect.payload))

    assert retried.status == "SUCCEEDED" and retried.output["replayed"] is False
    assert side_effect.effects(engine, key) == 1


def test_exhausted_retries_fail_with_the_functions_error_and_release_the_lock(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.faults.fail_next(
        engine.workflow.side_effect_function, 4, side_effect.transient_error(engine), "provider down"
    )

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "FAILED"
    assert outcome.error == side_effect.transient_error(engine)
    assert outcome.path.count("RunSideEffect") == 1 and outcome.path[-1] == "SideEffectFailed"
    assert outcome.cause == "provider down"  # the function's errorMessage
    assert engine.workflow.record(key) is None
    assert engine.workflow.side_effect_runs(key) == 0


def test_worker_crash_keeps_the_lock_until_its_lease_ends_then_a_retry_runs_once(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # A process that dies may die after the effect: its outcome is unknown, so the key is not released.
    engine.faults.crash_next(engine.workflow.side_effect_function)

    crashed = engine.run(start(key, side_effect.payload))

    assert crashed.error == WorkflowError.OUTCOME_UNKNOWN
    failures = [
        e["taskFailedEventDetails"]["error"] for e in engine.history(crashed.arn) if "taskFailedEventDetails" in e
    ]
    assert failures == ["Runtime.ExitError"]
    record = engine.workflow.record(key)
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
    engine.faults.fail_next(engine.workflow.side_effect_function, 5, STILL_RUNNING_ERROR)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.error == WorkflowError.OUTCOME_UNKNOWN
    waits = [d.requested_seconds for d in recorded_delays(outcome.arn) if d.kind == "retry"]
    timeout = engine.stack.side_effect_function(engine.workflow_path).timeout  # type: ignore[union-attr]
    assert len(waits) == 4 and sum(waits) > timeout
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == RecordStatus.IN_PROGRESS and record["owner"] == outcome.arn


def test_an_invocation_in_progress_that_ends_in_time_completes(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    engine.faults.fail_next(engine.workflow.side_effect_function, 4, STILL_RUNNING_ERROR)

    outcome = engine.run(start(key, side_effect.payload))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert side_effect.effects(engine, key) == 1


def test_a_lambda_service_error_fails_with_its_text_as_it_came_and_releases_the_lock(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # Not a function's error JSON (LS test_task_service_lambda.py::test_no_such_function, recorded
    # 25-11-2025: Lambda.ResourceNotFoundException, its cause "Function not found: ... (Service: AWSLambda;
    # ..."): ReadFunctionError passes it on unparsed.
    engine.faults.fail_next(
        engine.workflow.side_effect_function, 1, "Lambda.ResourceNotFoundException", "no such function"
    )

    outcome = engine.run(start(key, side_effect.payload))

    assert (outcome.status, outcome.error) == ("FAILED", "Lambda.ResourceNotFoundException")
    assert outcome.cause and "no such function" in outcome.cause and not outcome.cause.startswith("{")
    assert outcome.path[-3:] == ["ReleaseLock", "ReadFunctionError", "SideEffectFailedAsReported"]
    assert engine.workflow.record(key) is None
    assert engine.workflow.side_effect_runs(key) == 0
