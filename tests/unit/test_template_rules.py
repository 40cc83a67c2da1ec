"""The template's Rules, as CloudFormation checks them before it creates anything (AWS CloudFormation User
Guide, "Rules" section: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/rules-section-structure.html):
where a rule's RuleCondition holds, every Assert must, else the stack is refused with the AssertDescription."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from idemflow.contract import STATE_MACHINE_LOGICAL_ID
from idemflow.engine.stack import resolve_stack
from idemflow.template import TemplateError
from tests.paths import TEMPLATE_PATH

pytestmark = pytest.mark.unit

RULES: dict[str, Any] = {
    "DoorNeedsExpress": {
        "RuleCondition": {"Fn::Equals": [{"Ref": "Door"}, "true"]},
        "Assertions": [
            {
                "Assert": {"Fn::Equals": [{"Ref": "Kind"}, "EXPRESS"]},
                "AssertDescription": "Door=true needs Kind=EXPRESS",
            }
        ],
    },
    "KnownKind": {
        "Assertions": [{"Assert": {"Fn::Contains": [["STANDARD", "EXPRESS"], {"Ref": "Kind"}]}}],
    },
}


def template(tmp_path: Path) -> Path:
    path = tmp_path / "template.yaml"
    body = {
        "Parameters": {
            "Door": {"Type": "String", "Default": "false"},
            "Kind": {"Type": "String", "Default": "STANDARD"},
        },
        "Rules": RULES,
        "Resources": {
            "Table": {"Type": "AWS::DynamoDB::Table", "Properties": {"KeySchema": [], "AttributeDefinitions": []}}
        },
    }
    path.write_text(yaml.safe_dump(body))
    return path


@pytest.mark.parametrize(
    ("overrides", "refusal"),
    [
        ({}, None),  # the rule's condition does not hold: its assertions are not checked
        ({"Door": "true", "Kind": "EXPRESS"}, None),
        ({"Door": "true"}, "Rules.DoorNeedsExpress: Door=true needs Kind=EXPRESS"),
        ({"Kind": "OTHER"}, "Rules.KnownKind: the assertion does not hold"),
    ],
)
def test_a_failed_assertion_refuses_the_stack_with_its_description(
    tmp_path: Path, overrides: dict[str, str], refusal: str | None
) -> None:
    path = template(tmp_path)
    if refusal is None:
        assert "Table" in resolve_stack(path, parameter_overrides=overrides).tables
    else:
        with pytest.raises(TemplateError, match=refusal):
            resolve_stack(path, parameter_overrides=overrides)


FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:charge"
STATE_MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:charge"


@pytest.mark.parametrize(
    ("overrides", "refusal"),
    [
        ({"SideEffectFunctionArn": FUNCTION}, None),
        ({"SideEffectStateMachineArn": STATE_MACHINE}, None),
        # Never a silent choice between two side effects.
        (
            {"SideEffectFunctionArn": FUNCTION, "SideEffectStateMachineArn": STATE_MACHINE},
            "Rules.OneSideEffect: Set SideEffectFunctionArn or SideEffectStateMachineArn, not both",
        ),
        # Express workflows support Request Response integrations only, not Run a Job (.sync) ("Integrating
        # optimized services with Step Functions", https://docs.aws.amazon.com/step-functions/latest/dg/integrate-optimized.html).
        (
            {"SideEffectStateMachineArn": STATE_MACHINE, "WorkflowType": "EXPRESS"},
            "Rules.StateMachineSideEffectNeedsStandard: SideEffectStateMachineArn needs WorkflowType STANDARD",
        ),
    ],
)
def test_the_workflow_wraps_one_side_effect_and_waits_for_a_state_machine_only_when_standard(
    overrides: dict[str, str], refusal: str | None
) -> None:
    if refusal is None:
        stack = resolve_stack(TEMPLATE_PATH, parameter_overrides=overrides)
        kind = "stateMachine" if "SideEffectStateMachineArn" in overrides else "function"
        assert stack.state_machines[STATE_MACHINE_LOGICAL_ID].substitutions["SideEffectKind"] == kind
    else:
        with pytest.raises(TemplateError, match=refusal):
            resolve_stack(TEMPLATE_PATH, parameter_overrides=overrides)
