"""The checker on a side effect that is a state machine (the ``child`` target: tests/explore/fixtures/child, the
workflow nested with ``SideEffectStateMachineArn``): the same invariants, its StartExecution ordered among the
other requests and refused by the events ``fail`` and ``transient``, the child's runs counted from its own table.
One engine for the module, and few schedules: ``make explore`` runs the full tiers (``--target child``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from idemflow.engine import Engine
from idemflow.explore import BASE_PARAMETERS, QUICK_SECOND, Checker, Run, Settings, describe, load_targets
from idemflow.explore.checker import workflow_effects

from .test_interleavings import SEED

pytestmark = pytest.mark.explore

TARGET = load_targets()["child"]
# The quick tier's random run on a second target, cut to what a make test affords here.
RANDOM = next(r for r in QUICK_SECOND if r.strategy == "random")
SCHEDULES = 30


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    overrides = {**BASE_PARAMETERS, "InProgressMaxPolls": str(RANDOM.max_polls)}
    with Engine(TARGET.template, wait_time_scale=0, parameter_overrides=overrides) as running:
        yield running


def checker(engine: Engine, executions: int, events: tuple[str, ...], max_events: int = 1) -> Checker:
    return Checker(engine, Settings(executions, events, max_events, False, TARGET.payload, workflow_effects))


def test_the_side_effect_it_orders_is_the_state_machine_the_workflow_starts(engine: Engine) -> None:
    found = checker(engine, 1, ())
    try:
        assert (found.side_effect.state, found.side_effect.service) == ("RunSideEffectStateMachine", "states")
        assert found.side_effect.target == engine.workflow.side_effect_state_machine.arn
        assert found.side_effect.events == ("fail", "transient")
    finally:
        found.close()


def test_random_orders_with_an_event_find_no_violation(engine: Engine) -> None:
    explorer = checker(engine, RANDOM.executions, RANDOM.events, RANDOM.max_events)
    try:
        report = explorer.sample(SCHEDULES, SEED)
    finally:
        explorer.close()

    assert report.schedules == SCHEDULES
    assert not report.violations, "\n".join(describe(RANDOM, report, 0)) + f"\n(seed {SEED}: IDEMFLOW_EXPLORE_SEED)"
    assert report.outcomes.get("SUCCEEDED", 0) > 0


def test_a_refused_start_at_every_point_of_one_execution_is_a_documented_outcome(engine: Engine) -> None:
    # Every schedule of one execution with one refusal (for good, or once): refused for good, the key is released
    # and the execution fails with Step Functions' name for it; refused once, the start is retried and succeeds.
    run = Run("1 execution, every point, a refused start", 0, 1, "exhaustive", events=("fail", "transient"))
    explorer = checker(engine, run.executions, run.events)
    try:
        report = explorer.exhaustive()
    finally:
        explorer.close()

    assert report.complete and not report.violations, "\n".join(describe(run, report, 0))
    assert set(report.outcomes) == {"SUCCEEDED", "StepFunctions.StateMachineDoesNotExistException"}


def test_it_counts_a_childs_run_that_no_start_shows(engine: Engine) -> None:
    # The invariant reads the child's own table: a second row for a key (written here behind the workflow's back,
    # as a child that ran twice would leave) is a violation, though the one start was licensed.
    assert engine.stack is not None
    table = engine.stack.outputs["RunsTableName"]

    def run_again() -> None:
        (row,) = engine.tables.items(table)
        engine.client("dynamodb").put_item(
            TableName=table, Item={"runId": {"S": "a-second-run"}, "idempotencyKey": {"S": row["idempotencyKey"]}}
        )

    engine.faults.before_dynamodb("SaveResult", run_again)
    explorer = checker(engine, 1, ())
    try:
        report = explorer.sample(1, seed=SEED)
    finally:
        explorer.close()

    assert set(report.violations) == {"more effects than the protocol allows"}, report.violations
    assert (
        "2 effects for the key, at most 1 allowed" in report.violations["more effects than the protocol allows"].message
    )
