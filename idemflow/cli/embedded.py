"""The embedded engine as ``run``, ``serve`` and ``demo`` use it: deploy, then run duplicate executions.

The engine (and moto) is imported only when one of these commands deploys.
"""

from __future__ import annotations

import argparse
import logging
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from idemflow import client
from idemflow.cli import collector
from idemflow.cli.inputs import parameter_overrides, template_path
from idemflow.cli.output import outcome_view

if TYPE_CHECKING:
    from idemflow.engine import Engine


@contextmanager
def deploy(template: Path, overrides: dict[str, str], wait_time_scale: float, **options: Any) -> Iterator[Engine]:
    """An engine with ``template`` deployed, stopped on exit; moto's own error logs silenced meanwhile."""
    from idemflow.engine import Engine

    moto_logger = logging.getLogger("moto")
    level = moto_logger.level
    moto_logger.setLevel(logging.CRITICAL)  # failed executions are reported by the CLI, not logged by moto
    try:
        with Engine(template, parameter_overrides=overrides, wait_time_scale=wait_time_scale, **options) as deployed:
            collector.release()  # the console script's imports and the engine's start are done
            yield deployed
    finally:
        moto_logger.setLevel(level)


def deploy_from(args: argparse.Namespace, **options: Any) -> AbstractContextManager[Engine]:
    """:func:`deploy` with the deploy options (--template, --parameter-overrides, --wait-time-scale, --mock-config,
    --workflow, --retain-executions, --retain-for, --no-iam)."""
    mock_config = getattr(args, "mock_config", None)
    if mock_config is not None:
        options["mock_config"] = Path(mock_config)
    if getattr(args, "workflow", None) is not None:
        options["workflow"] = args.workflow
    if hasattr(args, "retain_executions"):
        options["retain_executions"] = args.retain_executions
        options["retain_seconds"] = args.retain_for
    if getattr(args, "no_iam", False):
        options["iam"] = False
    return deploy(
        template_path(args.template), parameter_overrides(args.parameter_overrides), args.wait_time_scale, **options
    )


def run_executions(
    engine: Engine,
    key: str,
    payload: Any,
    count: int,
    concurrency: int,
    timeout: float,
    test_case: str | None = None,
) -> list[dict[str, Any]]:
    """``count`` duplicates, ``concurrency`` at a time; each gets its own name (see ``run --help``). The key and
    payload were checked once, before the engine was deployed: each duplicate starts with the input as is. With
    ``test_case``, each starts on ``<arn>#<test_case>`` (the mock configuration file's responses)."""
    execution_input = client.execution_input(key, payload)

    def one(index: int) -> dict[str, Any]:
        began = time.monotonic()
        name = client.execution_name(key, payload, fresh=True)
        outcome = engine.wait(engine.start_execution(execution_input, name, test_case), timeout)
        return outcome_view(outcome, index=index, seconds=round(time.monotonic() - began, 3))

    jobs: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(1, count + 1):
        jobs.put(index)
    views: dict[int, dict[str, Any]] = {}
    errors: list[BaseException] = []

    def worker() -> None:
        while not errors:
            try:
                index = jobs.get_nowait()
            except queue.Empty:
                return
            try:
                views[index] = one(index)
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

    # Daemon threads: on Ctrl-C the main thread stops the engine and exits without waiting for them.
    workers = [threading.Thread(target=worker, name=f"idemflow-run-{n}", daemon=True) for n in range(concurrency)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    if errors:
        raise errors[0]
    return [views[index] for index in sorted(views)]
