"""The package stands alone, as a user installs it: its wheel in a fresh virtual environment (nothing of the
checkout's environment in it; its dependencies from the package index, as ``pip install`` finds them), then
``idemflow demo``, ``idemflow run`` on the packaged workflow, and every step ``idemflow init`` prints, run as
printed, outside the repository."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.paths import PROJECT_ROOT


def run(command: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON", "AWS_", "VIRTUAL_ENV"))}
    # As a LocalStack user's shell has it: the embedded engine must not follow it (a dead port here).
    env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9"
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stdout}\n{result.stderr}"
    return result


def test_the_wheel_in_a_clean_venv_runs_the_demo_the_packaged_workflow_and_inits_steps(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), "."],
        PROJECT_ROOT,
    )
    (wheel,) = wheels.glob("idemflow-*.whl")
    venv = tmp_path / "fresh"
    run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    python, idemflow = venv / "bin" / "python", str(venv / "bin" / "idemflow")
    # As a user would, with the dependencies it declares (no byte-compiling: a third of the install's time).
    run([str(python), "-m", "pip", "install", "-q", "--no-compile", str(wheel)], tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shown = run([str(python), "-c", "import idemflow, sys; print(idemflow.__file__, sys.prefix)"], elsewhere)
    imported, prefix = shown.stdout.split()
    assert Path(imported).is_relative_to(venv) and Path(prefix) == venv
    assert not Path(imported).is_relative_to(PROJECT_ROOT)

    demo = run([idemflow, "demo"], elsewhere)
    assert "demo passed" in demo.stdout, demo.stdout

    ran = run([idemflow, "run", "--repeat", "2", "--json"], elsewhere)
    summary = json.loads(ran.stdout)["summary"]
    assert (summary["executions"], summary["replayed"], summary["sideEffectInvocations"]) == (2, 1, 1)

    made = run([idemflow, "init", "welcome", "--function-name", "SendWelcomeEmail"], elsewhere).stdout
    steps = [line.split("#", 1)[0].strip() for line in made.split("next:\n", 1)[1].splitlines()]
    assert steps[0] == f"{python} -m pip install pytest", made  # the clean venv has no test runner: init says so
    outputs = [run(shlex.split(step), elsewhere).stdout for step in steps]
    assert "2 passed" in outputs[1], outputs[1]
    assert "replayed" in outputs[2] or "side effect" in outputs[2], outputs[2]
