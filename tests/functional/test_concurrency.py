"""Many duplicates at once: exactly one side effect, and every caller gets the same result.

This module deploys its own engine with a small, non-zero wait scale: duplicates that find the key in
progress must really wait for the owner (a poll every 1 s scaled by 0.25 = 250 ms real time, for up
to 40 polls), otherwise they would burn their poll budget before the owner finishes.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from idemflow.contract import RecordStatus
from idemflow.engine import Engine, ExecutionOutcome

from .side_effects import SideEffect

pytestmark = pytest.mark.functional

DUPLICATES = 50


@pytest.fixture(scope="module")
def engine(side_effect: SideEffect) -> Iterator[Engine]:
    overrides = {"InProgressPollSeconds": "1", "InProgressMaxPolls": "40"}
    with Engine(side_effect.template, wait_time_scale=0.25, parameter_overrides=overrides) as running:
        yield running


def run_concurrently(engine: Engine, key: str, count: int, payload: object) -> list[ExecutionOutcome]:
    execution_input = {"idempotencyKey": key, "payload": payload}
    with ThreadPoolExecutor(max_workers=16) as pool:
        arns = list(pool.map(lambda _: engine.start_execution(execution_input), range(count)))
    return [engine.wait(arn, timeout=120) for arn in arns]


def test_fifty_concurrent_duplicates_run_the_side_effect_once_and_all_get_the_same_result(
    engine: Engine, side_effect: SideEffect
) -> None:
    key = f"order-{uuid.uuid4()}"

    outcomes = run_concurrently(engine, key, DUPLICATES, side_effect.payload)

    statuses = Counter(o.status if o.status == "SUCCEEDED" else o.error for o in outcomes)
    assert statuses == {"SUCCEEDED": DUPLICATES}, statuses
    assert engine.side_effect_runs(key) == 1
    assert side_effect.effects(engine, key) == 1
    results = {str(o.output["result"]) for o in outcomes}
    assert len(results) == 1
    assert sum(1 for o in outcomes if o.output["replayed"] is False) == 1
    owners = [o for o in outcomes if o.output["replayed"] is False]
    record = engine.record(key)
    assert record is not None and record["status"] == RecordStatus.COMPLETED and record["owner"] == owners[0].arn


def test_concurrent_duplicates_of_a_completed_key_never_invoke_the_side_effect(
    engine: Engine, side_effect: SideEffect
) -> None:
    key = f"order-{uuid.uuid4()}"
    engine.run({"idempotencyKey": key, "payload": side_effect.payload})
    invocations_before = len(engine.invocations())

    outcomes = run_concurrently(engine, key, DUPLICATES, side_effect.payload)

    assert all(o.status == "SUCCEEDED" and o.output["replayed"] is True for o in outcomes)
    assert len(engine.invocations()) == invocations_before
    assert side_effect.effects(engine, key) == 1
