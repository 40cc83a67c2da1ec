"""Functional tests run the real template and definition on the embedded engine.

Waits and retry intervals are scaled to zero (like Step Functions Local's WAIT_TIME_SCALE): no test
sleeps real seconds. The requested delays are still recorded for assertions.

``IDEMFLOW_WITHOUT_SPEEDUPS=1`` runs every engine of these tests with every speedup left out
(``registry.names("speedup")``): a speedup must change no outcome.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Collection, Iterator

import pytest

from idemflow.engine import Engine, registry
from idemflow.engine.background import Background

from .side_effects import IDS, SIDE_EFFECTS, SideEffect


@pytest.fixture(scope="session", autouse=True)
def _without_speedups() -> Iterator[None]:
    """With IDEMFLOW_WITHOUT_SPEEDUPS=1, whatever installs the registry's changes leaves the speedups out."""
    if os.environ.get("IDEMFLOW_WITHOUT_SPEEDUPS") != "1":
        yield
        return
    apply = registry.apply

    def apply_without_speedups(without: Collection[str] = (), *, hooks_too: bool = False) -> None:
        apply([*without, *registry.names("speedup")], hooks_too=hooks_too)

    patch = pytest.MonkeyPatch()
    patch.setattr(registry, "apply", apply_without_speedups)
    yield
    patch.undo()


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(wait_time_scale=0) as running:
        yield running
    leaked = [t.name for t in threading.enumerate() if t.name.startswith(Background.THREAD_PREFIX)]
    assert leaked == [], f"background loops outlived their engine: {leaked}"


@pytest.fixture(scope="module", params=SIDE_EFFECTS, ids=IDS)
def side_effect(request: pytest.FixtureRequest) -> SideEffect:
    """Each side effect the promises are tested against (side_effects.py): a module that asks for it runs
    once per side effect, on an engine deployed from that side effect's template."""
    chosen: SideEffect = request.param
    return chosen


@pytest.fixture(autouse=True)
def _clean_faults(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "engine" in request.fixturenames:
        running: Engine = request.getfixturevalue("engine")
        running.faults.clear()


@pytest.fixture
def key() -> str:
    """A fresh idempotency key per test: tests share one engine per module."""
    return f"order-{uuid.uuid4()}"
