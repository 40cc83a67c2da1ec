"""The template is deployable: cfn-lint clean (what `sam validate --lint` runs), the SAM transform
succeeds, and the roles it generates grant exactly what the definition and functions use."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from idemflow.contract import (
    IDEMPOTENCY_TABLE_LOGICAL_ID,
    IDEMPOTENCY_TABLE_SUBSTITUTION,
    SIDE_EFFECT_STATE_MACHINE_SUBSTITUTION,
    SIDE_EFFECT_SUBSTITUTION,
    STATE_MACHINE_LOGICAL_ID,
)
from idemflow.engine.stack import resolve_stack
from idemflow.template import load_template
from tests.cfn_lint import cfn_lint
from tests.paths import DEFINITION_PATH, PROJECT_ROOT, TEMPLATE_PATH


class _NoManagedPolicies:
    def load(self) -> dict[str, str]:
        return {}


@pytest.fixture(scope="module")
def translated() -> dict[str, Any]:
    # Imported here, not at the top: every pytest worker imports this module to collect it; one runs it.
    from samtranslator.translator.transform import transform

    template = load_template()
    for resource in template["Resources"].values():
        props = resource.get("Properties", {})
        # The transform wants packaged artifacts (what `sam package` uploads): stand-ins suffice here.
        if "CodeUri" in props:
            props["CodeUri"] = "s3://bucket/code.zip"
        if "ContentUri" in props:
            props["ContentUri"] = "s3://bucket/layer.zip"
        if "DefinitionUri" in props:
            props["DefinitionUri"] = "s3://bucket/definition.json"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")  # the transform needs a region to build ARNs
        result: dict[str, Any] = transform(template, {}, _NoManagedPolicies())
    return result


EXAMPLE_TEMPLATES = sorted((PROJECT_ROOT / "examples").glob("*/template.yaml"))


@pytest.mark.parametrize("path", [TEMPLATE_PATH, *EXAMPLE_TEMPLATES], ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_cfn_lint_is_clean(monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config, path: Path) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    assert cfn_lint(path.read_text(), "us-east-1", pytestconfig.cache) == []


class _Kept(dict[str, object]):
    """A cache that keeps what it is given in memory."""

    def get(self, key: str, default: object) -> object:  # type: ignore[override]
        return super().get(key, default)

    def set(self, key: str, value: object) -> None:
        self[key] = value


def test_cfn_lint_keeps_a_clean_result_under_its_inputs_and_never_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in for cfn-lint's module records each run: what is kept is what this test is about.
    runs: list[tuple[str, list[str]]] = []

    def lint(text: str, config: Any) -> list[str]:
        runs.append((text, config.regions))
        return ["E3002 NoSuchProperty"] if "NoSuchProperty" in text else []

    monkeypatch.setitem(sys.modules, "cfnlint.api", types.SimpleNamespace(lint=lint, ManualArgs=types.SimpleNamespace))
    kept = _Kept()
    queue = "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n"

    assert cfn_lint(queue + "    Properties: {NoSuchProperty: 1}\n", "us-east-1", kept) == ["E3002 NoSuchProperty"]
    assert cfn_lint(queue + "    Properties: {NoSuchProperty: 1}\n", "us-east-1", kept)  # linted again: not kept
    assert cfn_lint(queue, "us-east-1", kept) == [] and list(kept.values()) == ["clean"]
    assert len(runs) == 3
    assert cfn_lint(queue, "us-east-1", kept) == [] and len(runs) == 3  # kept: not linted again
    cfn_lint(queue, "eu-west-1", kept)  # another region
    cfn_lint(queue + "# changed\n", "us-east-1", kept)  # another text
    assert runs[3:] == [(queue, ["eu-west-1"]), (queue + "# changed\n", ["us-east-1"])]


@pytest.mark.parametrize("path", EXAMPLE_TEMPLATES, ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_an_example_nests_the_workflow_and_passes_its_settings_with_the_workflows_defaults(path: Path) -> None:
    # One nested application per guarded side effect (outbox: one; orders: one per guarded step's kind).
    example, workflow = load_template(path), load_template()
    apps = [r for r in example["Resources"].values() if r["Type"] == "AWS::Serverless::Application"]
    assert apps
    uses = json.dumps({k: v for k, v in example.items() if k != "Parameters"})
    for app in apps:
        assert (path.parent / app["Properties"]["Location"]).resolve() == TEMPLATE_PATH
        passed = app["Properties"]["Parameters"]
        assert SIDE_EFFECT_SUBSTITUTION in passed or SIDE_EFFECT_STATE_MACHINE_SUBSTITUTION in passed
        for name, spec in (example.get("Parameters") or {}).items():
            if name not in workflow["Parameters"]:  # the example's own setting (outbox: RequestsTableDoor)
                assert json.dumps({"Ref": name}) in uses or f"${{{name}}}" in uses, f"{name} is unused"
                continue
            assert passed.get(name) == {"Ref": name}, f"{name} is declared but not passed to the workflow"
            assert spec == {k: workflow["Parameters"][name][k] for k in spec}, f"{name} differs from the workflow's"


def _policies(policies: list[Any]) -> list[dict[str, Any]]:
    """A role's policies; one under an ``Fn::If`` (the side effect's kind) counts in whichever branch holds it."""
    found = []
    for policy in policies:
        if "Fn::If" in policy:
            found += [branch for branch in policy["Fn::If"][1:] if "PolicyDocument" in branch]
        else:
            found.append(policy)
    return found


def _statements(translated: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    role = next(v for k, v in translated["Resources"].items() if k.startswith(role_prefix) and k.endswith("Role"))
    return [
        s for policy in _policies(role["Properties"].get("Policies", [])) for s in policy["PolicyDocument"]["Statement"]
    ]


def test_state_machine_role_allows_exactly_the_dynamodb_actions_the_definition_uses(translated: dict[str, Any]) -> None:
    definition = json.loads(DEFINITION_PATH.read_text())
    used = {
        "dynamodb:" + s["Resource"].rsplit(":", 1)[1][0].upper() + s["Resource"].rsplit(":", 1)[1][1:]
        for s in definition["States"].values()
        if s.get("Resource", "").startswith("arn:aws:states:::dynamodb:")
    }
    statements = _statements(translated, STATE_MACHINE_LOGICAL_ID)
    granted = {a for s in statements for a in s["Action"] if a.startswith("dynamodb:")}
    assert granted == used
    # The table the workflow creates, or the shared one it is given: the one its definition names.
    resources = [s["Resource"] for s in statements if any(a.startswith("dynamodb:") for a in s["Action"])]
    for resource in resources:
        condition, created, shared = resource["Fn::If"]
        assert (condition, created) == ("CreateIdempotencyTable", {"Fn::GetAtt": [IDEMPOTENCY_TABLE_LOGICAL_ID, "Arn"]})
        assert shared["Fn::Sub"].endswith(":table/${IdempotencyTableName}")
    substitution = translated["Resources"][STATE_MACHINE_LOGICAL_ID]["Properties"]["DefinitionSubstitutions"]
    assert substitution[IDEMPOTENCY_TABLE_SUBSTITUTION] == {
        "Fn::If": ["CreateIdempotencyTable", {"Ref": IDEMPOTENCY_TABLE_LOGICAL_ID}, {"Ref": "IdempotencyTableName"}]
    }


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def test_state_machine_may_invoke_exactly_the_side_effect_it_wraps_and_the_clock(translated: dict[str, Any]) -> None:
    statements = _statements(translated, STATE_MACHINE_LOGICAL_ID)
    invoked = [s for s in statements if "lambda:InvokeFunction" in _actions(s)]
    substitutions = translated["Resources"][STATE_MACHINE_LOGICAL_ID]["Properties"]["DefinitionSubstitutions"]
    # A state machine side effect names no function the role may invoke (an ARN of no resource).
    kind, none, side_effect = substitutions[SIDE_EFFECT_SUBSTITUTION]["Fn::If"]
    assert kind == "SideEffectIsStateMachine" and none["Fn::Sub"].endswith(":function:none")
    assert not [s for s in invoked if s["Resource"] == none]
    # The one ARN the definition invokes, whichever branch the condition takes: no wildcard, no other function.
    (exact,) = [s for s in invoked if s["Resource"] == side_effect]
    assert _actions(exact) == ["lambda:InvokeFunction"] and exact["Effect"] == "Allow"
    assert set(side_effect) == {"Fn::If"} and side_effect["Fn::If"][0] == "CreateExampleSideEffect"
    assert side_effect["Fn::If"][2] == {"Ref": SIDE_EFFECT_SUBSTITUTION}
    others = [s for s in invoked if s is not exact]
    clock = {s["Resource"]["Fn::Sub"][1]["functionName"]["Ref"] for s in others}
    assert clock == {"ClockFunction"} and substitutions["ClockFunctionArn"] == {"Fn::GetAtt": ["ClockFunction", "Arn"]}


def test_clock_function_gets_no_permissions(translated: dict[str, Any]) -> None:
    assert _statements(translated, "ClockFunction") == []


def test_state_machine_keeps_its_definition_file_and_substitutions(translated: dict[str, Any]) -> None:
    sm = translated["Resources"][STATE_MACHINE_LOGICAL_ID]
    assert sm["Type"] == "AWS::StepFunctions::StateMachine"
    assert sm["Properties"]["DefinitionS3Location"] == {"Bucket": "bucket", "Key": "definition.json"}
    assert set(sm["Properties"]["DefinitionSubstitutions"]) >= {"SideEffectFunctionArn", "IdempotencyTableName"}
    assert sm["Properties"]["TracingConfiguration"] == {"Enabled": True}


def test_the_engine_lists_the_resources_the_sam_transform_makes(translated: dict[str, Any]) -> None:
    # ListStackResources on the engine (Stack.listed) against the transform of the real template: every resource
    # the engine lists is one the transform makes (logical id and type, SAM's hash suffixes aside), and every
    # resource the transform makes unconditionally is listed.
    stack = resolve_stack(parameter_overrides={"QueueFrontDoor": "true", "EventFrontDoor": "true"})

    def without_sha(lid: str) -> str:
        return re.sub(r"[0-9a-f]{10}$", "<sha>", lid)

    made = {(without_sha(lid), r["Type"]) for lid, r in translated["Resources"].items()}
    unconditional = {
        (without_sha(lid), r["Type"]) for lid, r in translated["Resources"].items() if "Condition" not in r
    }
    listed = {(without_sha(lid), kind) for lid, kind, _ in stack.listed}
    assert listed <= made, sorted(listed - made)
    assert unconditional <= listed, sorted(unconditional - listed)
