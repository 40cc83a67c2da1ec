"""The side-effect contract's cases, each provoked by the engine's fault helpers, against a side effect
that guards itself and one that does not (tests/functional/side_effects.py).

What the workflow covers alone holds for both: one effect per key. The two cases docs/contract.md says need
the function's own guard (a response lost after the effect; a lease that ends while the function still runs)
give a second effect with the unguarded function, and one with the guarded one: the documented limit,
shown rather than hidden.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from idemflow.contract import RecordStatus, WorkflowError
from idemflow.engine import Engine, ExecutionOutcome
from idemflow.engine.services.stepfunctions.clock import recorded_delays

from .side_effects import DECLINED, SideEffect


@pytest.fixture(scope="module")
def engine(side_effect: SideEffect) -> Iterator[Engine]:
    with Engine(side_effect.template, wait_time_scale=0) as running:
        yield running


@pytest.fixture(autouse=True)
def _reset(engine: Engine) -> Iterator[None]:
    yield
    engine.faults.clear()
    engine.set_clock_offset(0)


@pytest.fixture
def key() -> str:
    return f"fault-{uuid.uuid4()}"


def run(engine: Engine, side_effect: SideEffect, key: str) -> ExecutionOutcome:
    return engine.run({"idempotencyKey": key, "payload": side_effect.payload})


def side_effect_outcomes(engine: Engine, key: str) -> list[str]:
    """What each invocation of the side effect for ``key`` came to (``ok``, ``error``, ``timeout`` ...)."""
    return [
        i.outcome
        for i in engine.workflow.invocations()
        if isinstance(i.event, dict) and i.event.get("idempotencyKey") == key
    ]


def lease_passes(engine: Engine) -> None:
    """The executions' clock moves beyond every lease taken so far (no real sleep)."""
    lease = int(engine.workflow.stack.parameters["LockLeaseSeconds"])
    engine.set_clock_offset(lease + 1)


# -- what the workflow covers alone ------------------------------------------------------------------
def test_transient_errors_and_throttling_before_the_effect_are_retried_then_one_effect(
    engine: Engine, side_effect: SideEffect, key: str
) -> None:
    fn = engine.workflow.side_effect_function
    engine.faults.fail_next(fn, 2, side_effect.transient_error(engine))
    engine.faults.fail_next(fn, 1, "Lambda.TooManyRequestsException")

    outcome = run(engine, side_effect, key)

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert engine.faults.pending() == {}, "every fault was injected"
    retried = [d.state_name for d in recorded_delays(outcome.arn) if d.kind == "retry"]
    assert retried == ["RunSideEffect"] * 3
    assert side_effect.effects(engine, key) == 1


def test_a_timeout_before_the_effect_is_retried_then_one_effect(
    engine: Engine, side_effect: SideEffect, key: str
) -> None:
    engine.faults.timeout_next(engine.workflow.side_effect_function)

    outcome = run(engine, side_effect, key)

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert side_effect_outcomes(engine, key) == ["timeout", "ok"]
    assert side_effect.effects(engine, key) == 1


def test_the_functions_own_error_releases_the_key_and_a_retry_runs_once(
    engine: Engine, side_effect: SideEffect, key: str
) -> None:
    engine.faults.fail_next(engine.workflow.side_effect_function, 1, DECLINED, "declined")

    failed = run(engine, side_effect, key)

    assert (failed.status, failed.error) == ("FAILED", DECLINED)
    assert engine.workflow.record(key) is None and side_effect.effects(engine, key) == 0
    retried = run(engine, side_effect, key)
    assert retried.status == "SUCCEEDED" and retried.replayed is False
    assert side_effect.effects(engine, key) == 1


def test_a_crash_keeps_the_key_until_its_lease_ends_then_a_retry_runs_once(
    engine: Engine, side_effect: SideEffect, key: str
) -> None:
    engine.faults.crash_next(engine.workflow.side_effect_function)

    crashed = run(engine, side_effect, key)

    assert crashed.error == WorkflowError.OUTCOME_UNKNOWN
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == RecordStatus.IN_PROGRESS
    assert run(engine, side_effect, key).error == WorkflowError.IN_PROGRESS, "the key is kept while the lease runs"
    lease_passes(engine)
    assert run(engine, side_effect, key).status == "SUCCEEDED"
    assert side_effect.effects(engine, key) == 1


def test_a_duplicate_of_a_completed_key_never_invokes_the_function(
    engine: Engine, side_effect: SideEffect, key: str
) -> None:
    first = run(engine, side_effect, key)
    duplicates = [run(engine, side_effect, key) for _ in range(3)]

    assert all(d.replayed is True and d.output["result"] == first.output["result"] for d in duplicates)
    assert engine.workflow.side_effect_runs(key) == 1 and side_effect.effects(engine, key) == 1


# -- what needs the function's own guard -------------------------------------------------------------
def expected_effects(side_effect: SideEffect) -> int:
    """Two invocations for a key: one effect with the function's own guard, two without it."""
    return 1 if side_effect.guarded else 2


def test_a_response_lost_after_the_effect_is_retried_and_the_effect_repeats_without_a_guard(
    engine: Engine, side_effect: SideEffect, key: str
) -> None:
    engine.faults.lose_response_next(engine.workflow.side_effect_function)  # Lambda.ServiceException: retried

    outcome = run(engine, side_effect, key)

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert engine.workflow.side_effect_runs(key) == 2
    assert side_effect.effects(engine, key) == expected_effects(side_effect)


def test_a_response_lost_after_the_effect_then_the_lease_ends_runs_it_again_without_a_guard(
    engine: Engine, side_effect: SideEffect, key: str
) -> None:
    # An error that is not retried but says nothing of the effect: the outcome is unknown, the key kept.
    engine.faults.lose_response_next(engine.workflow.side_effect_function, error="Lambda.Unknown")

    lost = run(engine, side_effect, key)
    assert lost.error == WorkflowError.OUTCOME_UNKNOWN and side_effect.effects(engine, key) == 1
    lease_passes(engine)
    retried = run(engine, side_effect, key)

    assert retried.status == "SUCCEEDED" and retried.replayed is False
    assert engine.workflow.side_effect_runs(key) == 2
    assert side_effect.effects(engine, key) == expected_effects(side_effect)


def test_a_lease_that_ends_while_the_function_still_runs_lets_another_execution_run_it_again(
    engine: Engine, side_effect: SideEffect, key: str
) -> None:
    takeover: list[ExecutionOutcome] = []

    def lease_ends_and_a_duplicate_arrives() -> None:
        # The owner's function has run, but its lease has passed before it could save the result.
        lease_passes(engine)
        takeover.append(run(engine, side_effect, key))

    engine.faults.before_dynamodb("SaveResult", lease_ends_and_a_duplicate_arrives)

    slow: Any = run(engine, side_effect, key)

    assert takeover[0].status == "SUCCEEDED" and takeover[0].replayed is False
    assert slow.error == WorkflowError.LOCK_LOST, "the late owner cannot overwrite the newer run"
    record = engine.workflow.record(key)
    assert record is not None and record["owner"] == takeover[0].arn
    assert engine.workflow.side_effect_runs(key) == 2
    assert side_effect.effects(engine, key) == expected_effects(side_effect)
