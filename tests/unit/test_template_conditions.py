"""Conditions, Fn::If and nested applications, resolved the way CloudFormation does: a resource whose
condition is false does not exist, only the chosen branch of Fn::If is evaluated, and a nested stack gets
its parameters from the parent's Parameters property and gives its outputs to !GetAtt App.Outputs.X."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from idemflow.contract import (
    IDEMPOTENCY_TABLE_LOGICAL_ID,
    IDEMPOTENCY_TABLE_SUBSTITUTION,
    SIDE_EFFECT_SUBSTITUTION,
    STATE_MACHINE_LOGICAL_ID,
)
from idemflow.engine.stack import resolve_stack
from idemflow.template import TemplateError
from tests.paths import TEMPLATE_PATH

USER_ARN = "arn:aws:lambda:us-east-1:123456789012:function:my-own-function"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_the_example_side_effect_is_deployed_when_no_function_is_given() -> None:
    stack = resolve_stack()
    sm = stack.state_machines[STATE_MACHINE_LOGICAL_ID]
    example = stack.side_effect_function()
    assert sm.substitutions[SIDE_EFFECT_SUBSTITUTION] == example.arn == stack.outputs[SIDE_EFFECT_SUBSTITUTION]
    assert example.logical_id in stack.functions


def test_a_given_function_is_wrapped_and_the_example_and_its_resources_do_not_exist() -> None:
    default = resolve_stack()
    stack = resolve_stack(parameter_overrides={SIDE_EFFECT_SUBSTITUTION: USER_ARN})
    sm = stack.state_machines[STATE_MACHINE_LOGICAL_ID]

    assert sm.substitutions[SIDE_EFFECT_SUBSTITUTION] == USER_ARN == stack.outputs[SIDE_EFFECT_SUBSTITUTION]
    example = default.side_effect_function()
    assert example.logical_id not in stack.functions
    # Every table the example's environment names (its own) goes with it; the idempotency table stays.
    own_tables = {t.logical_id for t in default.tables.values() if t.name in example.environment.values()}
    assert own_tables - {IDEMPOTENCY_TABLE_LOGICAL_ID}, "the example keeps a table of its own"
    assert set(stack.tables) == set(default.tables) - (own_tables - {IDEMPOTENCY_TABLE_LOGICAL_ID})
    # Its outputs go too: an output whose condition is false does not exist.
    assert set(stack.outputs) < set(default.outputs)
    with pytest.raises(TemplateError, match="no AWS::Serverless::Function of the template defines"):
        stack.side_effect_function()


def test_a_shared_table_is_used_instead_of_creating_one() -> None:
    stack = resolve_stack(parameter_overrides={IDEMPOTENCY_TABLE_SUBSTITUTION: "shared-records"})

    assert IDEMPOTENCY_TABLE_LOGICAL_ID not in stack.tables
    assert stack.state_machines[STATE_MACHINE_LOGICAL_ID].substitutions[IDEMPOTENCY_TABLE_SUBSTITUTION] == (
        "shared-records"
    )
    assert stack.side_effect_function().environment["IDEMPOTENCY_TABLE_NAME"] == "shared-records"


def test_a_function_arn_that_is_not_a_lambda_function_arn_is_rejected() -> None:
    with pytest.raises(TemplateError, match=rf"Parameters\.{SIDE_EFFECT_SUBSTITUTION}: .* does not match"):
        resolve_stack(parameter_overrides={SIDE_EFFECT_SUBSTITUTION: "my-function"})


CONDITIONS = """\
    Parameters:
      Mode: {Type: String, Default: a}
      Other: {Type: String, Default: x}
    Conditions:
      IsA: !Equals [!Ref Mode, a]
      NotA: !Not [!Condition IsA]
      Both: !And [!Condition IsA, !Equals [x, !Ref Other]]
      Either: !Or [!Condition NotA, !Equals [!Ref Other, y]]
    Resources:
      OnlyA:
        Type: AWS::DynamoDB::Table
        Condition: IsA
        Properties:
          KeySchema: [{AttributeName: k, KeyType: HASH}]
          AttributeDefinitions: [{AttributeName: k, AttributeType: S}]
      OnlyB:
        Type: AWS::DynamoDB::Table
        Condition: NotA
        Properties:
          KeySchema: [{AttributeName: !If [Both, k, kb], KeyType: HASH}]
          AttributeDefinitions:
            - {AttributeName: k, AttributeType: S}
            - !If [Either, {AttributeName: extra, AttributeType: S}, !Ref AWS::NoValue]
    Outputs:
      Table:
        Value: !If [IsA, !Ref OnlyA, !Ref OnlyB]
      OnlyWhenA:
        Condition: IsA
        Value: !Ref OnlyA
    """


@pytest.mark.parametrize(
    ("overrides", "tables", "outputs"),
    [
        ({}, {"OnlyA"}, {"Table": "s-OnlyA", "OnlyWhenA": "s-OnlyA"}),
        ({"Mode": "b"}, {"OnlyB"}, {"Table": "s-OnlyB"}),
    ],
)
def test_conditions_decide_which_resources_and_outputs_exist(
    tmp_path: Path, overrides: dict[str, str], tables: set[str], outputs: dict[str, str]
) -> None:
    stack = resolve_stack(write(tmp_path / "t.yaml", CONDITIONS), parameter_overrides=overrides, stack_name="s")

    assert set(stack.tables) == tables
    assert stack.outputs == outputs


def test_fn_if_evaluates_only_the_chosen_branch_and_no_value_removes_the_item(tmp_path: Path) -> None:
    path = write(tmp_path / "t.yaml", CONDITIONS)
    b = resolve_stack(path, parameter_overrides={"Mode": "b"}).tables["OnlyB"]
    # Both is false (Mode is b): the key is kb; Either is true (NotA): the extra attribute is there.
    assert b.partition_key == "kb" and [a["AttributeName"] for a in b.attribute_definitions] == ["k", "extra"]
    b_other = resolve_stack(path, parameter_overrides={"Mode": "b", "Other": "z"}).tables["OnlyB"]
    assert [a["AttributeName"] for a in b_other.attribute_definitions] == ["k", "extra"]


def test_a_reference_to_a_resource_whose_condition_is_false_is_named(tmp_path: Path) -> None:
    text = CONDITIONS.replace("Value: !If [IsA, !Ref OnlyA, !Ref OnlyB]", "Value: !Ref OnlyB")
    with pytest.raises(TemplateError, match=r"Outputs\.Table: !Ref OnlyB: the resource is not created .*NotA"):
        resolve_stack(write(tmp_path / "t.yaml", text))


def test_an_unknown_or_circular_condition_is_named(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match=r"no such condition 'Nope'"):
        resolve_stack(write(tmp_path / "a.yaml", CONDITIONS.replace("Condition: IsA\n", "Condition: Nope\n", 1)))
    circular = CONDITIONS.replace("IsA: !Equals [!Ref Mode, a]", "IsA: !Not [!Condition NotA]")
    with pytest.raises(TemplateError, match=r"Conditions\.\w+: refers to itself"):
        resolve_stack(write(tmp_path / "b.yaml", circular))


def nesting(tmp_path: Path, apps: dict[str, dict[str, str]], outputs: str = "") -> Path:
    """A parent template next to a child: one AWS::Serverless::Application per entry, with its Parameters."""
    child = write(
        tmp_path / "child" / "template.yaml",
        """\
        Parameters:
          Key: {Type: String, Default: k}
        Resources:
          Records:
            Type: AWS::DynamoDB::Table
            Properties:
              KeySchema: [{AttributeName: !Ref Key, KeyType: HASH}]
              AttributeDefinitions: [{AttributeName: !Ref Key, AttributeType: S}]
        Outputs:
          RecordsName: {Value: !Ref Records}
          RecordsArn: {Value: !GetAtt Records.Arn}
        """,
    )
    resources = "".join(
        f"  {name}:\n    Type: AWS::Serverless::Application\n    Properties:\n"
        f"      Location: {child.relative_to(tmp_path)}\n      Parameters: {params}\n"
        for name, params in apps.items()
    )
    return write(tmp_path / "template.yaml", f"Resources:\n{resources}{outputs}")


def test_a_nested_application_is_a_stack_of_its_own_with_the_parents_parameters(tmp_path: Path) -> None:
    outputs = "Outputs:\n  FirstRecords:\n    Value: !GetAtt First.Outputs.RecordsName\n"
    path = nesting(tmp_path, {"First": {}, "Second": {"Key": "other"}}, outputs)

    stack = resolve_stack(path, stack_name="app")

    first, second = stack.nested["First"], stack.nested["Second"]
    assert (first.name, second.name) == ("app-First", "app-Second")
    assert first.tables["Records"].name == "app-First-Records" != second.tables["Records"].name
    assert (first.tables["Records"].partition_key, second.tables["Records"].partition_key) == ("k", "other")
    assert stack.outputs == {"FirstRecords": "app-First-Records"}
    assert [path for path, _ in stack.stacks()] == ["", "First", "Second"]
    assert len(stack.all_tables()) == 2


def test_a_nested_applications_unknown_output_or_parameter_is_named(tmp_path: Path) -> None:
    outputs = "Outputs:\n  X:\n    Value: !GetAtt First.Outputs.Nope\n"
    with pytest.raises(TemplateError, match=r"!GetAtt First\.Outputs\.Nope: the nested stack has no output Nope"):
        resolve_stack(nesting(tmp_path, {"First": {}}, outputs))
    with pytest.raises(TemplateError, match=r"Resources\.First \(nested stack .*\): .*unknown parameter"):
        resolve_stack(nesting(tmp_path, {"First": {"Nope": "1"}}))


def test_a_nested_application_must_be_a_local_template_or_this_workflow(tmp_path: Path) -> None:
    path = write(
        tmp_path / "template.yaml",
        """\
        Resources:
          Remote:
            Type: AWS::Serverless::Application
            Properties:
              Location:
                ApplicationId: arn:aws:serverlessrepo:us-east-1:123456789012:applications/x
                SemanticVersion: 1.0.0
        """,
    )
    with pytest.raises(TemplateError, match=r"Resources\.Remote\.Location: application 'x' is not this workflow"):
        resolve_stack(path)


def test_the_workflow_template_nests_with_a_function_of_the_parent(tmp_path: Path) -> None:
    location = os.path.relpath(TEMPLATE_PATH, tmp_path / "app")  # a relative Location, as sam build needs
    write(tmp_path / "fn" / "app.py", "def handler(event, context):\n    return event\n")
    path = write(
        tmp_path / "app" / "template.yaml",
        f"""\
        Transform: AWS::Serverless-2016-10-31
        Resources:
          Mine:
            Type: AWS::Serverless::Function
            Properties: {{CodeUri: ../fn/, Handler: app.handler, Runtime: python3.12}}
          Workflow:
            Type: AWS::Serverless::Application
            Properties:
              Location: {location}
              Parameters:
                SideEffectFunctionArn: !GetAtt Mine.Arn
                WorkflowScope: mine
        """,
    )
    stack = resolve_stack(path, stack_name="user")

    assert stack.workflows().keys() == {"Workflow"}
    assert stack.side_effect_function().arn == stack.functions["Mine"].arn
    workflow = stack.workflow()
    assert workflow.parameters["WorkflowScope"] == "mine"
    assert stack.functions["Mine"].name == "user-Mine"
    assert all(f.name.startswith("user-Workflow-") for f in workflow.functions.values())


@pytest.mark.parametrize(
    "dependent",
    [
        "DependsOn: Topic",
        "Properties: {DisplayName: !GetAtt Topic.TopicName}",
        'Properties: {DisplayName: !Sub "after ${Topic}"}',
    ],
    ids=["DependsOn", "GetAtt", "Sub"],
)
def test_a_resource_naming_one_whose_condition_is_false_fails_the_template(tmp_path: Path, dependent: str) -> None:
    # CloudFormation refuses the whole template: "Template format error: Unresolved resource dependencies
    # [Topic] in the Resources block of the template" (reported on AWS: aws/serverless-application-model#832,
    # aws-solutions/media-insights-on-aws#145). A DependsOn used to be dropped silently here.
    path = write(
        tmp_path / "template.yaml",
        f"""\
        Parameters:
          Make: {{Type: String, Default: "false"}}
        Conditions:
          MakeTopic: !Equals [!Ref Make, "true"]
        Resources:
          Topic:
            Type: AWS::SNS::Topic
            Condition: MakeTopic
          Other:
            Type: AWS::SNS::Topic
            {dependent}
        """,
    )
    assert "Other" in resolve_stack(path, parameter_overrides={"Make": "true"}).resources
    with pytest.raises(TemplateError, match=r"Resources\.Other: unresolved resource dependencies \[Topic\]"):
        resolve_stack(path)
