"""Every test is marked by the folder it lives in, and by nothing else of the kind.

A test folder is a folder directly under ``tests/`` (its marker: the folder's name) or an example's
``examples/<example>/tests`` (its marker: the example's name). pyproject.toml declares one marker per
test folder, and ``pytest -m <folder>`` selects exactly that folder's tests: the hook below adds the
folder's marker to each test and refuses a test that declares another folder's marker.
``tests/unit/test_markers.py`` checks that folders and markers match.
"""

from __future__ import annotations

import os
import random
from collections.abc import Collection
from pathlib import Path

import pytest

from idemflow.cli import collector
from idemflow.engine.services.lambda_ import forkserver

ROOT = Path(__file__).resolve().parent

pytest_plugins = ["tests.heaviest_first"]  # the test files, longest first, for pytest-xdist's workers


EXPLORE_SEED = "IDEMFLOW_EXPLORE_SEED"
"""The interleaving checker's random seed (tests/explore): one per run, chosen here unless set."""


# One botocore data loader per search path for the whole test process, as in the Lambda workers (the
# docstring says why): code under test makes sessions freely, and the charge tests make one per test.
forkserver.share_botocore_loaders()


def pytest_configure(config: pytest.Config) -> None:
    # Chosen before pytest-xdist starts its workers, which inherit it: every test of a run explores with
    # the same seed, printed in the header, and the same variable replays a run's random schedules.
    os.environ.setdefault(EXPLORE_SEED, str(random.SystemRandom().randrange(2**31)))
    # The collector as the console script sets it (idemflow/cli/collector.py), for the same reason: a
    # process that imports moto and the engine, then runs, spent a fifth of its CPU walking that heap again.
    # No collection while the tests are collected (their imports), then what they made is frozen. Not in
    # pytest-xdist's controller, which collects nothing: its workers do.
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        collector.hold()


def pytest_collection_finish(session: pytest.Session) -> None:
    collector.release()


def pytest_report_header(config: pytest.Config) -> str:
    return f"interleaving checker seed: {os.environ[EXPLORE_SEED]} (replay: {EXPLORE_SEED}={os.environ[EXPLORE_SEED]})"


class MarkerError(pytest.UsageError):
    """A test outside every test folder, or marked with another folder's marker."""


def marked_folders() -> dict[str, Path]:
    """Each test folder, by its marker."""
    folders = {p.name: p for p in (ROOT / "tests").iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    for example_tests in (ROOT / "examples").glob("*/tests"):
        folders[example_tests.parent.name] = example_tests
    return dict(sorted(folders.items()))


def folder_marker(path: Path, declared: Collection[str] = (), folders: dict[str, Path] | None = None) -> str:
    """The marker of the test folder holding ``path``; ``declared`` are the markers the test already
    carries, of which none may be another folder's. ``folders``: :func:`marked_folders`, if the caller has it."""
    folders = marked_folders() if folders is None else folders
    resolved = path.resolve()
    marker = next((name for name, folder in folders.items() if resolved.is_relative_to(folder)), None)
    if marker is None:
        raise MarkerError(
            f"{path}: not in a test folder ({', '.join(str(f.relative_to(ROOT)) for f in folders.values())})"
        )
    foreign = sorted(set(declared) & set(folders) - {marker})
    if foreign:
        raise MarkerError(
            f"{path.relative_to(ROOT)} is marked {', '.join(foreign)} but lives in {folders[marker].relative_to(ROOT)}"
            f": a test's marker is its folder's ({marker}, added by conftest.py); drop the other one or move the test"
        )
    return marker


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    folders = marked_folders()  # listed once, not once per test: every pytest worker collects every test
    for item in items:
        item.add_marker(folder_marker(item.path, {m.name for m in item.iter_markers()}, folders))
