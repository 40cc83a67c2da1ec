"""``python -m bench.soak``: a long stream of requests through ``idemflow serve``'s doors, and what the serve
process keeps of it.

A benchmark, not a test (nothing gates CI on it). It starts ``idemflow serve`` in a process of its own, with
the HTTP door on an Express workflow and the queue door (``HttpFrontDoor=true QueueFrontDoor=true
WorkflowType=EXPRESS``, waits scaled to 0), then sends windows of requests: half POSTs to the HTTP door from
``--threads`` threads, half messages to the door's queue (the sample payload, its key in the body's
``idempotencyKey``), each with a key of its own. A window ends when every
POST has answered and every message's key has a COMPLETED record. After each window it reads the serve
process's resident memory (``/proc/<pid>/status``). It prints, and writes to ``--output``:

- the memory growth per 1,000 requests after the first window (the warm-up);
- each window's requests per second, and the last window's against the first's;
- the serve process's CPU time per request in each window (user and system), and the last window's against the
  first's: it moves less with the machine's load than the requests per second do;
- the deliveries lost: keys without a COMPLETED record at the end, messages left on the dead-letter queue,
  HTTP answers other than 200 (zero each).

``--sync`` sends every request as a StartSyncExecution of the Express workflow instead (no door), as a
client of an Express workflow does.

Each key's records stay in its tables (the user's data: AWS keeps them too): the growth includes them, and
the table says how much they weigh.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from idemflow import client
from idemflow.cli.doors import http_post
from idemflow.contract import sample_payload
from idemflow.engine.services.stepfunctions.sync import LOCAL_ENDPOINT_CLIENT_CONFIG

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = PROJECT_ROOT / "template.yaml"
OVERRIDES = ("HttpFrontDoor=true", "QueueFrontDoor=true", "WorkflowType=EXPRESS")
STARTUP_SECONDS = 120.0
"""How long ``serve`` may take to print its endpoint."""


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    return kb / 1024


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of the process ``pid`` so far (``/proc/<pid>/stat``): a window's share of it
    moves less with the machine's load than its requests per second do."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_serve() -> tuple[subprocess.Popen[str], str, str]:
    """``idemflow serve`` on a free port; the process, its endpoint URL and the HTTP door's URL, read from its
    banner."""
    serve = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "idemflow.cli",
            "serve",
            "--port",
            "0",
            "--template",
            str(TEMPLATE),
            "--wait-time-scale",
            "0",
            "--parameter-overrides",
            *OVERRIDES,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=PROJECT_ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert serve.stdout is not None
    deadline = time.monotonic() + STARTUP_SECONDS
    seen: list[str] = []
    endpoint = http = ""
    while time.monotonic() < deadline and not (endpoint and http):
        line = serve.stdout.readline()
        if not line:
            break
        seen.append(line)
        if found := re.search(r"endpoint:\s+(http://\S+)", line):
            endpoint = found.group(1)
        if found := re.search(r"HTTP:\s+POST\s+(http://\S+)", line):
            http = found.group(1)
    if endpoint and http:
        # The rest of what it prints is read and dropped: a full pipe would stop it.
        threading.Thread(target=lambda: [None for _ in serve.stdout or ()], daemon=True).start()
        return serve, endpoint, http
    serve.kill()
    raise SystemExit("idemflow serve printed no endpoint or HTTP door:\n" + "".join(seen))


def clients(endpoint: str) -> dict[str, Any]:
    session = boto3.session.Session(aws_access_key_id="local", aws_secret_access_key="local", region_name="us-east-1")
    # StartSyncExecution's host prefix (sync-) names no local host: the engine's config leaves it out.
    config = Config(retries={"max_attempts": 3}, max_pool_connections=32).merge(LOCAL_ENDPOINT_CLIENT_CONFIG)
    return {
        name: session.client(name, endpoint_url=endpoint, config=config)
        for name in ("cloudformation", "sqs", "dynamodb", "stepfunctions")
    }


def outputs(cfn: Any) -> dict[str, str]:
    stacks = cfn.describe_stacks(StackName="idemflow")["Stacks"]
    return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}


def window(
    c: dict[str, Any], out: dict[str, str], run: str, index: int, size: int, threads: int, payload: Any, timeout: float
) -> tuple[float, list[int], list[str]]:
    """One window: its requests per second, the HTTP statuses, the queue keys still without a COMPLETED record."""
    http_keys = [f"soak-{run}-{index}-h{i}" for i in range(size // 2)]
    queue_keys = [f"soak-{run}-{index}-q{i}" for i in range(size - size // 2)]
    started = time.perf_counter()
    for first in range(0, len(queue_keys), 10):
        c["sqs"].send_message_batch(
            QueueUrl=out["RequestQueueUrl"],
            Entries=[
                {"Id": str(n), "MessageBody": json.dumps({**payload, "idempotencyKey": k})}
                for n, k in enumerate(queue_keys[first : first + 10])
            ],
        )
    with ThreadPoolExecutor(threads) as pool:
        statuses = list(pool.map(lambda k: http_post(out["HttpRequestsUrl"], k, payload)[0], http_keys))
    pending = set(queue_keys)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for key in list(pending):
            found = client.record(c["dynamodb"], out["IdempotencyTableName"], out["WorkflowScope"], key)
            if found is not None and found.get("status") == "COMPLETED":
                pending.discard(key)
        if pending:
            time.sleep(0.2)
    return size / (time.perf_counter() - started), statuses, sorted(pending)


def sync_window(
    c: dict[str, Any], out: dict[str, str], run: str, index: int, size: int, threads: int, payload: Any
) -> tuple[float, list[int], list[str]]:
    """One window of StartSyncExecution calls to the Express workflow: its calls per second, 200 for each that
    SUCCEEDED (0 otherwise), no queue keys."""
    keys = [f"soak-{run}-{index}-s{i}" for i in range(size)]

    def start(key: str) -> int:
        answer = c["stepfunctions"].start_sync_execution(
            stateMachineArn=out["StateMachineArn"], input=client.execution_input(key, payload)
        )
        return 200 if answer["status"] == "SUCCEEDED" else 0

    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        statuses = list(pool.map(start, keys))
    return size / (time.perf_counter() - started), statuses, []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--windows", type=int, default=6, help="windows of requests (the first warms up)")
    parser.add_argument("--size", type=int, default=1000, help="requests per window, half HTTP, half queue")
    parser.add_argument("--threads", type=int, default=8, help="threads posting to the HTTP door")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a window may take")
    parser.add_argument(
        "--sync",
        action="store_true",
        help="every request a StartSyncExecution of the Express workflow from --threads threads, no door",
    )
    parser.add_argument("--output", type=Path, default=PROJECT_ROOT / "bench" / "results" / "local-soak.md")
    args = parser.parse_args(argv)

    serve, endpoint, http = start_serve()
    try:
        c = clients(endpoint)
        out = {**outputs(c["cloudformation"]), "HttpRequestsUrl": http}  # the door on the local endpoint
        payload = sample_payload(TEMPLATE)
        run = uuid.uuid4().hex[:6]
        memory: list[float] = []
        rates: list[float] = []
        not_ok = 0
        lost: list[str] = []
        cpu: list[float] = []
        for index in range(args.windows):
            cpu_before = cpu_seconds(serve.pid)
            if args.sync:
                rate, statuses, pending = sync_window(c, out, run, index, args.size, args.threads, payload)
            else:
                rate, statuses, pending = window(c, out, run, index, args.size, args.threads, payload, args.timeout)
            memory.append(rss_mb(serve.pid))
            cpu.append((cpu_seconds(serve.pid) - cpu_before) * 1000 / args.size)
            rates.append(rate)
            not_ok += sum(1 for s in statuses if s != 200)
            lost += pending
            print(
                f"window {index + 1}: {rate:.1f} requests/s, serve {memory[-1]:.1f} MB, {cpu[-1]:.1f} CPU ms/request, "
                f"{sum(1 for s in statuses if s != 200)} HTTP not 200, {len(pending)} keys not completed",
                flush=True,
            )
        dead = int(
            c["sqs"].get_queue_attributes(
                QueueUrl=out["DoorDeadLetterQueueUrl"], AttributeNames=["ApproximateNumberOfMessages"]
            )["Attributes"]["ApproximateNumberOfMessages"]
        )
    finally:
        serve.terminate()
        try:
            serve.wait(30)
        except subprocess.TimeoutExpired:
            serve.kill()
    growth = (memory[-1] - memory[0]) * 1000 / (args.size * (args.windows - 1)) if args.windows > 1 else 0.0
    rows = [
        (
            "requests",
            f"{args.windows} windows of {args.size} "
            + ("StartSyncExecution calls" if args.sync else "(half HTTP door, half queue door)")
            + f", {args.threads} threads, Express workflow",
        ),
        ("serve memory growth per 1,000 requests after the first window", f"{growth:.1f} MB"),
        ("requests/s per window", ", ".join(f"{r:.1f}" for r in rates)),
        ("last window's throughput / first's", f"{rates[-1] / rates[0]:.2f}"),
        ("serve CPU ms per request per window (user and system)", ", ".join(f"{c:.1f}" for c in cpu)),
        ("last window's CPU per request / first's", f"{cpu[-1] / cpu[0]:.2f}"),
        (
            "deliveries lost (keys without a COMPLETED record, dead letters, answers not 200 or not SUCCEEDED)",
            f"{len(lost)}, {dead}, {not_ok}",
        ),
    ]
    table = "| measure | result |\n|---|---|\n" + "".join(f"| {a} | {b} |\n" for a, b in rows)
    print(table)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(table)
    return 0 if not lost and not dead and not not_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
