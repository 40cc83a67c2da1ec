"""The checker's quick tier on a side effect that is not idempotent by itself (examples/outbox, which
nests the workflow): every fail-fast order of two executions, and fewer random schedules than on the
project's template, so that make test stays about a minute (its own module: it runs beside the other)."""

from __future__ import annotations

import pytest

from idemflow.engine import Engine
from idemflow.explore import (
    BASE_PARAMETERS,
    FULL,
    QUICK_SECOND,
    Checker,
    Run,
    Settings,
    describe,
    explore,
    load_targets,
)
from idemflow.explore.checker import workflow_effects

from .test_interleavings import SEED, replay_run

pytestmark = pytest.mark.explore


@pytest.mark.parametrize("run", QUICK_SECOND, ids=[r.name for r in QUICK_SECOND])
def test_the_quick_tier_finds_no_violation_on_an_unguarded_side_effect(run: Run) -> None:
    report = explore(run, SEED, load_targets()["outbox"])

    assert report.schedules > 0
    assert not report.violations, "\n".join(describe(run, report, 0)) + f"\n(seed {SEED}: IDEMFLOW_EXPLORE_SEED)"
    if run.strategy == "exhaustive":
        assert report.complete
        assert set(report.outcomes) == {"SUCCEEDED", "IdempotencyInProgress"}


def test_it_counts_an_effect_no_invocation_shows() -> None:
    # The invariant reads the outbox itself: a second row for a key (here written behind the workflow's
    # back, as a function that wrote twice would) is a violation, though every invocation was licensed.
    target = load_targets()["outbox"]
    with Engine(target.template, wait_time_scale=0, parameter_overrides=BASE_PARAMETERS) as engine:
        assert engine.stack is not None
        table = engine.stack.outputs["OutboxTableName"]

        def write_again() -> None:
            (row,) = engine.tables.items(table)
            engine.client("dynamodb").put_item(
                TableName=table,
                Item={k: {"S": str(v)} for k, v in {**row, "notificationId": "a-second-write"}.items()},
            )

        engine.faults.before_dynamodb("SaveResult", write_again)
        checker = Checker(engine, Settings(executions=1, events=(), payload=target.payload, effects=workflow_effects))
        try:
            report = checker.sample(1, seed=SEED)
        finally:
            checker.close()

    assert set(report.violations) == {"more effects than the protocol allows"}, report.violations
    assert (
        "2 effects for the key, at most 1 allowed" in report.violations["more effects than the protocol allows"].message
    )


# Found by the full tier's slow owners on this target (seed 1): A's ComputeLease entered before the time
# event, so A's lease counted from the earlier time and its result completed already expired; B, which
# read no record, then took the expired result over and ran again, as the guarantees allow ("after
# expiresAt the key can run again"). The checker had judged A's result against B's record.
EXPIRED_AT_BIRTH = (0, 5, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0)


def test_an_expired_result_taken_over_by_a_new_run_starts_a_new_lifetime() -> None:
    run = next(r for r in FULL if r.slow_owners)
    schedule = replay_run(load_targets()["outbox"], run, EXPIRED_AT_BIRTH, effects=True)

    steps = [step.what for step in schedule.steps]
    # The schedule is still the one found: time passes before A's lock, A saves, then B takes the key.
    assert steps[1].startswith("time passes") and steps.index("A: AcquireLock put_item") > 1, steps
    assert steps.index("A: SaveResult update_item") < steps.index("B: AcquireLock put_item"), steps
    assert schedule.outcomes == {"SUCCEEDED": 2}
    assert schedule.violations == [], [v.message for v in schedule.violations]
