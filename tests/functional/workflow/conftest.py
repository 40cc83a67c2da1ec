"""One engine per side effect for the whole package (per test worker): its modules' tests use fresh keys."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from idemflow.engine import Engine

from ..side_effects import IDS, SIDE_EFFECTS, SideEffect


@pytest.fixture(scope="package", params=SIDE_EFFECTS, ids=IDS)
def side_effect(request: pytest.FixtureRequest) -> SideEffect:
    chosen: SideEffect = request.param
    return chosen


@pytest.fixture(scope="package")
def engine(side_effect: SideEffect) -> Iterator[Engine]:
    with Engine(side_effect.template, wait_time_scale=0) as running:
        yield running
