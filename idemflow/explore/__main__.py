"""``python -m idemflow.explore``: the interleaving checker's tiers (``make explore``; ``--quick`` in make test).

Each run deploys a template the project declares (``[tool.idemflow.explore] targets`` in its
``pyproject.toml``) on the embedded engine with the run's parameters and explores the schedules of one
key's executions. It prints, per run, the schedules explored and the violations (each with its shortest
schedule and the choices that replay it), and exits 1 on any violation. A long run prints its progress
(schedules, time, rate, memory) every 500 schedules or 30 s; ``--limit N`` cuts each run to N schedules.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from idemflow.explore.errors import ReductionAssumptionError, TargetsError
from idemflow.explore.progress import Progress, memory_text
from idemflow.explore.targets import load_targets
from idemflow.explore.tiers import FULL, QUICK, QUICK_SECOND, describe, explore


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: not a positive number")
    return value


def choices(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: expected the comma-separated choices a violation prints") from None
    if any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text}: choices are not negative")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m idemflow.explore", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the fast subset that make test runs")
    parser.add_argument("--seed", type=int, default=None, help="seed of the random runs (default: drawn, printed)")
    parser.add_argument("--only", default="", help="run only the runs whose name contains this text")
    parser.add_argument(
        "--limit",
        type=positive,
        default=None,
        help="at most this many schedules per run (an exhaustive run cut short is reported incomplete)",
    )
    parser.add_argument(
        "--replay",
        type=choices,
        metavar="CHOICES",
        help="run one schedule again: the choices a violation prints (with --target and --only naming its run)",
    )
    parser.add_argument("--definition", type=Path, help="explore another raw definition (e.g. a mutant)")
    parser.add_argument(
        "--target",
        action="append",
        help="a target the project declares ([tool.idemflow.explore] targets; repeatable; default: every one)",
    )
    args = parser.parse_args(argv)
    try:
        declared = load_targets()
    except TargetsError as exc:
        parser.error(str(exc))
    unknown = sorted(set(args.target or ()) - set(declared))
    if unknown:
        parser.error(f"--target {', '.join(unknown)}: not declared (declared: {', '.join(declared)})")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    definition = args.definition.read_text() if args.definition else None
    targets = [declared[name] for name in args.target or declared]
    plan = [
        (target, run)
        for i, target in enumerate(targets)
        for run in ((QUICK if i == 0 else QUICK_SECOND) if args.quick else FULL)
        if args.only in run.name
    ]
    if args.replay is not None and len(plan) != 1:
        parser.error(
            f"--replay runs one schedule of one run: name it with --target and --only ({len(plan)} runs match)"
        )
    print(f"interleaving checker: {len(plan)} runs, seed {seed}", flush=True)
    total = violations = 0
    for target, run in plan:
        started = time.monotonic()
        known = run.schedules if run.strategy == "random" else None
        if args.limit is not None:
            known = args.limit if known is None else min(known, args.limit)
        progress = Progress(f"[{target.name}] {run.name}", known)
        try:
            report = explore(run, seed, target, definition, limit=args.limit, progress=progress, replay=args.replay)
        except ReductionAssumptionError as exc:
            print(f"[{target.name}] {run.name}: {exc}", file=sys.stderr, flush=True)
            return 2
        total += report.schedules
        violations += len(report.violations)
        print(f"[{target.name}] " + "\n".join(describe(run, report, time.monotonic() - started)), flush=True)
        print(f"  memory: {memory_text()}", flush=True)
    print(f"explored {total} schedules: {violations} violations")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
