"""The registry lists every change the engine makes to moto, installs and removes them in one place, and
refuses a moto it was not written for."""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

import pytest

from idemflow.engine import Engine, EngineError, patching, registry
from idemflow.engine.core import moto_version
from tests.proofs import PROVEN_BY

ROOT = Path(__file__).resolve().parents[2]


def _installers_in_the_package() -> list[str]:
    """Every ``install_*`` function defined in a module of the engine's packages (the services', core)."""
    found = []
    engine = ROOT / "idemflow" / "engine"
    for path in sorted(engine.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        if "def install_" not in path.read_text():
            continue  # not a change module: not imported here (a Lambda worker's, the CLI's)
        module = importlib.import_module(name)
        for function_name, function in inspect.getmembers(module, inspect.isfunction):
            if function_name.startswith("install_") and function.__module__ == module.__name__:
                found.append(f"{module.__name__}.{function_name}")
    return found


def test_every_installer_in_the_package_is_registered_once() -> None:
    registered = [f"{c.installer.__module__}.{c.installer.__name__}" for c in registry.CHANGES]
    assert sorted(registered) == sorted(_installers_in_the_package())
    assert len(set(registered)) == len(registered)
    names = registry.names()
    assert len(set(names)) == len(names)
    for change in registry.CHANGES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", change.name), change.name
        assert change.installer.__name__ == "install_" + change.name.replace("-", "_"), change.name


def test_each_change_lives_in_the_package_of_the_service_it_changes() -> None:
    # A change to one moto service's code is in that service's package; core holds what spans them all.
    for change in registry.CHANGES:
        module = change.installer.__module__
        assert module.startswith(("idemflow.engine.services.", "idemflow.engine.core.")), (change.name, module)


def test_the_undo_log_names_the_change_behind_each_patch() -> None:
    registry.apply()
    logged = patching.log()
    assert logged, "nothing installed"
    assert set(logged) == set(registry.names())  # every change made at least one patch, and nothing else did
    registry.remove()
    assert patching.log() == []


def test_every_change_has_its_proofs_and_every_proof_a_change() -> None:
    assert set(PROVEN_BY) == set(registry.names())


@pytest.mark.parametrize("change", registry.CHANGES, ids=lambda c: c.name)
def test_each_change_is_proven_by_tests_that_exist(change: registry.Change) -> None:
    assert change.corrects and PROVEN_BY[change.name]
    for node_id in PROVEN_BY[change.name]:
        path, _, name = node_id.partition("::")
        source = (ROOT / path).read_text()
        assert re.search(rf"^def {re.escape(name)}\(", source, re.MULTILINE), f"{node_id}: no such test"


def test_each_fix_is_proven_by_a_conformance_test() -> None:
    for change in registry.CHANGES:
        if change.kind == "fix":
            assert any(n.startswith("tests/conformance/") for n in PROVEN_BY[change.name]), change.name


def test_names_lists_each_kind() -> None:
    assert registry.names("speedup") == [c.name for c in registry.CHANGES if c.kind == "speedup"]
    assert {"parse-cache", "jsonpath-cache", "in-process-clients", "lazy-failure-logs"} <= set(
        registry.names("speedup")
    )
    assert set(registry.names("hook")) == {
        "lambda-invoke",
        "dynamodb-task",
        "lambda-task",
        "sfn-task",
        "task-permissions",
        "sns-queue-policy",
        "execution-end",
        "events-targets",
        "source-writes",
        "mock-config",
    }
    kinds = ("fix", "engine", "speedup", "hook")
    assert sorted(registry.names()) == sorted(n for kind in kinds for n in registry.names(kind))


def test_the_pinned_moto_is_the_version_pyproject_pins() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(rf'"moto\[[^\]]*\]=={re.escape(registry.PINNED_MOTO)}"', pyproject)
    assert moto_version.installed_moto() == registry.PINNED_MOTO


def test_another_moto_is_refused_in_one_line_before_anything_is_patched(monkeypatch: pytest.MonkeyPatch) -> None:
    registry.remove()
    monkeypatch.setattr(moto_version, "installed_moto", lambda: "5.3.0")
    with pytest.raises(EngineError) as raised:
        Engine(ROOT / "template.yaml").start()
    message = str(raised.value)
    assert "\n" not in message and "moto 5.2.5" in message and "moto 5.3.0 is installed" in message
    assert registry.left_out() is None


def test_remove_puts_every_change_back() -> None:
    import moto.backend_index as backend_index
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend
    from moto.stepfunctions.parser.utils import TMP_THREADS

    registry.remove()
    original = StepFunctionsParserBackend.__dict__["start_execution"]
    patterns = list(backend_index.backend_url_patterns)
    registry.apply()
    assert StepFunctionsParserBackend.__dict__["start_execution"] is not original
    assert registry.original(StepFunctionsParserBackend, "start_execution") is original
    assert "start_sync_execution" in StepFunctionsParserBackend.__dict__
    assert len(backend_index.backend_url_patterns) == len(patterns) + 1
    registry.remove()
    assert StepFunctionsParserBackend.__dict__["start_execution"] is original
    assert "start_sync_execution" not in StepFunctionsParserBackend.__dict__  # added, so deleted again
    assert backend_index.backend_url_patterns == patterns
    from moto.stepfunctions.parser.asl.component.program import program

    assert program.TMP_THREADS is TMP_THREADS
    assert registry.left_out() is None


def test_apply_is_idempotent_and_thread_safe() -> None:
    import threading

    from moto.dynamodb.models import DynamoDBBackend

    registry.remove()
    put_item = DynamoDBBackend.__dict__["put_item"]
    threads = [threading.Thread(target=registry.apply) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    registry.apply()
    try:
        # wrapped once by each change that wraps it (compact-items, then atomic-writes' lock), not 9 times
        installed = DynamoDBBackend.__dict__["put_item"]
        assert installed.__wrapped__.__wrapped__ is put_item
        assert registry.left_out() == frozenset()
    finally:
        registry.remove()


def test_apply_without_leaves_those_out_and_another_apply_puts_them_back() -> None:
    from moto.dynamodb.comparisons import ConditionExpressionParser

    registry.remove()
    parse = ConditionExpressionParser.__dict__["parse"]
    try:
        registry.apply(without=registry.names("speedup"))
        assert ConditionExpressionParser.__dict__["parse"] is parse
        assert registry.left_out() == frozenset(registry.names("speedup"))
        registry.apply()
        assert ConditionExpressionParser.__dict__["parse"] is not parse
    finally:
        registry.remove()
    assert ConditionExpressionParser.__dict__["parse"] is parse


def test_an_installer_that_fails_leaves_moto_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    registry.remove()
    original = StepFunctionsParserBackend.__dict__["start_execution"]

    def install_broken(patch: registry.Patch) -> None:
        raise RuntimeError("broken installer")

    broken = registry.Change("broken", "engine", install_broken, "-")
    monkeypatch.setattr(registry, "CHANGES", (*registry.CHANGES, broken))

    with pytest.raises(RuntimeError, match="broken installer"):
        registry.apply()

    assert StepFunctionsParserBackend.__dict__["start_execution"] is original
    assert registry.left_out() is None


def test_leaving_out_a_hook_or_an_unknown_change_is_refused() -> None:
    with pytest.raises(KeyError, match="a hook is the engine's own part"):
        registry.apply(without=["lambda-invoke"])
    with pytest.raises(KeyError, match="no such change: patch-8"):
        registry.apply(without=["patch-8"])


def test_patch_and_its_undo_log_are_a_leaf_that_the_changes_name_without_the_registry() -> None:
    # A change names Patch from idemflow.engine.patching, which imports nothing of idemflow: no change module
    # imports the registry that lists it (LocalStack's utils/patch.py is shaped the same way).
    import ast
    from pathlib import Path

    from idemflow.engine import patching

    def imports(path: Path) -> set[str]:
        tree = ast.parse(path.read_text())
        found = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        return found | {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}

    assert not [m for m in imports(Path(patching.__file__)) if m.startswith("idemflow")]
    for change in registry.CHANGES:
        module = Path(sys.modules[change.installer.__module__].__file__ or "")
        assert "idemflow.engine.registry" not in imports(module), module.name
    assert registry.Patch is patching.Patch
