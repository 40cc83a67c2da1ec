"""The package stands alone: no module under idemflow/ names an example, a test or a folder of the repository
(an installed wheel has no repository around it). Docstrings and comments may cite a test or a recorded
execution for a reader; code may not reach for one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import idemflow

PACKAGE = Path(idemflow.__file__).resolve().parent
# What code outside the package would be: an example, a test module or node id, the checkout above the package.
REACHES_OUT = re.compile(r"(^|[^\w.])(examples|tests)/|::test_")


def code_strings(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module's code (docstrings left out: they are for readers)."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "workflow" not in p.relative_to(PACKAGE).parts[:1])


@pytest.mark.parametrize("module", MODULES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_no_module_names_an_example_a_test_or_the_checkout(module: Path) -> None:
    found = [f"{module.name}:{line}: {text!r}" for line, text in code_strings(module) if REACHES_OUT.search(text)]
    assert found == []
    # The package's own files are found from __file__; nothing climbs above the package.
    assert climbs_above_the_package(module) == []


def climbs_above_the_package(path: Path) -> list[int]:
    """Lines whose code takes ``__file__``'s grandparent (``.parent.parent``, ``.parents[n]``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Attribute | ast.Subscript):
            continue
        text = ast.unparse(node)
        if "__file__" in text and (".parent.parent" in text or ".parents[" in text):
            found.append(node.lineno)
    return sorted(set(found))
