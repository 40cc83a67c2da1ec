"""The registry lists every change the engine makes to moto, and refuses a moto it was not written for."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from idemflow.contract import PROJECT_ROOT
from idemflow.engine import Engine, EngineError, hooks, patches, registry, speedups


def test_every_change_in_the_four_modules_is_registered_once() -> None:
    in_code = [
        *patches.PATCHES,
        *speedups.SPEEDUPS,
        *(key for key, *_ in hooks._TARGETS),
        "boto_client_for",  # hooks' interpreter clients (hooks._CLIENT_MODULES)
        "mock-config",  # mock_config.py, installed with a MockConfigFile.json
    ]
    registered = [c.name for c in registry.CHANGES]
    assert sorted(registered) == sorted(in_code)
    assert len(set(registered)) == len(registered)


@pytest.mark.parametrize("change", registry.CHANGES, ids=lambda c: c.name)
def test_each_change_names_tests_that_exist(change: registry.Change) -> None:
    assert change.corrects and change.proven_by
    for node_id in change.proven_by:
        path, _, name = node_id.partition("::")
        source = (PROJECT_ROOT / path).read_text()
        assert re.search(rf"^def {re.escape(name)}\(", source, re.MULTILINE), f"{node_id}: no such test"


def test_each_fix_is_proven_by_a_conformance_test() -> None:
    for change in registry.CHANGES:
        if change.kind == "fix":
            assert any(n.startswith("tests/conformance/") for n in change.proven_by), change.name


def test_the_pinned_moto_is_the_version_pyproject_pins() -> None:
    pyproject = (PROJECT_ROOT / "pyproject.toml").read_text()
    assert re.search(rf'"moto\[[^\]]*\]=={re.escape(registry.PINNED_MOTO)}"', pyproject)
    assert registry.installed_moto() == registry.PINNED_MOTO


def test_another_moto_is_refused_in_one_line_before_anything_is_patched(monkeypatch: pytest.MonkeyPatch) -> None:
    registry.remove()
    monkeypatch.setattr(registry, "installed_moto", lambda: "5.3.0")
    with pytest.raises(EngineError) as raised:
        Engine(Path(PROJECT_ROOT / "template.yaml")).start()
    message = str(raised.value)
    assert "\n" not in message and "moto 5.2.5" in message and "moto 5.3.0 is installed" in message
    assert not patches.is_applied() and not speedups.is_applied()


def test_remove_puts_every_change_back() -> None:
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    original = StepFunctionsParserBackend.__dict__["start_execution"]
    registry.apply()
    assert StepFunctionsParserBackend.__dict__["start_execution"] is not original
    registry.remove()
    assert StepFunctionsParserBackend.__dict__["start_execution"] is original
    assert not patches.is_applied() and not speedups.is_applied()


def test_leaving_out_a_hook_is_refused() -> None:
    with pytest.raises(KeyError, match="not a patch or speedup"):
        registry.apply(without=["invoke"])
