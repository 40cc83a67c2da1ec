"""What a project's mutation campaign mutates and runs, declared by the project.

The definition is the workflow state machine's ``DefinitionUri`` in the project's ``template.yaml``; the
pytest selection (cheapest first: with ``-x`` a mutant stops at its first failing test) and the file that
explains the equivalent mutants are ``[tool.idemflow.mutants]`` in its ``pyproject.toml``::

    [tool.idemflow.mutants]
    tests = ["tests/unit/test_definition_rules.py", "tests/functional/workflow/"]
    equivalent = "statemachine/mutants-equivalent.json"
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from idemflow.contract import STATE_MACHINE_LOGICAL_ID
from idemflow.engine.stack import resolve_stack
from idemflow.mutants.errors import MutantsConfigError
from idemflow.template import TemplateError


@dataclass(frozen=True)
class MutantsConfig:
    repo: Path
    definition: Path
    """The definition file, relative to ``repo`` (what each mutant rewrites in its copy of the project)."""
    tests: tuple[str, ...]
    equivalent: Path
    """The file explaining equivalent mutants, relative to ``repo``."""


def tool_table(repo: Path, name: str, declare: str) -> tuple[Path, dict[str, Any], list[str]]:
    """The project's ``pyproject.toml``, its ``[tool.idemflow.<name>]`` table and that table's ``tests`` (a non-empty
    list of pytest selections); ``declare`` says what a missing table should declare."""
    pyproject = repo / "pyproject.toml"
    try:
        table = tomllib.loads(pyproject.read_text())["tool"]["idemflow"][name]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as exc:
        raise MutantsConfigError(f"{pyproject}: no [tool.idemflow.{name}] table ({exc}): declare {declare}") from exc
    tests = table.get("tests")
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
        raise MutantsConfigError(f"{pyproject}: [tool.idemflow.{name}] tests must be a list of pytest selections")
    return pyproject, table, tests


def load_config(repo: Path) -> MutantsConfig:
    _, table, tests = tool_table(repo, "mutants", "its tests and equivalent file")
    try:
        stack = resolve_stack(repo / "template.yaml")
        definition = stack.workflow().state_machines[STATE_MACHINE_LOGICAL_ID].definition_path
    except (TemplateError, KeyError) as exc:
        raise MutantsConfigError(f"{repo / 'template.yaml'}: no workflow definition to mutate ({exc})") from exc
    return MutantsConfig(
        repo=repo,
        definition=definition.relative_to(repo.resolve()),
        tests=tuple(tests),
        equivalent=Path(str(table.get("equivalent", "mutants-equivalent.json"))),
    )
