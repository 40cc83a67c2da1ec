"""The definition's hard constraints: it must run unchanged on AWS, Step Functions Local 2.0 and the
embedded engine (JSONPath only, optimized integrations only) and be well formed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from idemflow.contract import PROJECT_ROOT, STATE_MACHINE_LOGICAL_ID, RecordStatus, WorkflowError
from idemflow.template import resolve_stack

pytestmark = pytest.mark.unit

ASL_PATH = PROJECT_ROOT / "statemachine" / "idempotent.asl.json"
ALLOWED_RESOURCES = {
    "arn:aws:states:::dynamodb:putItem",
    "arn:aws:states:::dynamodb:getItem",
    "arn:aws:states:::dynamodb:updateItem",
    "arn:aws:states:::dynamodb:deleteItem",
    "arn:aws:states:::lambda:invoke",
}


@pytest.fixture(scope="module")
def asl() -> dict[str, Any]:
    return json.loads(ASL_PATH.read_text())


def _walk(node: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


def _targets(state: dict[str, Any]) -> set[str]:
    found = {state[k] for k in ("Next", "Default") if k in state}
    for rule in state.get("Choices", []):
        found.add(rule["Next"])
    for catcher in state.get("Catch", []):
        found.add(catcher["Next"])
    return found


def test_jsonpath_only(asl: dict[str, Any]) -> None:
    keys = {k for k, _ in _walk(asl)}
    assert asl.get("QueryLanguage", "JSONPath") == "JSONPath"
    assert not keys & {"QueryLanguage", "Assign", "Arguments", "Output"}, "JSONata/Variables fields"
    assert not any(isinstance(v, str) and v.startswith("{%") for _, v in _walk(asl))


def test_optimized_integrations_only(asl: dict[str, Any]) -> None:
    resources = {s["Resource"] for s in asl["States"].values() if s["Type"] == "Task"}
    assert resources <= ALLOWED_RESOURCES, resources - ALLOWED_RESOURCES
    assert not any("aws-sdk" in r for r in resources)


def test_every_transition_lands_on_a_state_and_every_state_is_reachable(asl: dict[str, Any]) -> None:
    states = asl["States"]
    for name, state in states.items():
        missing = _targets(state) - states.keys()
        assert not missing, f"{name} goes to unknown {missing}"
    seen, todo = set(), [asl["StartAt"]]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_targets(states[name]))
    assert seen == set(states), f"unreachable: {set(states) - seen}"


def test_fail_states_use_the_contract_error_names(asl: dict[str, Any]) -> None:
    errors = {s["Error"] for s in asl["States"].values() if s["Type"] == "Fail" and "Error" in s}
    assert errors == {e.value for e in WorkflowError}


def test_statuses_written_and_compared_are_the_contract_statuses(asl: dict[str, Any]) -> None:
    text = ASL_PATH.read_text()
    used = set(re.findall(r'"(IN_PROGRESS|COMPLETED|[A-Z]+_[A-Z_]+)"', text))
    assert used == {s.value for s in RecordStatus}


def test_substitution_placeholders_are_quoted_strings(asl: dict[str, Any]) -> None:
    # DefinitionSubstitutions are string-only: a placeholder outside a JSON string would make the file
    # invalid JSON. json.loads above already proves it; here every placeholder sits in a value.
    placeholders = {m for _, v in _walk(asl) if isinstance(v, str) for m in re.findall(r"\$\{(\w+)\}", v)}
    assert placeholders, "the definition is expected to use DefinitionSubstitutions"


ASL_VALIDATOR = PROJECT_ROOT / "node_modules" / ".bin" / "asl-validator"


def _asl_validator(definition: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    if not ASL_VALIDATOR.exists():
        if shutil.which("npm") is None:
            pytest.skip("npm is not installed: `make test` installs asl-validator with npm ci")
        pytest.fail("asl-validator is missing: run `make test` (it runs npm ci from package-lock.json)")
    path = tmp_path / "definition.json"
    path.write_text(definition)
    return subprocess.run(
        [str(ASL_VALIDATOR), "--json-path", str(path)], capture_output=True, text=True, check=False, timeout=60
    )


def test_the_deployed_definition_is_valid_amazon_states_language(tmp_path: Path) -> None:
    definition = resolve_stack().state_machines[STATE_MACHINE_LOGICAL_ID].definition
    result = _asl_validator(definition, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_check_catches_a_broken_definition(tmp_path: Path) -> None:
    # Proves the check above can fail: a Retry field with the wrong type is rejected.
    definition = json.loads(resolve_stack().state_machines[STATE_MACHINE_LOGICAL_ID].definition)
    definition["States"]["RunSideEffect"]["Retry"][0]["MaxAttempts"] = "four"
    result = _asl_validator(json.dumps(definition), tmp_path)
    assert result.returncode != 0
