"""The template resolver against CloudFormation's own rules, one test per finding of review 9 (each cites the
AWS page that states the rule): YAML scalars as CloudFormation strings, resolved function and table
properties, cycles, physical names, Fn::Sub escapes, AWS::NoValue outputs, parameter constraints, and
conditions evaluated up front."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from idemflow.template import resolve_stack

pytestmark = pytest.mark.unit

TABLE = """\
Type: AWS::DynamoDB::Table
Properties:
  BillingMode: PAY_PER_REQUEST
  KeySchema: [{AttributeName: k, KeyType: HASH}]
  AttributeDefinitions: [{AttributeName: k, AttributeType: S}]
"""


def write(path: Path, text: str) -> Path:
    """A template from indented text; a line ``%TABLE%`` is a minimal table at that indentation."""
    lines = textwrap.dedent(text).splitlines(keepends=True)
    out = [
        textwrap.indent(TABLE, line[: len(line) - len(line.lstrip())]) if line.strip() == "%TABLE%" else line
        for line in lines
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(out))
    return path


# -- F1: YAML booleans and numbers are CloudFormation strings ---------------------------------------------
# Parameter values, allowed values included, are strings in CloudFormation ("AllowedValues ... Type: Array
# of strings", https://docs.aws.amazon.com/goto/WebAPI/cloudformation-2010-05-15/ParameterConstraints), and
# an unquoted YAML true arrives as "true", never Python's "True".


def test_yaml_booleans_and_numbers_become_cloudformation_strings(tmp_path: Path) -> None:
    write(
        tmp_path / "child.yaml",
        """\
        Parameters:
          Flag: {Type: String}
        Conditions:
          FlagOn: !Equals [!Ref Flag, "true"]
        Resources:
          ChildTable:
            Condition: FlagOn
            %TABLE%
        """,
    )
    path = write(
        tmp_path / "t.yaml",
        """\
        Parameters:
          Enabled: {Type: String, Default: true, AllowedValues: [true, false]}
          Size: {Type: String, Default: 30}
        Conditions:
          IsOn: !Equals [!Ref Enabled, "true"]
          LiteralOn: !Equals [true, "true"]
        Resources:
          T:
            Condition: IsOn
            %TABLE%
          App:
            Type: AWS::Serverless::Application
            Properties: {Location: child.yaml, Parameters: {Flag: true}}
        Outputs:
          Subbed: {Value: !Sub ["${B}-${Size}", {B: false}]}
          Literal: {Value: !If [LiteralOn, yes, no]}
        """,
    )
    stack = resolve_stack(path, stack_name="s")

    assert stack.parameters == {"Enabled": "true", "Size": "30"}
    assert set(stack.tables) == {"T"}, "IsOn compares 'true' with 'true'"
    assert stack.nested["App"].parameters == {"Flag": "true"} and set(stack.nested["App"].tables) == {"ChildTable"}
    assert stack.outputs == {"Subbed": "false-30", "Literal": "true"}
    # The value `sam deploy --parameter-overrides Enabled=false` passes is one of the allowed values.
    assert resolve_stack(path, parameter_overrides={"Enabled": "false"}).tables == {}
