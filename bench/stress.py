"""Loops tests under load, to show they are not flaky: ``python -m bench.stress --loops 20 --burners 2``.

Each loop runs pytest on the given tests (default: the interleaving checker's quick tier and the race
tests) in a process of its own, while ``--burners`` processes spin on the CPU beside it (a machine other
work loads), and a new quick-tier seed each loop (``IDEMFLOW_EXPLORE_SEED``; printed, so a failure
replays). It prints one line a loop and exits 1 if any loop failed. A benchmark of steadiness, not a test:
``make test`` never runs it.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import subprocess
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TESTS = ["tests/explore", "tests/functional/test_races.py"]


def burn() -> None:  # pragma: no cover - a busy loop in a child process
    while True:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stress", description=__doc__)
    parser.add_argument("--loops", type=int, default=20)
    parser.add_argument("--burners", type=int, default=2, help="CPU-bound processes beside the tests")
    parser.add_argument("tests", nargs="*", default=DEFAULT_TESTS)
    args = parser.parse_args(argv)
    burners = [multiprocessing.Process(target=burn, daemon=True) for _ in range(args.burners)]
    for process in burners:
        process.start()
    failed = 0
    try:
        for loop in range(1, args.loops + 1):
            seed = random.SystemRandom().randrange(2**31)
            env = {**os.environ, "IDEMFLOW_EXPLORE_SEED": str(seed)}
            started = time.monotonic()
            result = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.tests],
                cwd=PROJECT_ROOT,
                env=env,
                capture_output=True,
                text=True,
            )
            summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
            failed += result.returncode != 0
            status = "ok" if result.returncode == 0 else "FAILED"
            print(f"loop {loop:2}/{args.loops}: {status}  seed {seed}  {time.monotonic() - started:5.1f} s  {summary}")
            if result.returncode != 0:
                print(result.stdout[-4000:], result.stderr[-2000:], sep="\n", flush=True)
            sys.stdout.flush()
    finally:
        for process in burners:
            process.terminate()
    print(f"{args.loops - failed} of {args.loops} loops passed with {args.burners} CPU-bound processes beside them")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
