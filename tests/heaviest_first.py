"""The suite's test files, longest first, for pytest-xdist's workers (``--dist loadfile``); a pytest plugin
the root conftest.py loads.

xdist hands each worker a file at a time, in the order it is given, and by default that order is the
number of tests a file has, most first. The longest files have few tests (the reduction's comparison,
the races, the checker's quick tier, the wheel's fresh environment: 10 to 30 s each, with 1 to 7 tests),
so they came last: a run ended with one worker finishing one of them, the other two done (8 to 10 s of
one busy core of two, in the workers' timelines). So the files go in the order of how long each took in
the previous run (pytest's cache, ``idemflow/file-seconds``), longest first, and a file the cache does
not know before them (it may be long). Without durations (a fresh clone, ``-p no:cacheprovider``),
xdist's order stands. The controller reads the cache once and hands its reading to each worker: every
worker must collect the same order.

What is kept is each file's time in the last run that ran it (setup, call and teardown of its tests):
a run of a few of its tests lowers it until the next full run. Only the order depends on it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

KEY = "idemflow/file-seconds"
_DURATIONS = pytest.StashKey[dict[str, float]]()


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def order(nodeids: Sequence[str], seconds: dict[str, float]) -> list[int]:
    """The indexes of ``nodeids`` with their files longest first (a file ``seconds`` does not know first of
    all), each file's tests in their order, ties in the order the files came."""
    first: dict[str, int] = {}
    for index, nodeid in enumerate(nodeids):
        first.setdefault(file_of(nodeid), index)

    def key(index: int) -> tuple[float, int]:
        name = file_of(nodeids[index])
        return (-seconds.get(name, math.inf), first[name])

    return sorted(range(len(nodeids)), key=key)  # stable: a file's tests keep their order


def pytest_configure(config: pytest.Config) -> None:
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is not None:
        seconds = workerinput.get(KEY) or {}
    else:
        cache = getattr(config, "cache", None)
        seconds = (cache.get(KEY, None) if cache is not None else None) or {}
        if seconds and config.getoption("numprocesses", None):
            config.option.loadscopereorder = False  # xdist keeps the order collected
        config.pluginmanager.register(_Timer(config), "idemflow-file-timer")
    config.stash[_DURATIONS] = seconds


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:  # pytest-xdist's controller, before starting a worker
    node.workerinput[KEY] = node.config.stash.get(_DURATIONS, {})


@pytest.hookimpl(trylast=True)  # after the root conftest's markers and any deselection
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seconds = config.stash.get(_DURATIONS, {})
    if seconds:
        items[:] = [items[i] for i in order([item.nodeid for item in items], seconds)]


class _Timer:
    """In the process that reports (xdist's controller, or the one process): each file's seconds, kept."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.seconds: defaultdict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[file_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self) -> None:
        cache = getattr(self.config, "cache", None)
        if cache is None or not self.seconds:
            return
        root = self.config.rootpath
        kept = {name: s for name, s in (cache.get(KEY, None) or {}).items() if (root / Path(name)).exists()}
        cache.set(KEY, {**kept, **{name: round(s, 2) for name, s in self.seconds.items()}})
