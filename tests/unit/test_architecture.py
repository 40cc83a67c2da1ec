"""The package's shape, read from its own source: who writes the engine's state, and which way imports run."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.paths import PROJECT_ROOT as ROOT

PACKAGE = ROOT / "idemflow"
STATE_WRITERS = ("install", "update", "reset")


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def state_writes(path: Path) -> list[str]:
    """``state.install(...)``, ``state.update(...)``, ``state.reset()`` calls in a module (any alias of the module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "idemflow.engine"
        for alias in node.names
        if alias.name == "state"
    }
    return [
        f"{path.name}:{node.lineno} {node.func.value.id}.{node.func.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in aliases
        and node.func.attr in STATE_WRITERS
    ]


def test_only_the_engine_writes_the_engine_state() -> None:
    writers = {name: calls for name, path in modules().items() if (calls := state_writes(path))}

    assert set(writers) == {"idemflow.engine.engine"}, writers


def test_the_changes_keep_no_attached_part_of_their_own() -> None:
    # What the engine attaches lives in idemflow/engine/state.py; a change module reads it, it never keeps a copy.
    kept = []
    for path in (PACKAGE / "engine" / "changes").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Global):
                kept += [f"{path.name}: global {name}" for name in node.names]
    assert kept == []
