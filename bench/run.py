"""``make bench``: throughput, duplicate latency, memory growth and test-suite time on the embedded engine,
and the size of each function and layer ``sam build`` made.

A benchmark, not a test: it prints a table, writes it to ``bench/results/local.md`` (ignored by git: a
plain run leaves the tree clean; ``--output bench/results/latest.md`` updates the tracked results) and
compares each figure with its target (this machine: 2 cores). Nothing here gates CI.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import sizes
from idemflow.cli import collector
from idemflow.contract import sample_payload
from idemflow.engine import Engine
from idemflow.engine.services.stepfunctions.execution_index import IndexedExecutions

PROJECT_ROOT = Path(__file__).resolve().parent.parent  # the checkout bench/ is in
TEMPLATE_PATH = PROJECT_ROOT / "template.yaml"

RESULTS = PROJECT_ROOT / "bench" / "results" / "local.md"
PAYLOAD = sample_payload(TEMPLATE_PATH)
"""The payload of the project's sample event (events/event.json)."""


def rss_mb(pid: int | None = None) -> float:
    status = Path(f"/proc/{pid or os.getpid()}/status").read_text()
    kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    return kb / 1024


def throughput(engine: Engine, executions: int, concurrency: int) -> tuple[float, int]:
    run_id = uuid.uuid4().hex[:8]

    def one(i: int) -> str:
        execution_input = {"idempotencyKey": f"bench-{run_id}-{i}", "payload": PAYLOAD}
        return engine.run(execution_input, timeout=300, with_path=False).status

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        statuses = list(pool.map(one, range(executions)))
    elapsed = time.perf_counter() - started
    return executions / elapsed, sum(1 for s in statuses if s != "SUCCEEDED")


def duplicate_latency(engine: Engine, samples: int) -> tuple[float, float]:
    key = f"bench-dup-{uuid.uuid4().hex[:8]}"
    engine.run({"idempotencyKey": key, "payload": PAYLOAD})
    timings = []
    for _ in range(samples):
        started = time.perf_counter()
        outcome = engine.wait(engine.start_execution({"idempotencyKey": key, "payload": PAYLOAD}), with_path=False)
        timings.append((time.perf_counter() - started) * 1000)
        assert outcome.replayed is True
    timings.sort()
    return statistics.median(timings), timings[min(len(timings) - 1, int(len(timings) * 0.99))]


def executions_kept(engine: Engine) -> int:
    """Executions the engine's Step Functions keeps, on every state machine."""
    return sum(len(sm.executions) for sm in engine._sfn_backend().state_machines)


def keep_executions(engine: Engine, count: int, concurrency: int) -> None:
    """Run duplicates of one key (the cheapest complete execution: five transitions, one DynamoDB read) until
    the engine keeps ``count`` executions, as a long run, the interleaving checker or a day of ``serve`` do."""
    key = f"bench-kept-{uuid.uuid4().hex[:8]}"
    engine.run({"idempotencyKey": key, "payload": PAYLOAD})
    missing = count - executions_kept(engine)
    if missing <= 0:
        return

    def one(_: int) -> None:
        engine.run({"idempotencyKey": key, "payload": PAYLOAD}, timeout=300, with_path=False)

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, range(missing)))


def kept_latency(
    engine: Engine, count: int, duplicates: int, concurrency: int, rounds: int = 3
) -> tuple[list[Any], list[Any], float, list[tuple[float, float]]]:
    """The duplicate path's latency with ``count`` executions kept against 1,000, alternated ``rounds`` times on
    one engine: the workflow's state machine keeps either its first 1,000 executions or all of them (the rest
    stay in memory either way), so the machine's drift and the collector's work weigh on both alike and the
    ratio of the medians is what looking an execution up costs."""
    keep_executions(engine, count, concurrency)
    machine = max(engine._sfn_backend().state_machines, key=lambda sm: len(sm.executions))
    many = list(machine.executions)
    few = many[:1000]
    measured: list[tuple[float, float]] = []
    for _ in range(rounds):
        machine.executions = IndexedExecutions(few)
        duplicate_latency(engine, duplicates // 4)  # settle
        with_few, _ = duplicate_latency(engine, duplicates)
        machine.executions = IndexedExecutions(many)
        duplicate_latency(engine, duplicates // 4)
        with_many, _ = duplicate_latency(engine, duplicates)
        measured.append((with_few, with_many))
    ratio = statistics.median(b for _, b in measured) / statistics.median(a for a, _ in measured)
    return few, many, ratio, measured


def suite_seconds() -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    last = (done.stdout.strip().splitlines() or ["?"])[-1]
    return time.perf_counter() - started, last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make bench", description=__doc__)
    parser.add_argument("--executions", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--duplicates", type=int, default=200)
    parser.add_argument(
        "--kept", type=int, default=20_000, help="executions kept for the second duplicate latency (0: skip it)"
    )
    parser.add_argument("--skip-suite", action="store_true", help="do not time the test suite")
    parser.add_argument(
        "--output", type=Path, default=RESULTS, help="where to write the table (default: bench/results/local.md)"
    )
    args = parser.parse_args(argv)

    rows: list[tuple[str, str, str, bool]] = []
    collector.hold()  # the collector as `idemflow serve` and `run` set it (idemflow/cli/collector.py)
    # Every execution kept: the memory row is the cost of 1,000 kept executions, and --kept keeps thousands.
    with Engine(wait_time_scale=0, retain_executions=None) as engine:
        collector.release()
        throughput(engine, 50, args.concurrency)  # warm up: workers, caches
        # Two halves: throughput over both; memory over the second only. The first half's growth is
        # partly absorbed by memory the allocator freed during start-up, which hid a steady leak once.
        half = args.executions // 2
        first_rate, first_failed = throughput(engine, half, args.concurrency)
        gc.collect()
        before = rss_mb()
        second_rate, second_failed = throughput(engine, args.executions - half, args.concurrency)
        gc.collect()
        growth = (rss_mb() - before) * 1000 / (args.executions - half)
        rate = args.executions / (half / first_rate + (args.executions - half) / second_rate)
        failed = first_failed + second_failed
        rows.append(
            (
                f"executions/s, {args.executions} distinct keys, concurrency {args.concurrency}",
                f"{rate:.1f} ({failed} not succeeded)",
                ">= 40",
                rate >= 40 and failed == 0,
            )
        )
        rows.append(
            (
                f"engine memory growth per 1,000 executions (RSS, over the second {args.executions - half})",
                f"{growth:.1f} MB",
                "< 60 MB",
                growth < 60,
            )
        )
        duplicate_latency(engine, args.duplicates)  # settle after the throughput runs: not counted
        kept = executions_kept(engine)
        median, p99 = duplicate_latency(engine, args.duplicates)
        rows.append(
            (
                f"duplicate path latency, median ({args.duplicates} runs, {kept:,} executions kept)",
                f"{median:.1f} ms",
                "",
                True,
            )
        )
        rows.append((f"duplicate path latency, p99 ({args.duplicates} runs)", f"{p99:.1f} ms", "", True))
        if args.kept > kept:
            few, many, ratio, rounds = kept_latency(engine, args.kept, args.duplicates, args.concurrency)
            rows.append(
                (
                    f"duplicate path latency, median, {len(many):,} executions kept / {len(few):,} kept, alternated",
                    " / ".join(f"{b:.1f}/{a:.1f} ms" for a, b in rounds) + f": {ratio:.2f}",
                    "<= 1.10",
                    ratio <= 1.10,
                )
            )
    for build_dir in sorted(PROJECT_ROOT.glob(".aws-sam/build*/")):  # make bench builds them first
        for package in sizes.packages(build_dir):
            where = f"{build_dir.name}: {package.where}"
            size = f"{package.unzipped / 1024:,.1f} KiB unzipped, {package.zipped / 1024:,.1f} KiB zipped"
            if package.kind == "function":
                within = package.unzipped <= sizes.FUNCTION_LIMIT
                rows.append((f"built function {where}", size, "< 1 MB unzipped", within))
            else:
                rows.append((f"built layer {where}", size, "", True))
    if not args.skip_suite:
        seconds, summary = suite_seconds()
        rows.append((f"whole test suite ({summary})", f"{seconds:.1f} s", "< 120 s", seconds < 120))

    header = "| measure | result | target | met |\n|---|---|---|---|"
    table = "\n".join([header, *(f"| {m} | {r} | {t} | {'yes' if ok or not t else 'NO'} |" for m, r, t, ok in rows)])
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    machine = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, {when}"
    output = args.output.resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(f"# make bench\n\n{machine}\n\n{table}\n")
    print(f"{machine}\n{table}\n\nwritten to {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
