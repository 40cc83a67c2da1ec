"""The interleaving checker's tiers: which runs, with which parameters, and how a run is reported.

A run deploys a target's template (``targets.py``) on the embedded engine with the run's parameters and
explores the schedules of one key's executions (``checker.py``). ``make test`` runs the quick tier
(:data:`QUICK` on the first target, :data:`QUICK_SECOND` on the others), ``make explore`` the full one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from idemflow.engine import Engine
from idemflow.explore.checker import ALL_EVENTS, Checker, Report, Settings, workflow_effects
from idemflow.explore.targets import Target


@dataclass(frozen=True)
class Run:
    name: str
    max_polls: int
    executions: int
    strategy: str
    """``exhaustive`` or ``random``."""
    events: tuple[str, ...] = ALL_EVENTS
    max_events: int = 1
    schedules: int = 0
    """For random runs: how many; for exhaustive ones: 0 (all)."""
    slow_owners: bool = False


# Parameters of every run: a short window, so that "expiry" (time beyond lease and window) is a
# different event from "lease" (time beyond the lease only); LockLeaseSeconds keeps its default.
BASE_PARAMETERS = {"IdempotencyWindowSeconds": "60", "InProgressPollSeconds": "1"}

FULL: tuple[Run, ...] = (
    Run("2 executions, fail-fast, every order, each single event", 0, 2, "exhaustive"),
    Run("2 executions, 2 polls, every order, each single event", 2, 2, "exhaustive"),
    Run("3 executions, 2 polls, random orders, up to 2 events", 2, 3, "random", max_events=2, schedules=400),
    Run("2 executions, slow owners (leases run out anywhere), random", 1, 2, "random", schedules=300, slow_owners=True),
    Run(
        "2 executions, 1 poll, random orders, up to 3 events (a stop or failure, then a redrive)",
        1,
        2,
        "random",
        max_events=3,
        schedules=400,
    ),
)
QUICK: tuple[Run, ...] = (
    Run("2 executions, fail-fast, every order, no event", 0, 2, "exhaustive", events=()),
    Run("2 executions, 1 poll, random orders, up to 1 event", 1, 2, "random", schedules=120),
    Run("3 executions, 1 poll, random orders, up to 2 events", 1, 3, "random", max_events=2, schedules=40),
)
QUICK_SECOND: tuple[Run, ...] = (
    Run("2 executions, fail-fast, every order, no event", 0, 2, "exhaustive", events=()),
    Run("2 executions, 1 poll, random orders, up to 1 event", 1, 2, "random", schedules=60),
)
"""The quick tier on a second target (make test): every fail-fast order, and fewer random schedules."""


def explore(
    run: Run,
    seed: int,
    target: Target,
    definition: str | None = None,
    *,
    limit: int | None = None,
    progress: Callable[[int], None] | None = None,
    replay: tuple[int, ...] | None = None,
) -> Report:
    """Run ``run`` on ``target``: every schedule, or the first ``limit`` of them (``--limit``: a run cut
    short is reported incomplete), or only the one whose choices are ``replay`` (as a violation prints
    them); ``progress`` is called with the schedules done after each."""
    overrides = {**BASE_PARAMETERS, "InProgressMaxPolls": str(run.max_polls)}
    with Engine(
        target.template, wait_time_scale=0, parameter_overrides=overrides, definition_text=definition
    ) as engine:
        # Effects are counted where the template says they are (its Metadata.Idemflow.Effects), if it says.
        effects = None if engine.workflow.effects_table is None else workflow_effects
        settings = Settings(run.executions, run.events, run.max_events, run.slow_owners, target.payload, effects)
        checker = Checker(engine, settings)
        try:
            if replay is not None:
                report = Report(replayed=True)
                report.add(checker.replay(replay, reduced=run.strategy == "exhaustive"))
                return report
            if run.strategy == "exhaustive":
                return checker.exhaustive(limit, progress=progress)
            schedules = run.schedules if limit is None else min(run.schedules, limit)
            return checker.sample(schedules, seed, progress=progress)
        finally:
            checker.close()


def describe(run: Run, report: Report, seconds: float) -> list[str]:
    if report.replayed:
        how = "replayed"
    elif report.complete:
        how = "complete"
    elif report.seed is None:
        how = "the first ones only: --limit"
    else:
        how = f"seed {report.seed}"
    lines = [
        f"{run.name}: {report.schedules} schedules ({how}), {len(report.violations)} violations, {seconds:.0f} s",
        "  outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(report.outcomes.items())),
    ]
    for violation in report.violations.values():
        lines.append(f"  VIOLATION {violation.invariant}: {violation.message}")
        lines.extend(f"    {i + 1:2}. {step}" for i, step in enumerate(violation.schedule))
        lines.append(f"    replay: --replay {','.join(map(str, violation.choices))}")
    return lines
