"""The interleaving checker: the quick tier of ``make explore``, and proof that it finds what it must.

The quick tier runs in ``make test``; ``make explore`` runs every order of 2 executions with each
single event, seeded random orders of 3, and slow owners. The self-tests derive broken protocols from
the real definition (one condition clause deleted, with the mutation generator of ``make mutants``) and
assert the checker reports the violation with a short replayable schedule.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
from pathlib import Path

import pytest

from idemflow.engine import Engine
from idemflow.explore import (
    BASE_PARAMETERS,
    FULL,
    QUICK,
    Checker,
    Run,
    Settings,
    Target,
    describe,
    explore,
    load_targets,
)
from idemflow.explore.checker import ScheduleRun, workflow_effects
from idemflow.mutants import generate_mutants, render_definition
from idemflow.mutants.config import load_config

pytestmark = pytest.mark.explore

# One seed per run: the root conftest.py chooses it (or takes IDEMFLOW_EXPLORE_SEED) and prints it.
SEED = int(os.environ.get("IDEMFLOW_EXPLORE_SEED") or random.SystemRandom().randrange(2**31))


def mutant(mutant_id: str) -> str:
    config = load_config(Path.cwd())  # the definition make mutants mutates: the template's DefinitionUri
    definition = json.loads((config.repo / config.definition).read_text())
    return render_definition({m.id: m for m in generate_mutants(definition)}[mutant_id].definition)


# The quick tier on the project's template (its example side effect guards itself); a smaller one runs on
# the outbox example (a side effect that does not) in test_interleavings_unguarded.py, beside this module.
TARGETS = load_targets()  # the project's pyproject.toml: [tool.idemflow.explore] targets
PLAN = [(TARGETS["project"], run) for run in QUICK]


@pytest.mark.parametrize(("target", "run"), PLAN, ids=[f"{t.name}: {r.name}" for t, r in PLAN])
def test_the_quick_tier_finds_no_violation(target: Target, run: Run) -> None:
    report = explore(run, SEED, target)

    assert report.schedules > 0
    assert not report.violations, "\n".join(describe(run, report, 0)) + f"\n(seed {SEED}: IDEMFLOW_EXPLORE_SEED)"
    if run.strategy == "exhaustive":
        assert report.complete
        # Every outcome a fail-fast duplicate can have, and nothing else.
        assert set(report.outcomes) == {"SUCCEEDED", "IdempotencyInProgress"}


def violations_of(
    definition: str, max_polls: int = 0, schedules: int = 200, target: Target | None = None
) -> dict[str, list[str]]:
    """What the checker finds with ``definition`` in place of the workflow's, on ``target`` (default: the default
    template)."""
    overrides = {**BASE_PARAMETERS, "InProgressMaxPolls": str(max_polls)}
    template = None if target is None else target.template
    with Engine(template, wait_time_scale=0, parameter_overrides=overrides, definition_text=definition) as engine:
        settings = Settings(executions=2, events=()) if target is None else Settings(2, (), payload=target.payload)
        checker = Checker(engine, settings)
        try:
            report = checker.sample(schedules, seed=7, stop_at_first=True)
            found = {name: list(v.schedule) for name, v in report.violations.items()}
            for violation in report.violations.values():  # the printed choices replay the same violation
                replayed = checker.replay(violation.choices)
                assert violation.invariant in {v.invariant for v in replayed.violations}
            return found
        finally:
            checker.close()


def test_it_finds_a_takeover_of_a_live_lock() -> None:
    # The lock-protocol review's finding 1: an acquisition that may replace a lock whose lease is live.
    found = violations_of(mutant("AcquireLock.ConditionExpression#2.1"))

    assert "two executions ran the side effect" in found or "side effect without a live lock" in found, found
    shortest = min(found.values(), key=len)
    assert len(shortest) <= 12 and sum("AcquireLock" in step for step in shortest) == 2


def test_it_finds_two_children_run_under_a_lock_taken_over_while_live() -> None:
    # The same takeover on a side effect that is a state machine (the child target): the acquisition that may
    # replace a live lock lets a second execution start a child while the first's runs (or ran, in the same
    # record's lifetime).
    found = violations_of(mutant("AcquireLock.ConditionExpression#2.1"), target=TARGETS["child"])

    assert "two executions ran the side effect" in found or "side effect without a live lock" in found, found
    shortest = min(found.values(), key=len)
    assert sum("RunSideEffectStateMachine" in step for step in shortest) >= 2, shortest


def test_it_finds_an_overwritten_completion() -> None:
    # An acquisition that may replace a COMPLETED record whose expiry has not passed.
    found = violations_of(mutant("AcquireLock.ConditionExpression#1.1"))

    assert "completed record changed" in found, found


def replay_run(target: Target, run: Run, choices: tuple[int, ...], *, effects: bool = False) -> ScheduleRun:
    """One schedule of ``run`` on ``target``, its choices as a random run's violation prints them."""
    overrides = {**BASE_PARAMETERS, "InProgressMaxPolls": str(run.max_polls)}
    with Engine(target.template, wait_time_scale=0, parameter_overrides=overrides) as engine:
        counted = workflow_effects if effects else None
        settings = Settings(run.executions, run.events, run.max_events, run.slow_owners, target.payload, counted)
        checker = Checker(engine, settings)
        try:
            return checker.replay(choices)
        finally:
            checker.close()


# A lost race, step by step: both read no record and compute a lease, A acquires, B's acquisition fails and
# B goes back to reading A's record, A saves its result. B's lease no longer counts (it computes a new one if
# it acquires), so time may pass here; the checker had compared the request's operation with "getItem" while
# moto's task names it "get_item", kept B inside its lease until B ended, and never let time pass after a
# lost race.
LOST_RACE_THEN_TIME = (0, 1, 0, 1, 0, 1, 0, 0, 0, 1)


def test_time_may_pass_once_an_execution_that_lost_the_race_reads_the_winners_record() -> None:
    run = Run("2 executions, 1 poll, expiry", max_polls=1, executions=2, strategy="random", events=("expiry",))
    schedule = replay_run(TARGETS["project"], run, LOST_RACE_THEN_TIME)

    steps = [step.what for step in schedule.steps]
    assert steps[5:10] == [
        "B: AcquireLock put_item",
        "A: RunSideEffect idemflow-ChargeFunction",
        "A: RunSideEffect response",
        "A: SaveResult update_item",
        "time passes 361 s (expiry)",
    ], steps
    assert schedule.violations == [], [v.message for v in schedule.violations]


# Found by the full tier "3 executions, 2 polls, random orders, up to 2 events" (seed 1) once time could pass
# after a lost race: A is stopped while its side effect runs, B and C lose the race, time passes beyond the
# lease and C takes the key over. The checker had kept A inside the side effect for ever (it holds a stopped
# execution's response), where A's invocation ended within the function's Timeout, before its lease.
STOPPED_OWNER_THEN_TAKEOVER = (2, 1, 2, 0, 0, 1, 0, 0, 3, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0)


def test_an_owner_stopped_inside_its_side_effect_is_out_of_it_once_its_lease_has_passed() -> None:
    # The schedule was recorded before the redrive event existed: replayed with the events it had.
    found = next(r for r in FULL if r.executions == 3)
    run = dataclasses.replace(found, events=tuple(e for e in found.events if e != "redrive"))
    schedule = replay_run(TARGETS["project"], run, STOPPED_OWNER_THEN_TAKEOVER)

    steps = [step.what for step in schedule.steps]
    stopped, passes = steps.index("A is stopped before RunSideEffect"), steps.index("time passes 301 s (lease)")
    assert steps[stopped - 1] == "A: RunSideEffect idemflow-ChargeFunction" and stopped < passes, steps
    assert "C: RunSideEffect idemflow-ChargeFunction" in steps[passes:], steps
    assert schedule.violations == [], [v.message for v in schedule.violations]
