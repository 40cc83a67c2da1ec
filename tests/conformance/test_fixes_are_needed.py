"""Each of the engine's fixes (idemflow/engine/registry.py, kind "fix") is needed: without it, at least
one of the conformance tests that prove it (tests/proofs.py) fails on the embedded engine."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from idemflow.engine import registry
from tests.conformance.harness import ENV_ENDPOINT, EmbeddedTarget, Target
from tests.proofs import PROVEN_BY

# A race is not shown by one run: its own unit test forces the interleaving that loses a write.
PROBABILISTIC = {
    "atomic-writes": "tests/unit/changes/test_dynamodb.py::test_unpatched_moto_5_2_5_loses_conditional_write_race",
    "kinesis-shards": (
        "tests/unit/changes/test_kinesis.py::test_unpatched_moto_5_2_5_fails_a_read_when_a_record_is_put_during_it"
    ),
}
FIXES = [c for c in registry.CHANGES if c.kind == "fix"]


def _calls(node_id: str) -> Iterator[Callable[[Target], Any]]:
    """Every case of a conformance test (each parameter set) as a call with a target."""
    path, _, name = node_id.partition("::")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    test = getattr(module, name)
    cases: list[dict[str, Any]] = [{}]
    for mark in getattr(test, "pytestmark", []):
        if mark.name == "parametrize":
            names = [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else mark.args[0]
            values = [v if len(names) > 1 else (v,) for v in mark.args[1]]
            cases = [{**case, **dict(zip(names, value, strict=True))} for case in cases for value in values]
    accepted = inspect.signature(test).parameters
    for case in cases:
        extra = {"embedded_only": None} if "embedded_only" in accepted else {}
        yield lambda target, case=case, extra=extra: test(target=target, **case, **extra)


@pytest.mark.parametrize("change", [c for c in FIXES if c.name not in PROBABILISTIC], ids=lambda c: c.name)
def test_without_the_fix_one_of_its_conformance_tests_fails(change: registry.Change, monkeypatch: Any) -> None:
    monkeypatch.delenv(ENV_ENDPOINT, raising=False)
    conformance = [n for n in PROVEN_BY[change.name] if n.startswith("tests/conformance/")]
    assert conformance, f"{change.name}: no conformance test named"
    failures: list[str] = []
    target = EmbeddedTarget(without=(change.name,))
    try:
        for node_id in conformance:
            for call in _calls(node_id):
                try:
                    call(target)
                except Exception as exc:  # an assertion, or moto's own error without the fix
                    failures.append(f"{node_id}: {type(exc).__name__}")
                    break  # one failure shows it: the rest (moto's 500s retried by the client) only cost time
            if failures:
                break
    finally:
        target.close()
    assert failures, f"every conformance test of {change.name} passes without it"


def test_every_fix_that_is_not_shown_here_names_the_test_that_shows_it() -> None:
    for name, node_id in PROBABILISTIC.items():
        change = next(c for c in FIXES if c.name == name)
        assert node_id in PROVEN_BY[change.name]
