"""The package's shape, read from its own source: who writes the engine's state, and which way imports run."""

from __future__ import annotations

import ast
import functools
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
    from idemflow.engine import registry

    change_modules = {ROOT.joinpath(*c.installer.__module__.split(".")).with_suffix(".py") for c in registry.CHANGES}
    assert len(change_modules) > 20
    kept = []
    for path in sorted(change_modules):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Global):
                kept += [f"{path.name}: global {name}" for name in node.names]
    assert kept == []


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules ``name`` imports: at the top, in functions and under TYPE_CHECKING alike."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def nearest(module: str) -> str | None:
        while module and module not in known:
            module = module.rpartition(".")[0]
        return module or None

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {m for alias in node.names if (m := nearest(alias.name))}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            submodules = {f"{base}.{alias.name}" for alias in node.names} & set(known)
            found |= submodules
            if len(submodules) < len(node.names) and (m := nearest(base)):
                found.add(m)
    found.discard(name)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for successor in graph[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


@functools.cache
def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def test_the_package_has_no_import_circle() -> None:
    assert cycles(graph()) == []


def test_the_checker_of_circles_finds_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_template_reader_imports_nothing_of_the_engine() -> None:
    reader = {name: deps for name, deps in graph().items() if name.startswith("idemflow.template")}
    assert reader, "no idemflow.template modules found"
    assert {name: sorted(d for d in deps if d.startswith("idemflow.engine")) for name, deps in reader.items()} == {
        name: [] for name in reader
    }


def test_the_state_and_the_patch_log_are_leaves() -> None:
    # Every change imports them: they import nothing of the engine (at run time or for type checking) but leaves.
    leaves = {"idemflow.engine.errors", "idemflow.engine.faults"}
    edges = graph()
    assert edges["idemflow.engine.patching"] == set()
    assert edges["idemflow.engine.state"] <= leaves


# A class whose bases are moto's AWS errors is an AWS service's answer on the wire (a 400 with its code), kept
# beside the service that raises it; a private one is a module's own control flow, never seen by a caller.
WIRE_ERRORS = {"AWSError", "JsonRESTError", "ServiceException"}


def exception_classes(path: Path) -> list[tuple[str, set[str]]]:
    """(name, base names) of each top-level class of a module that derives from an exception by its name."""
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef):
            bases = {
                b.id if isinstance(b, ast.Name) else b.attr
                for b in node.bases
                if isinstance(b, ast.Name | ast.Attribute)
            }
            if any(b.endswith(("Error", "Exception", "Exit")) for b in bases):
                found.append((node.name, bases))
    return found


def test_each_layer_keeps_its_exceptions_in_its_errors_module() -> None:
    strays = [
        f"{name}.{cls}"
        for name, path in modules().items()
        if not name.endswith(".errors")
        for cls, bases in exception_classes(path)
        if not cls.startswith("_") and not bases & WIRE_ERRORS
    ]
    assert strays == []
    layers = {name.rpartition(".")[0] or name for name in modules() if name.endswith(".errors")}
    assert layers >= {
        "idemflow",
        "idemflow.engine",
        "idemflow.template",
        "idemflow.cli",
        "idemflow.explore",
        "idemflow.mutants",
    }
