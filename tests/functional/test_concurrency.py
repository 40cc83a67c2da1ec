"""Many duplicates at once: exactly one side effect, and every caller gets the same result.

Waits are scaled to zero, as in every functional test: no execution sleeps. A duplicate that finds the
key held must still wait for the owner rather than spend its polls before the owner finishes, so the
module's gate (:class:`OwnerFirst`, an ``idemflow.engine.Gate``) holds every read after an
execution's first until an owner, an execution that reached ``SaveResult``, has ended. The race that
matters, 50 first reads and lock writes at once, is left to the threads.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from idemflow.contract import RecordStatus
from idemflow.engine import Engine, ExecutionOutcome
from idemflow.engine.state import TaskRequest

from .side_effects import SideEffect

DUPLICATES = 50
OWNER_TIMEOUT = 60.0
"""Seconds a held read waits for an owner to end before it fails its execution (the test then fails)."""


class OwnerFirst:
    """Holds each execution's second and later ``ReadRecord`` until an execution that reached
    ``SaveResult`` (the owner) has ended: what a real poll interval longer than the owner's run gives."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reads: Counter[str] = Counter()
        self._owners: set[str] = set()
        self._owner_ended = threading.Event()

    def before(self, request: TaskRequest) -> None:
        if request.state == "SaveResult":
            with self._lock:
                self._owners.add(request.execution_arn)
        if request.state != "ReadRecord":
            return
        with self._lock:
            self._reads[request.execution_arn] += 1
            again = self._reads[request.execution_arn] > 1
        if again and not self._owner_ended.wait(OWNER_TIMEOUT):
            raise AssertionError(f"no owner ended within {OWNER_TIMEOUT:g} s")

    def after(self, request: TaskRequest) -> None:
        pass

    def ended(self, execution_arn: str) -> None:
        with self._lock:
            if execution_arn in self._owners:
                self._owner_ended.set()


@pytest.fixture(scope="module")
def engine(side_effect: SideEffect) -> Iterator[Engine]:
    with Engine(side_effect.template, wait_time_scale=0) as running:
        yield running


@pytest.fixture
def owner_first(engine: Engine) -> Iterator[OwnerFirst]:
    gate = OwnerFirst()
    engine.set_gate(gate)
    try:
        yield gate
    finally:
        engine.set_gate(None)


def run_concurrently(engine: Engine, key: str, count: int, payload: object) -> list[ExecutionOutcome]:
    execution_input = {"idempotencyKey": key, "payload": payload}
    with ThreadPoolExecutor(max_workers=16) as pool:
        arns = list(pool.map(lambda _: engine.start_execution(execution_input), range(count)))
    return [engine.wait(arn, timeout=120) for arn in arns]


def test_fifty_concurrent_duplicates_run_the_side_effect_once_and_all_get_the_same_result(
    engine: Engine, side_effect: SideEffect, owner_first: OwnerFirst
) -> None:
    key = f"order-{uuid.uuid4()}"

    outcomes = run_concurrently(engine, key, DUPLICATES, side_effect.payload)

    statuses = Counter(o.status if o.status == "SUCCEEDED" else o.error for o in outcomes)
    assert statuses == {"SUCCEEDED": DUPLICATES}, statuses
    assert engine.workflow.side_effect_runs(key) == 1
    assert side_effect.effects(engine, key) == 1
    results = {str(o.output["result"]) for o in outcomes}
    assert len(results) == 1
    assert sum(1 for o in outcomes if o.output["replayed"] is False) == 1
    owners = [o for o in outcomes if o.output["replayed"] is False]
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == RecordStatus.COMPLETED and record["owner"] == owners[0].arn


def test_concurrent_duplicates_of_a_completed_key_never_invoke_the_side_effect(
    engine: Engine, side_effect: SideEffect
) -> None:
    key = f"order-{uuid.uuid4()}"
    engine.run({"idempotencyKey": key, "payload": side_effect.payload})
    invocations_before = len(engine.workflow.invocations())

    outcomes = run_concurrently(engine, key, DUPLICATES, side_effect.payload)

    assert all(o.status == "SUCCEEDED" and o.output["replayed"] is True for o in outcomes)
    assert len(engine.workflow.invocations()) == invocations_before
    assert side_effect.effects(engine, key) == 1
