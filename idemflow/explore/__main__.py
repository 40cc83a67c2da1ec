"""``python -m idemflow.explore``: the interleaving checker's tiers (``make explore``; ``--quick`` in make test).

Each run deploys a template the project declares (``[tool.idemflow.explore] targets`` in its
``pyproject.toml``) on the embedded engine with the run's parameters and explores the schedules of one
key's executions. It prints, per run, the schedules explored and the violations (each with its shortest
schedule and the choices that replay it), and exits 1 on any violation.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from idemflow.explore.targets import TargetsError, load_targets
from idemflow.explore.tiers import FULL, QUICK, QUICK_SECOND, describe, explore


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m idemflow.explore", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the fast subset that make test runs")
    parser.add_argument("--seed", type=int, default=None, help="seed of the random runs (default: drawn, printed)")
    parser.add_argument("--only", default="", help="run only the runs whose name contains this text")
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
    print(f"interleaving checker: {len(plan)} runs, seed {seed}", flush=True)
    total = violations = 0
    for target, run in plan:
        started = time.monotonic()
        report = explore(run, seed, target, definition)
        total += report.schedules
        violations += len(report.violations)
        print(f"[{target.name}] " + "\n".join(describe(run, report, time.monotonic() - started)), flush=True)
    print(f"explored {total} schedules: {violations} violations")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
