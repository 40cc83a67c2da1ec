"""The template resolver: what a local deployment reads from template.yaml, and its named errors."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from idemflow.contract import IDEMPOTENCY_TABLE_LOGICAL_ID, STATE_MACHINE_LOGICAL_ID
from idemflow.engine.stack import resolve_stack
from idemflow.template import TemplateError, load_template, substitute
from tests.paths import PROJECT_ROOT, TEMPLATE_PATH


def test_resolves_the_real_stack() -> None:
    stack = resolve_stack(stack_name="s", region="eu-west-1", account_id="111122223333")
    sm = stack.state_machines[STATE_MACHINE_LOGICAL_ID]
    example = stack.side_effect_function()
    assert example.arn == f"arn:aws:lambda:eu-west-1:111122223333:function:s-{example.logical_id}"
    assert sm.substitutions["SideEffectFunctionArn"] == example.arn
    assert sm.substitutions["IdempotencyTableName"] == stack.tables[IDEMPOTENCY_TABLE_LOGICAL_ID].name
    assert example.environment["LOG_LEVEL"] == "INFO", "Globals are merged into each function"
    assert example.code_dir.parent == PROJECT_ROOT / "functions"
    assert stack.tables[IDEMPOTENCY_TABLE_LOGICAL_ID].ttl_attribute == "ttl"
    assert stack.outputs["StateMachineArn"] == sm.arn
    json.loads(sm.definition)  # substituted text is still JSON
    assert "${" not in sm.definition


def test_every_placeholder_of_the_definition_has_a_substitution_and_every_substitution_is_used() -> None:
    sm = resolve_stack().state_machines[STATE_MACHINE_LOGICAL_ID]
    placeholders = set(re.findall(r"\$\{(\w+)\}", sm.definition_path.read_text()))
    assert placeholders == set(sm.substitutions)


def test_the_definition_uses_the_tables_key_and_ttl_attribute_names() -> None:
    stack = resolve_stack()
    table = stack.tables[IDEMPOTENCY_TABLE_LOGICAL_ID]
    text = stack.state_machines[STATE_MACHINE_LOGICAL_ID].definition_path.read_text()
    assert f'"{table.partition_key}": {{' in text and f'"#id": "{table.partition_key}"' in text
    item = json.loads(text)["States"]["AcquireLock"]["Parameters"]["Item"]
    assert table.partition_key in item and set(item[table.ttl_attribute]) == {"N.$"}


def test_parameter_overrides_are_validated_like_cloudformation() -> None:
    assert (
        resolve_stack(parameter_overrides={"WorkflowType": "EXPRESS"}).state_machines[STATE_MACHINE_LOGICAL_ID].type
        == "EXPRESS"
    )
    with pytest.raises(TemplateError, match=r"Parameters\.WorkflowType: 'BATCH' is not one of"):
        resolve_stack(parameter_overrides={"WorkflowType": "BATCH"})
    with pytest.raises(TemplateError, match=r"Parameters\.LockLeaseSeconds: 1 is below MinValue"):
        resolve_stack(parameter_overrides={"LockLeaseSeconds": "1"})
    with pytest.raises(TemplateError, match=r"Parameters\.WorkflowScope: .* does not match"):
        resolve_stack(parameter_overrides={"WorkflowScope": "has space"})
    with pytest.raises(TemplateError, match="unknown parameter override"):
        resolve_stack(parameter_overrides={"Nope": "1"})


@pytest.fixture
def copy_of_project(tmp_path: Path) -> Path:
    shutil.copy(TEMPLATE_PATH, tmp_path / "template.yaml")
    shutil.copytree(PROJECT_ROOT / "statemachine", tmp_path / "statemachine")
    shutil.copytree(PROJECT_ROOT / "functions", tmp_path / "functions")
    return tmp_path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("FunctionName: !Ref ClockFunction", "FunctionName: !Ref NoSuchFunction", None),
        (
            "ClockFunctionArn: !GetAtt ClockFunction.Arn",
            "ClockFunctionArn: !GetAtt Nope.Arn",
            r"IdempotentStateMachine.*!GetAtt Nope\.Arn: no such resource",
        ),
        (
            "CodeUri: functions/clock/",
            "CodeUri: functions/missing/",
            r"Resources\.ClockFunction\.CodeUri: functions/missing/ is not a directory",
        ),
        (
            "DefinitionUri: statemachine/idempotent.asl.json",
            "DefinitionUri: statemachine/missing.json",
            r"Resources\.IdempotentStateMachine\.DefinitionUri: statemachine/missing\.json",
        ),
        (
            "WorkflowScope: !Ref WorkflowScope",
            "WorkflowScope: !Join ['', [a, b]]",
            r"Fn::Join is not supported by the local engine",
        ),
        (
            "      KeySchema:\n        - AttributeName: id",
            "      KeySchemaX:\n        - AttributeName: id",
            r"Resources\.IdempotencyTable: missing property KeySchema",
        ),
    ],
)
def test_a_template_that_cannot_be_deployed_names_the_resource_and_property(
    copy_of_project: Path, old: str, new: str, message: str | None
) -> None:
    path = copy_of_project / "template.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    if message is None:  # a Ref only the SAM transform reads (inside a policy template) is not resolved locally
        resolve_stack(path)
        return
    with pytest.raises(TemplateError, match=message):
        resolve_stack(path)


def test_a_placeholder_without_substitution_is_named() -> None:
    with pytest.raises(TemplateError, match=r"placeholder \$\{Missing\}"):
        substitute('{"a": "${Missing}"}', {}, "X")


def test_intrinsics_load_in_long_form() -> None:
    resources = load_template()["Resources"]
    subs = resources[STATE_MACHINE_LOGICAL_ID]["Properties"]["DefinitionSubstitutions"]
    assert subs["ClockFunctionArn"] == {"Fn::GetAtt": ["ClockFunction", "Arn"]}
    assert subs["WorkflowScope"] == {"Ref": "WorkflowScope"}
