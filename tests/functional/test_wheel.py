"""The package stands alone: its wheel, installed in a fresh virtual environment outside the repository,
makes a project with ``idemflow init`` whose own tests pass, and runs the packaged workflow with
``idemflow run`` where there is no template.yaml."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.paths import PROJECT_ROOT


def run(command: list[str], cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON", "AWS_", "VIRTUAL_ENV"))}
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stdout}\n{result.stderr}"
    return result


def test_the_wheel_alone_makes_a_project_whose_tests_pass_and_runs_the_packaged_workflow(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), "."],
        PROJECT_ROOT,
    )
    (wheel,) = wheels.glob("idemflow-*.whl")
    venv = tmp_path / "fresh"
    # No pip inside it (bootstrapping one takes 4 s): the project's pip installs into it (pip --python).
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    python = venv / "bin" / "python"
    run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        tmp_path,
    )
    # The wheel's dependencies (moto, boto3, pytest...) come from the project's environment through a .pth
    # line: no download in a test. A .pth line adds the folder only: the project's editable install (its own
    # .pth finder in that folder) is not loaded, so idemflow is the wheel's.
    site = run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp_path).stdout.strip()
    (Path(site) / "project-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    imported = run([str(python), "-c", "import idemflow; print(idemflow.__file__)"], elsewhere).stdout.strip()
    assert Path(imported).is_relative_to(venv) and not Path(imported).is_relative_to(PROJECT_ROOT)

    run([str(venv / "bin" / "idemflow"), "init", "welcome", "--function-name", "SendWelcomeEmail"], elsewhere)
    # sam build of the new project builds the nested workflow's layer from its copy of the build files.
    assert (elsewhere / "welcome" / "workflow" / "layers" / "powertools" / "requirements.txt").is_file()
    tested = run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"], elsewhere / "welcome", timeout=300)
    assert "2 passed" in tested.stdout

    ran = run([str(venv / "bin" / "idemflow"), "run", "--repeat", "2", "--json"], elsewhere)
    summary = json.loads(ran.stdout)["summary"]
    assert (summary["executions"], summary["replayed"], summary["sideEffectInvocations"]) == (2, 1, 1)
