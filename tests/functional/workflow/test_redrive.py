"""Redriving the workflow (RedriveExecution) where it can stop, as docs/protocol.md ("Redrive") says.

A redrive continues at the state the execution stopped in, with that state's input and the same ARN: the
record still names it as the owner. These tests redrive the real definition where that matters.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import pytest

from idemflow.contract import RecordStatus, WorkflowError
from idemflow.engine import Engine
from idemflow.engine.services.stepfunctions.clock import parse_rfc3339

from ..side_effects import SideEffect
from .helpers import start


@pytest.fixture
def later(engine: Engine) -> Iterator[None]:
    yield
    engine.set_clock_offset(0)


def redriven(engine: Engine, arn: str) -> list[str]:
    """Redrive a failed execution, wait for it, and return the states it entered after the redrive."""
    before = len(engine.path(arn))
    engine.client("stepfunctions").redrive_execution(executionArn=arn)
    outcome = engine.wait(arn)
    return outcome.path[before:]


def test_a_run_stopped_before_its_lock_and_redriven_after_its_lease_takes_the_key_with_a_fresh_lease(
    engine: Engine, key: str, side_effect: SideEffect, later: None
) -> None:
    # AcquireLock fails through its 4 retries (throttled): the execution fails there, having computed its
    # lease. Redriven after that lease has passed, AcquireLock writes the lock with the dead lease; CheckLease
    # sends it back to read, and it takes its own dead lock over with a fresh lease before the side effect.
    engine.faults.throttle_next("AcquireLock", 5)
    first = engine.run(start(key, side_effect.payload))
    assert (first.status, first.error) == ("FAILED", "DynamoDB.ProvisionedThroughputExceededException")
    assert first.path[-1] == "AcquireLock" and engine.workflow.record(key) is None
    lease = int(engine.workflow.stack.parameters["LockLeaseSeconds"])
    engine.set_clock_offset(lease + 1)

    path = redriven(engine, first.arn)

    outcome = engine.describe(first.arn)
    assert outcome.status == "SUCCEEDED", outcome.cause
    assert path[:9] == [
        "AcquireLock",
        "CheckLease",  # the lease it wrote had passed
        "CountAttempt",
        "ReadRecord",
        "CheckRecord",  # its own lock, lease passed: taken over like any other
        "ComputeLease",
        "AcquireLock",
        "CheckLease",
        "RunSideEffect",
    ]
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == RecordStatus.COMPLETED and record["owner"] == first.arn
    now = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=lease + 1)
    leased = parse_rfc3339(record["leaseExpiresAt"])
    assert leased is not None and leased > now  # the fresh lease, from the clock as it is now
    assert engine.workflow.side_effect_runs(key) == 1 and side_effect.effects(engine, key) == 1


def test_a_run_redriven_at_a_fail_state_fails_again_and_runs_nothing(
    engine: Engine, key: str, side_effect: SideEffect
) -> None:
    # Developer guide, redrive, Fail state: "Reenters the Fail state and fails again."
    engine.run(start(key, side_effect.payload))
    reused = engine.run(start(key, side_effect.other_payload))
    assert reused.error == WorkflowError.KEY_REUSED

    path = redriven(engine, reused.arn)

    outcome = engine.describe(reused.arn)
    assert (outcome.status, outcome.error, path) == ("FAILED", WorkflowError.KEY_REUSED, ["KeyReused"])
    assert engine.workflow.side_effect_runs(key) == 1
