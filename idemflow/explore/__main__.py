"""``python -m idemflow.explore``: the interleaving checker's tiers (``make explore``; ``--quick`` in make test).

Each run deploys a template that holds the workflow (``--target``: the project's template, whose example
side effect guards itself, or ``examples/outbox``, which nests the workflow around a function that does
not) on the embedded engine with the run's parameters and explores the schedules of one key's executions.
It prints, per run, the schedules explored and the violations
(each with its shortest schedule and the choices that replay it), and exits 1 on any violation.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from idemflow.contract import PROJECT_ROOT, TEMPLATE_PATH, sample_payload
from idemflow.engine import Engine
from idemflow.explore.checker import ALL_EVENTS, Checker, Report, Settings


@dataclass(frozen=True)
class Target:
    """A template holding the workflow, a payload its side effect accepts, and where its effects are
    written, when the checker counts them: (the stack output naming the table, the attribute holding
    the idempotency key)."""

    name: str
    template: Path
    payload: Any
    effects_table: tuple[str, str] | None = None

    def effects(self) -> Callable[[Engine, str], int] | None:
        if self.effects_table is None:
            return None
        output, attribute = self.effects_table

        def count(engine: Engine, key: str) -> int:
            assert engine.stack is not None
            return engine.count_items(engine.stack.outputs[output], attribute, key)

        return count


OUTBOX_TEMPLATE = PROJECT_ROOT / "examples" / "outbox" / "template.yaml"
TARGETS: dict[str, Target] = {
    # The project's default side effect guards itself, in tables of its own: its effects are not counted here.
    "project": Target("project", TEMPLATE_PATH, sample_payload(TEMPLATE_PATH)),
    # The outbox writes a row per invocation: every effect shows in its table.
    "outbox": Target("outbox", OUTBOX_TEMPLATE, sample_payload(OUTBOX_TEMPLATE), ("OutboxTableName", "idempotencyKey")),
}
"""The templates the checker explores, each with its sample event's payload (events/event.json)."""


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


def explore(run: Run, seed: int, definition: str | None = None, target: Target = TARGETS["project"]) -> Report:
    overrides = {**BASE_PARAMETERS, "InProgressMaxPolls": str(run.max_polls)}
    settings = Settings(run.executions, run.events, run.max_events, run.slow_owners, target.payload, target.effects())
    with Engine(
        target.template, wait_time_scale=0, parameter_overrides=overrides, definition_text=definition
    ) as engine:
        checker = Checker(engine, settings)
        try:
            if run.strategy == "exhaustive":
                return checker.exhaustive()
            return checker.sample(run.schedules, seed)
        finally:
            checker.close()


def describe(run: Run, report: Report, seconds: float) -> list[str]:
    how = "complete" if report.complete else f"seed {report.seed}"
    lines = [
        f"{run.name}: {report.schedules} schedules ({how}), {len(report.violations)} violations, {seconds:.0f} s",
        "  outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(report.outcomes.items())),
    ]
    for violation in report.violations.values():
        lines.append(f"  VIOLATION {violation.invariant}: {violation.message}")
        lines.extend(f"    {i + 1:2}. {step}" for i, step in enumerate(violation.schedule))
        lines.append(f"    replay: --replay {','.join(map(str, violation.choices))}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m idemflow.explore", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the fast subset that make test runs")
    parser.add_argument("--seed", type=int, default=None, help="seed of the random runs (default: drawn, printed)")
    parser.add_argument("--only", default="", help="run only the runs whose name contains this text")
    parser.add_argument("--definition", type=Path, help="explore another raw definition (e.g. a mutant)")
    parser.add_argument(
        "--target",
        choices=sorted(TARGETS),
        action="append",
        help="the template to explore (repeatable; default: every one): project (template.yaml, whose example "
        "side effect guards itself) or outbox (examples/outbox: a side effect that does not)",
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    definition = args.definition.read_text() if args.definition else None
    targets = [TARGETS[name] for name in args.target or TARGETS]
    plan = [
        (target, run)
        for i, target in enumerate(targets)
        for run in ((QUICK if i == 0 else QUICK_SECOND) if args.quick else FULL)
        if args.only in run.name
    ]
    print(f"interleaving checker: {len(plan)} runs, seed {seed}", flush=True)
    total = violations = 0
    for target, run in plan:
        started = time.monotonic()
        report = explore(run, seed, definition, target)
        total += report.schedules
        violations += len(report.violations)
        print(f"[{target.name}] " + "\n".join(describe(run, report, time.monotonic() - started)), flush=True)
    print(f"explored {total} schedules: {violations} violations")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
