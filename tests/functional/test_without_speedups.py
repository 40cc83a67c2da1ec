"""The workflow keeps its promises with every speedup left out (``registry.names("speedup")``): a speedup
changes no answer, only the work behind it (``idemflow/engine/registry.py``). The whole functional suite
runs that way with ``IDEMFLOW_WITHOUT_SPEEDUPS=1`` (``tests/functional/conftest.py``); this test keeps the
two paths that matter most in ``make test``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from idemflow.engine import Engine, registry
from idemflow.engine.services.stepfunctions.parse_cache import parse_cache_info

from .side_effects import SIDE_EFFECTS, SideEffect

pytestmark = pytest.mark.functional

# A side effect that does not guard itself: one effect per key is the workflow's doing alone.
SIDE_EFFECT: SideEffect = next((s for s in SIDE_EFFECTS if not s.guarded), SIDE_EFFECTS[0])


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(SIDE_EFFECT.template, wait_time_scale=0, without=registry.names("speedup")) as running:
        yield running


def test_a_first_run_and_its_duplicate_without_any_speedup(engine: Engine) -> None:
    assert registry.left_out() == frozenset(registry.names("speedup"))
    parses = parse_cache_info()
    key = f"order-{uuid.uuid4()}"
    body = {"idempotencyKey": key, "payload": SIDE_EFFECT.payload}

    first = engine.run(body)
    duplicate = engine.run(body)

    assert first.status == "SUCCEEDED", first.cause
    assert first.output["replayed"] is False
    assert duplicate.status == "SUCCEEDED", duplicate.cause
    assert duplicate.output == {**first.output, "replayed": True}
    assert duplicate.path == ["ValidateInput", "DeriveKeys", "ReadRecord", "CheckRecord", "ReturnCached"]
    assert engine.workflow.side_effect_runs(key) == 1
    assert SIDE_EFFECT.effects(engine, key) == 1
    assert parse_cache_info() == parses, "the definition cache (a speedup) was used"
