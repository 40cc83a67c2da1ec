"""The charge example's tests that deploy the project's template (whose default side effect is the charge)
on the embedded engine, waits scaled to zero."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from idemflow.engine.engine import Engine


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(wait_time_scale=0) as running:
        yield running


@pytest.fixture
def key() -> str:
    return f"order-{uuid.uuid4()}"


@pytest.fixture(autouse=True)
def _clean_faults(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "engine" in request.fixturenames:
        running: Engine = request.getfixturevalue("engine")
        running.faults.clear()
