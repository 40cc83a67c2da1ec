"""The package stands alone, as a user installs it: its wheel in a fresh virtual environment (nothing of the
checkout's environment in it), with the dependencies it declares, then ``idemflow demo`` (the packaged
workflow and its doors) and every step ``idemflow init`` prints, run as printed, outside the repository: its
``idemflow run`` runs the new project's template, which nests a copy of the packaged workflow.

The dependencies come from the package index through a wheelhouse: ``pip wheel`` fills it once per set of
declared requirements (kept in pytest's cache, keyed by the wheel's ``Requires-Dist``), and every install of
the test, the printed ``pip install pytest`` included, reads it (``--no-index --find-links``), as an offline
user's pip does. Resolving against the index costs some 16 s of CPU per install here; the wheelhouse, once.

The fresh environment is kept too, keyed like the wheelhouse (:func:`fresh_venv`): made with the wheel and the
dependencies it declares, and reused only while it holds exactly the distributions it held when it was made;
each run puts its own wheel in it over the last one (unless the venv holds that wheel file for file already:
:func:`holds`), and takes out afterwards what the run added (the pytest ``init`` asks for): making it (the
venv's own pip, then the install) was most of the test's time. The wheel is built by the project's build
backend, as ``pip wheel`` has it built (:data:`BUILD_WHEEL`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.paths import PROJECT_ROOT

ENV_DROPPED = ("PYTEST_", "PYTHON", "AWS_", "VIRTUAL_ENV", "PIP_")


def run(
    command: list[str], cwd: Path, timeout: float = 300, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_DROPPED)}
    # As a LocalStack user's shell has it: the embedded engine must not follow it (a dead port here).
    env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9"
    env.update(extra or {})
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stdout}\n{result.stderr}"
    return result


BUILD_WHEEL = "import sys; from setuptools import build_meta; print(build_meta.build_wheel(sys.argv[1]))"
"""The project's wheel, from its build backend's PEP 517 hook: what ``pip wheel --no-build-isolation`` calls (in
two processes of its own, after its own start), so the same wheel, file for file, without pip's processes."""

SOURCES = ("pyproject.toml", "README.md", "idemflow")
"""What the build reads: its configuration, the readme it names, the package (its workflow folder's links to the
top-level files followed, as setuptools follows them)."""


def build_wheel(folder: Path, root: Path = PROJECT_ROOT) -> Path:
    """The wheel, built from a copy of :data:`SOURCES`: in the checkout, setuptools would package what its
    ``build/lib`` kept of an earlier build too (a module deleted since, say), which a clean clone's wheel lacks."""
    source = folder / "source"
    for name in SOURCES:
        if (root / name).is_dir():
            shutil.copytree(root / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            source.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, source / name)
    wheels = folder / "wheels"
    wheels.mkdir()
    built = run([sys.executable, "-c", BUILD_WHEEL, str(wheels)], source).stdout.splitlines()[-1]
    return wheels / built


def requirements(wheel: Path) -> list[str]:
    """The wheel's declared dependencies (its METADATA's Requires-Dist lines)."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode()
    return sorted(line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:"))


def wheelhouse(cache: pytest.Cache, wheel: Path) -> Path:
    """A folder holding the wheel's dependencies and pytest as pip downloads them from the index."""
    wanted = [*requirements(wheel), "pytest", f"python {sys.version_info[:2]}"]
    key = hashlib.sha256("\n".join(wanted).encode()).hexdigest()[:16]
    folder = cache.mkdir(f"wheelhouse-{key}")
    if not (folder / "complete").exists():
        # pip wheel, not pip download: a dependency published as an sdist only (airspeed-ext) is built once, here.
        run([sys.executable, "-m", "pip", "wheel", "-q", "-w", str(folder), str(wheel), "pytest"], folder)
        (folder / "complete").write_text("\n".join(wanted) + "\n")
    return folder


DISTRIBUTIONS = (
    "import importlib.metadata as m; "
    "print('\\n'.join(sorted({d.metadata['Name'].lower() + '==' + d.version for d in m.distributions()})))"
)
"""Prints every distribution a Python environment holds, one ``name==version`` a line."""


def distributions(python: Path) -> set[str]:
    return set(run([str(python), "-c", DISTRIBUTIONS], python.parent).stdout.split())


def site_packages(venv: Path) -> Path:
    """Where a venv made with this Python installs packages."""
    return venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def holds(venv: Path, wheel: Path) -> bool:
    """Whether ``venv`` holds ``wheel``'s files as they are in it, and no other file in its packages: installing it
    again would change nothing (its bytecode, written by the last run's imports, would be compiled again). The
    dist-info files pip writes itself (RECORD, INSTALLER, REQUESTED, direct_url.json) are not the wheel's."""
    site = site_packages(venv)
    with zipfile.ZipFile(wheel) as archive:
        files = {name: archive.read(name) for name in archive.namelist() if not name.endswith(".dist-info/RECORD")}
    packages = {name.split("/", 1)[0] for name in files if ".dist-info/" not in name}
    installed = {
        str(path.relative_to(site))
        for package in packages
        for path in (site / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    if installed != {name for name in files if name.split("/", 1)[0] in packages}:
        return False
    return all((site / name).is_file() and (site / name).read_bytes() == data for name, data in files.items())


@contextmanager
def fresh_venv(cache: pytest.Cache, wheel: Path, offline: dict[str, str]) -> Iterator[Path]:
    """A virtual environment holding ``wheel`` and the dependencies it declares, nothing else: the python in it.

    Kept in pytest's cache by the wheel's declared requirements and this Python's version; made again when it is
    missing or holds other distributions than it did when it was made. While the caller holds it, no other run
    may use it (a lock); when the caller is done, what it added is uninstalled."""
    wanted = [*requirements(wheel), f"python {sys.version_info[:3]}"]
    folder = cache.mkdir(f"fresh-venv-{hashlib.sha256(chr(10).join(wanted).encode()).hexdigest()[:16]}")
    venv, made_with = folder / "venv", folder / "distributions"
    python = venv / "bin" / "python"
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        held = distributions(python) if python.exists() and made_with.exists() else None
        if held is not None and held == set(made_with.read_text().split()):
            if not holds(venv, wheel):
                # The run's own wheel over the last one: pip removes the files of the one it replaces.
                again = ["install", "-q", "--no-compile", "--no-deps", "--force-reinstall", str(wheel)]
                run([str(python), "-m", "pip", *again], folder, extra=offline)
        else:
            shutil.rmtree(venv, ignore_errors=True)
            made_with.unlink(missing_ok=True)
            run([sys.executable, "-m", "venv", str(venv)], folder)
            # As a user would, with the dependencies it declares (no byte-compiling: a third of the install's time).
            run([str(python), "-m", "pip", "install", "-q", "--no-compile", str(wheel)], folder, extra=offline)
            made_with.write_text("\n".join(sorted(distributions(python))) + "\n")
        try:
            yield python
        finally:
            added = distributions(python) - set(made_with.read_text().split())
            if added:
                names = sorted(d.split("==", 1)[0] for d in added)
                run([str(python), "-m", "pip", "uninstall", "-q", "-y", *names], folder, extra=offline)


def test_the_wheel_in_a_clean_venv_runs_the_demo_the_packaged_workflow_and_inits_steps(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    wheel = build_wheel(tmp_path / "build")
    assert pytestconfig.cache is not None
    offline = {
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheelhouse(pytestconfig.cache, wheel)),
        # No byte-compiling (pip's --compile off): pip would compile every file it installs; the new project's
        # test run compiles only what it imports.
        "PIP_COMPILE": "0",
    }
    with fresh_venv(pytestconfig.cache, wheel, offline) as python:
        the_wheel_runs_the_demo_and_inits_steps(python, tmp_path, offline)


def the_wheel_runs_the_demo_and_inits_steps(python: Path, tmp_path: Path, offline: dict[str, str]) -> None:
    venv, idemflow = python.parent.parent, str(python.parent / "idemflow")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shown = run([str(python), "-c", "import idemflow, sys; print(idemflow.__file__, sys.prefix)"], elsewhere)
    imported, prefix = shown.stdout.split()
    assert Path(imported).is_relative_to(venv) and Path(prefix) == venv
    assert not Path(imported).is_relative_to(PROJECT_ROOT / "idemflow")  # not the checkout's own package

    demo = run([idemflow, "demo"], elsewhere).stdout
    for step in (
        "[1/10] a first run",
        "[2/10] its duplicate",
        "[3/10] 20 concurrent duplicates",
        "[4/10] key order-1001 again with another payload",
        "[5/10] the record of order-1001",
        "[6/10] the HTTP door",
        "[7/10] the same request again",
        "[8/10] the same key with another body",
        "[9/10] the queue door",
        "[10/10] the topic door",
    ):
        assert step in demo
    assert "replayed=true" in demo and "side-effect invocations 1" in demo
    assert "FAILED  IdempotencyKeyReused" in demo and "status:         COMPLETED" in demo
    assert "200, Idempotent-Replayed: true" in demo and "422 application/problem+json" in demo
    assert '"keyFrom": "field", "replayed": true' in demo  # the message delivered again, served from the record
    assert "[FAILED]" not in demo and demo.rstrip().endswith("demo passed: 10 of 10 expectations met")

    made = run([idemflow, "init", "welcome", "--function-name", "SendWelcomeEmail"], elsewhere).stdout
    steps = [line.split("#", 1)[0].strip() for line in made.split("next:\n", 1)[1].splitlines()]
    assert steps[0] == f"{python} -m pip install pytest", made  # the clean venv has no test runner: init says so
    outputs = [run(shlex.split(step), elsewhere, extra=offline).stdout for step in steps]
    assert "3 passed" in outputs[1], outputs[1]
    # idemflow run on the project's template, which nests its copy of the packaged workflow.
    assert steps[2].split()[1:3] == ["run", "--template"], steps
    assert "summary: 1 SUCCEEDED; 0 replayed; side-effect invocations for the key: 1" in outputs[2], outputs[2]


def test_a_venv_holds_a_wheel_only_with_its_every_file_as_it_is_and_no_other(tmp_path: Path) -> None:
    wheel, venv = tmp_path / "p-1.0-py3-none-any.whl", tmp_path / "venv"
    files = {"p/__init__.py": b"x = 1\n", "p/data/t.json": b"{}", "p-1.0.dist-info/METADATA": b"Name: p\n"}
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in {**files, "p-1.0.dist-info/RECORD": b"p/__init__.py,,\n"}.items():
            archive.writestr(name, data)
    site = site_packages(venv)
    for name, data in {**files, "p-1.0.dist-info/RECORD": b"other\n", "p-1.0.dist-info/INSTALLER": b"pip\n"}.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(data)
    (site / "p" / "__pycache__").mkdir()
    (site / "p" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"bytecode")

    assert holds(venv, wheel)  # the files pip writes itself and the bytecode aside
    (site / "p" / "__init__.py").write_bytes(b"x = 2\n")
    assert not holds(venv, wheel)  # a file changed
    (site / "p" / "__init__.py").write_bytes(b"x = 1\n")
    (site / "p" / "old.py").write_bytes(b"")
    assert not holds(venv, wheel)  # a file the wheel no longer has
    (site / "p" / "old.py").unlink()
    (site / "p-1.0.dist-info" / "METADATA").unlink()
    assert not holds(venv, wheel)  # a file missing


def test_the_wheel_holds_no_module_an_earlier_build_left_in_the_checkout(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    (root / "idemflow").mkdir(parents=True)
    (root / "idemflow" / "__init__.py").write_text("")
    (root / "README.md").write_text("a project\n")
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "idemflow"\nversion = "0.0.1"\nreadme = "README.md"\n'
        '[tool.setuptools.packages.find]\ninclude = ["idemflow*"]\n'
    )
    (root / "build" / "lib" / "idemflow").mkdir(parents=True)
    (root / "build" / "lib" / "idemflow" / "deleted_since.py").write_text("")  # setuptools' scratch of a build

    with zipfile.ZipFile(build_wheel(tmp_path / "build", root)) as archive:
        names = archive.namelist()

    assert "idemflow/__init__.py" in names and "idemflow/deleted_since.py" not in names, names
