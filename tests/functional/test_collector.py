"""The console script's collector (idemflow/cli/collector.py): held while the process imports and sets up,
then what was made is frozen and collections resume, less often; ``main`` called in a process of
someone else's (a test, a script) leaves that process's collector as it was."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import uuid

import pytest

from idemflow import cli
from idemflow.cli import collector
from tests.paths import PROJECT_ROOT

# Run in a new interpreter: the console script's process, whose collector is the one set.
STATE = "import gc, json, sys; print(json.dumps([gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()]))"


def console(*argv: str) -> tuple[int, list[object]]:
    """``idemflow ARGV`` as the console script runs it; its exit code and its collector's state at the end."""
    script = (
        f"import sys; from idemflow.cli import console; sys.argv = ['idemflow', *{list(argv)!r}]\n"
        f"code = console()\n{STATE}\nsys.exit(code)"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    return done.returncode, json.loads(done.stdout.splitlines()[-1])


def test_run_freezes_what_it_set_up_and_collects_again_less_often() -> None:
    code, (enabled, thresholds, frozen) = console("run", "--key", f"gc-{uuid.uuid4()}")

    assert code == 0
    assert enabled is True and tuple(thresholds) == collector.THRESHOLDS  # type: ignore[arg-type]
    assert isinstance(frozen, int) and frozen > 100_000  # moto, botocore, the engine: never walked again


def test_a_command_against_an_endpoint_collects_again_once_its_clients_are_made() -> None:
    # Nothing listens on port 9: the call fails (exit 1), after the clients were made.
    code, (enabled, thresholds, frozen) = console(
        "record", "--endpoint-url", "http://127.0.0.1:9", "--table", "t", "--key", "k"
    )

    assert code == 1
    assert enabled is True and tuple(thresholds) == collector.THRESHOLDS  # type: ignore[arg-type]
    assert isinstance(frozen, int) and frozen > 0


def test_main_in_a_process_of_its_own_leaves_its_collector_as_it_was(capsys: pytest.CaptureFixture[str]) -> None:
    before = (gc.isenabled(), gc.get_threshold())
    frozen = gc.get_freeze_count()

    assert cli.main(["run", "--key", f"gc-{uuid.uuid4()}"]) == 0  # deploys an engine, which releases

    assert (gc.isenabled(), gc.get_threshold()) == before
    assert gc.get_freeze_count() <= frozen  # nothing frozen (frozen objects freed since count no more)
