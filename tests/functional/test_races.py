"""Races at scale, with real threads: the fail-fast configuration (InProgressMaxPolls=0), 25 rounds of 8.

Rounds like these, with no fault at all, are where an acquisition that is not one conditional write
runs the side effect twice (tests/explore/test_interleavings.py finds such a schedule for a weakened
AcquireLock condition). The interleaving checker explores the orders systematically; this is the same
promise under the engine's real thread timing. Each test runs against a side effect that guards itself and one
that does not (tests/functional/side_effects.py): with the second, one effect per key is counted in its
own table, where no guard of the function can hide a second run.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from idemflow.contract import RecordStatus, WorkflowError
from idemflow.engine import Engine

from .side_effects import SideEffect

ROUNDS, CONCURRENT = 25, 8


@pytest.fixture(scope="module")
def engine(side_effect: SideEffect) -> Iterator[Engine]:
    with Engine(side_effect.template, wait_time_scale=0, parameter_overrides={"InProgressMaxPolls": "0"}) as running:
        yield running


def test_fail_fast_rounds_run_the_side_effect_exactly_once_per_key(engine: Engine, side_effect: SideEffect) -> None:
    outcomes: Counter[str] = Counter()
    with ThreadPoolExecutor(max_workers=CONCURRENT) as pool:
        for _ in range(ROUNDS):
            key = f"race-{uuid.uuid4()}"
            execution_input = {"idempotencyKey": key, "payload": side_effect.payload}
            arns = list(pool.map(engine.start_execution, [execution_input] * CONCURRENT))
            ended = [engine.wait(arn, timeout=60, with_path=False) for arn in arns]

            assert engine.workflow.side_effect_runs(key) == 1, key
            assert side_effect.effects(engine, key) == 1, key
            succeeded = [o for o in ended if o.status == "SUCCEEDED"]
            assert {o.error for o in ended if o.status != "SUCCEEDED"} <= {WorkflowError.IN_PROGRESS.value}
            assert sum(1 for o in succeeded if o.output["replayed"] is False) == 1
            assert len({str(o.output["result"]) for o in succeeded}) == 1
            record = engine.workflow.record(key)
            assert record is not None and record["status"] == RecordStatus.COMPLETED
            outcomes.update("replayed" if o.replayed else (o.error or "ran") for o in ended)
    assert outcomes["ran"] == ROUNDS


def test_fail_fast_never_waits_for_a_live_owner(engine: Engine, side_effect: SideEffect) -> None:
    key = f"race-{uuid.uuid4()}"
    execution_input = {"idempotencyKey": key, "payload": side_effect.payload}
    duplicates = []
    # While the first execution holds the key (just before it saves its result), a duplicate runs.
    engine.faults.before_dynamodb("SaveResult", lambda: duplicates.append(engine.run(execution_input)))

    first = engine.run(execution_input)

    assert first.status == "SUCCEEDED"
    assert duplicates[0].error == WorkflowError.IN_PROGRESS.value
    assert "WaitForOwner" not in duplicates[0].path and duplicates[0].path[-1] == "InProgress"
    assert side_effect.effects(engine, key) == 1
