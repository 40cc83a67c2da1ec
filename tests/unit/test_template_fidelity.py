"""The template resolver against CloudFormation's own rules, one section per rule (each cites the AWS page
that states it): YAML scalars as CloudFormation strings, resolved function and table
properties, cycles, physical names, Fn::Sub escapes, AWS::NoValue outputs, parameter constraints, and
conditions evaluated up front."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from idemflow.engine.stack import resolve_stack
from idemflow.template import TemplateError
from tests.paths import TEMPLATE_PATH

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


# -- YAML booleans and numbers are CloudFormation strings -------------------------------------------------
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


# -- function and table properties are resolved before use ------------------------------------------------
# The SAM Globals page states that a function inherits Timeout,
# Runtime, Environment and the rest from Globals and adds its own environment variables to the inherited
# ones (https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-specification-template-anatomy-globals.html).
# Every property is then a template value like any other: a Ref, an Fn::If, or AWS::NoValue.

FUNCTIONS = """\
    Transform: AWS::Serverless-2016-10-31
    Parameters:
      FnTimeout: {Type: Number, Default: 30}
      Memory: {Type: Number, Default: 256}
      Debug: {Type: String, Default: "yes"}
    Conditions:
      IsDebug: !Equals [!Ref Debug, "yes"]
    Globals:
      Function:
        Runtime: !If [IsDebug, python3.13, python3.12]
        MemorySize: !Ref Memory
        Environment: {Variables: {FROM_GLOBALS: !Ref Debug}}
    Resources:
      F:
        Type: AWS::Serverless::Function
        Properties:
          CodeUri: !If [IsDebug, fn/, !Ref AWS::NoValue]
          Handler: !Sub "app.${Debug}"
          Timeout: !Ref FnTimeout
          Environment: {Variables: {LEVEL: !If [IsDebug, DEBUG, INFO]}}
      Replaced:
        Type: AWS::Serverless::Function
        Properties:
          CodeUri: fn/
          Handler: app.h
          Environment: !If [IsDebug, {Variables: {LOG_LEVEL: DEBUG}}, !Ref AWS::NoValue]
      T:
        Type: AWS::DynamoDB::Table
        Properties:
          BillingMode: !If [IsDebug, PAY_PER_REQUEST, PROVISIONED]
          KeySchema: [{AttributeName: k, KeyType: HASH}]
          AttributeDefinitions: [{AttributeName: k, AttributeType: S}]
          TimeToLiveSpecification: !If [IsDebug, {AttributeName: ttl, Enabled: !Equals [a, a]}, !Ref AWS::NoValue]
    """


def test_function_and_table_properties_are_resolved_globals_included(tmp_path: Path) -> None:
    (tmp_path / "fn").mkdir()
    stack = resolve_stack(write(tmp_path / "t.yaml", FUNCTIONS))

    f = stack.functions["F"]
    assert (f.timeout, f.memory_mb, f.runtime, f.handler) == (30, 256, "python3.13", "app.yes")
    assert f.code_dir == tmp_path / "fn"
    assert f.environment == {"FROM_GLOBALS": "yes", "LEVEL": "DEBUG"}
    # An intrinsic function stands for one value: SAM does not merge it with Globals, it replaces them.
    assert stack.functions["Replaced"].environment == {"LOG_LEVEL": "DEBUG"}
    assert (stack.tables["T"].billing_mode, stack.tables["T"].ttl_attribute) == ("PAY_PER_REQUEST", "ttl")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("Timeout: !Ref FnTimeout", "Timeout: !Ref Debug", r"Resources\.F\.Timeout: expected an integer, got 'yes'"),
        ("MemorySize: !Ref Memory", "MemorySize: [1]", r"Resources\.F\.MemorySize: expected a string, number"),
        (
            'Handler: !Sub "app.${Debug}"',
            "Handler: !If [IsDebug, !Ref AWS::NoValue, a]",
            r"F: missing property Handler",
        ),
        ("Enabled: !Equals [a, a]", "Enabled: maybe", r"\.T\.TimeToLiveSpecification\.Enabled: expected true or false"),
        (
            "Variables: {LEVEL: !If [IsDebug, DEBUG, INFO]}",
            "Variables: !Ref Debug",
            r"F\.Environment\.Variables: expected",
        ),
    ],
    ids=["timeout", "memory", "missing-handler", "ttl-enabled", "variables"],
)
def test_a_property_that_cannot_be_converted_names_the_resource_and_property(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    (tmp_path / "fn").mkdir()
    assert old in FUNCTIONS
    with pytest.raises(TemplateError, match=message):
        resolve_stack(write(tmp_path / "t.yaml", FUNCTIONS.replace(old, new, 1)))


# -- cycles between nested applications -------------------------------------------------------------------
# CloudFormation refuses a template whose resources depend on each other in a circle ("Circular dependency
# between resources", https://repost.aws/knowledge-center/cloudformation-circular-dependency-sam); the
# resolver must say so instead of recursing until a RecursionError.

CHILD_WITH_OUTPUT = """\
    Parameters:
      Target: {Type: String, Default: x}
    Resources:
      T:
        %TABLE%
    Outputs:
      TableName: {Value: !Ref T}
    """


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        (
            "App: {Type: AWS::Serverless::Application, Properties: {Location: child.yaml, Parameters: "
            "{Target: !GetAtt App.Outputs.TableName}}}",
            r"Resources\.App: circular dependency between resources: App -> App",
        ),
        (
            "F: {Type: AWS::DynamoDB::Table, DependsOn: App, Properties: {TableName: !GetAtt App.Outputs.TableName}}\n"
            "  App: {Type: AWS::Serverless::Application, Properties: {Location: child.yaml, Parameters: "
            '{Target: !Sub "${F.Arn}"}}}',
            r"circular dependency between resources: (F -> App -> F|App -> F -> App)",
        ),
    ],
    ids=["reads-its-own-output", "through-another-resource"],
)
def test_an_application_that_depends_on_itself_is_a_circular_dependency(
    tmp_path: Path, resources: str, message: str
) -> None:
    write(tmp_path / "child.yaml", CHILD_WITH_OUTPUT)
    with pytest.raises(TemplateError, match=message):
        resolve_stack(write(tmp_path / "t.yaml", f"Resources:\n  {resources}\n"))


def test_a_template_that_nests_itself_is_a_circular_dependency(tmp_path: Path) -> None:
    app = "Resources:\n  App: {{Type: AWS::Serverless::Application, Properties: {{Location: {0}}}}}\n"
    write(tmp_path / "self.yaml", app.format("./self.yaml"))
    with pytest.raises(TemplateError, match=r"Resources\.App\.Location: circular dependency: the template nests"):
        resolve_stack(tmp_path / "self.yaml")
    write(tmp_path / "a.yaml", app.format("sub/b.yaml"))
    write(tmp_path / "sub" / "b.yaml", app.format("../a.yaml"))
    with pytest.raises(TemplateError, match=r"nested stack sub/b\.yaml\): .*circular dependency.*a\.yaml -> .*b\.yaml"):
        resolve_stack(tmp_path / "a.yaml")


# -- explicit physical names ------------------------------------------------------------------------------
# CloudFormation uses the name a template gives (FunctionName, TableName, ...) as the physical name, and makes
# one up (<stack>-<LogicalId>-<random>) only when there is none ("CloudFormation resource custom naming",
# https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-name.html).


def test_an_explicit_physical_name_is_the_resources_name(tmp_path: Path) -> None:
    (tmp_path / "fn").mkdir()
    (tmp_path / "sm.asl.json").write_text('{"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}')
    location = os.path.relpath(TEMPLATE_PATH, tmp_path)
    path = write(
        tmp_path / "t.yaml",
        f"""\
        Transform: AWS::Serverless-2016-10-31
        Parameters:
          Prefix: {{Type: String, Default: shop}}
        Resources:
          Send:
            Type: AWS::Serverless::Function
            Properties: {{CodeUri: fn/, Handler: app.h, FunctionName: send-email}}
          Outbox:
            Type: AWS::DynamoDB::Table
            Properties:
              TableName: !Sub "${{Prefix}}-outbox"
              KeySchema: [{{AttributeName: k, KeyType: HASH}}]
              AttributeDefinitions: [{{AttributeName: k, AttributeType: S}}]
          Flow:
            Type: AWS::Serverless::StateMachine
            Properties: {{DefinitionUri: sm.asl.json, Name: !Ref Outbox}}
          Unnamed:
            Type: AWS::Serverless::Function
            Properties: {{CodeUri: fn/, Handler: app.h, FunctionName: !Ref AWS::NoValue}}
          Workflow:
            Type: AWS::Serverless::Application
            Properties:
              Location: {location}
              Parameters:
                SideEffectFunctionArn: !Sub "arn:aws:lambda:${{AWS::Region}}:${{AWS::AccountId}}:function:send-email"
        Outputs:
          TableRef: {{Value: !Ref Outbox}}
          FunctionRef: {{Value: !Ref Send}}
        """,
    )
    stack = resolve_stack(path, stack_name="s")

    assert stack.outputs == {"TableRef": "shop-outbox", "FunctionRef": "send-email"}
    assert stack.functions["Send"].arn == "arn:aws:lambda:us-east-1:123456789012:function:send-email"
    assert stack.state_machines["Flow"].arn.endswith(":stateMachine:shop-outbox")
    assert stack.functions["Unnamed"].name == "s-Unnamed", "without a name, <stack>-<LogicalId>"
    assert stack.side_effect_function() == stack.functions["Send"]


# -- the Fn::Sub escape ${!Literal} -----------------------------------------------------------------------
# "To write a dollar sign and curly braces (${}) literally, add an exclamation point (!) after the open curly
# brace, such as ${!Literal}. CloudFormation resolves this text as ${Literal}" (Fn::Sub,
# https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/intrinsic-function-reference-sub.html).


def test_sub_turns_the_escape_into_a_literal_placeholder(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.yaml",
        """\
        Resources:
          T:
            %TABLE%
        Outputs:
          Lit: {Value: !Sub "${!Literal}-${AWS::Region}-${!T.Arn}"}
          WithMap: {Value: !Sub ["${!X}${X}", {X: x}]}
        """,
    )
    assert resolve_stack(path).outputs == {"Lit": "${Literal}-us-east-1-${T.Arn}", "WithMap": "${X}x"}


# -- Fn::Split and Fn::Select ------------------------------------------------------------------------------
# Fn::Split cuts a string at each delimiter; Fn::Select picks an item by its index from 0, and an index out of
# the list is an error (AWS CloudFormation User Guide, "Fn::Split" and "Fn::Select":
# https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/intrinsic-function-reference-split.html,
# .../intrinsic-function-reference-select.html). The workflow's role names a state machine's executions by the
# parts of its ARN.


def test_split_and_select_pick_a_part_of_an_arn(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.yaml",
        """\
        Parameters:
          Arn: {Type: String, Default: "arn:aws:states:eu-west-1:123456789012:stateMachine:charge:live"}
        Resources:
          T:
            %TABLE%
        Outputs:
          Name: {Value: !Select [6, !Split [":", !Ref Arn]]}
        """,
    )
    assert resolve_stack(path).outputs == {"Name": "charge"}
    with pytest.raises(TemplateError, match=r"Outputs.Name: Fn::Select index 6 is not in the list"):
        resolve_stack(path, parameter_overrides={"Arn": "arn:aws:states:eu-west-1"})


# -- an output that is AWS::NoValue -----------------------------------------------------------------------
# AWS::NoValue "removes the corresponding resource property when specified as a
# return value in the Fn::If intrinsic function" (pseudo parameters reference,
# https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/pseudo-parameter-reference.html): an output
# that resolves to it is left out, never the repr of a Python object.


def test_an_output_that_resolves_to_no_value_is_left_out(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.yaml",
        """\
        Conditions:
          Never: !Equals [a, b]
        Resources:
          T:
            %TABLE%
        Outputs:
          Maybe: {Value: !If [Never, !Ref T, !Ref AWS::NoValue]}
          Always: {Value: !Ref T}
        """,
    )
    assert resolve_stack(path, stack_name="s").outputs == {"Always": "s-T"}


# -- MinLength and MaxLength ------------------------------------------------------------------------------
# MinLength and MaxLength (cfn-lint rule E2015) bound the number of characters of a
# String parameter (Parameters section,
# https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/parameters-section-structure.html).


@pytest.mark.parametrize(
    ("value", "message"),
    [("", r"Parameters\.Ttl: '' is shorter than MinLength 1"), ("on", r"'on' is longer than MaxLength 1")],
)
def test_string_parameters_are_held_to_min_and_max_length(tmp_path: Path, value: str, message: str) -> None:
    path = write(
        tmp_path / "t.yaml",
        """\
        Parameters:
          Ttl: {Type: String, Default: "y", MinLength: 1, MaxLength: 1}
        Resources:
          T:
            %TABLE%
        """,
    )
    assert resolve_stack(path).parameters == {"Ttl": "y"}
    with pytest.raises(TemplateError, match=message):
        resolve_stack(path, parameter_overrides={"Ttl": value})


# -- CommaDelimitedList parameters ------------------------------------------------------------------------
# "You can't pass values of type CommaDelimitedList to a nested stack": a list must be joined with Fn::Join
# (https://repost.aws/knowledge-center/cloudformation-parameters-nested-stacks); and a list parameter's
# AllowedValues are those of each item, as cfn-lint checks them (E2015).


def test_a_comma_delimited_lists_items_are_checked_and_a_list_is_no_nested_parameter(tmp_path: Path) -> None:
    write(
        tmp_path / "child.yaml",
        """\
        Parameters:
          Names: {Type: CommaDelimitedList, Default: "a,b", AllowedValues: [a, b, c]}
        Resources:
          T:
            %TABLE%
        """,
    )
    app = "Resources:\n  App: {{Type: AWS::Serverless::Application, Properties: {{Location: child.yaml{0}}}}}\n"
    assert resolve_stack(write(tmp_path / "t.yaml", app.format(""))).nested["App"].parameters == {"Names": "a,b"}
    assert resolve_stack(tmp_path / "child.yaml", parameter_overrides={"Names": "c, a"}).parameters == {"Names": "c, a"}
    with pytest.raises(TemplateError, match=r"Parameters\.Names: 'z' is not one of"):
        resolve_stack(tmp_path / "child.yaml", parameter_overrides={"Names": "a,z"})
    listed = write(tmp_path / "t.yaml", app.format(", Parameters: {Names: [a, c]}"))
    with pytest.raises(TemplateError, match=r"Resources\.App\.Parameters\.Names: .* is a string.*Fn::Join"):
        resolve_stack(listed)


# -- every condition is evaluated up front, on parameters only --------------------------------------------
# A condition may refer to other conditions, parameters or mappings, and CloudFormation evaluates all of them
# before it creates resources ("Conditions" syntax,
# https://docs.amazonaws.cn/en_us/AWSCloudFormation/latest/UserGuide/conditions-section-structure.md): a
# condition that names a resource is an error wherever it is used, and so is an unused broken one.


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("!Equals [!Ref T, s-T]", r"Conditions\.C\[0\]: !Ref T: no such parameter \(a condition may refer only"),
        ('!Equals [!Sub "${T}", s-T]', r"Conditions\.C\[0\]: !Ref T: no such parameter"),
        ("!Equals [!GetAtt T.Arn, x]", r"Conditions\.C\[0\]: !GetAtt T\.Arn: a condition may not refer to a resource"),
        ("!Equals [!Ref Nope, x]", r"Conditions\.C\[0\]: !Ref Nope: no such parameter"),
    ],
    ids=["ref-resource", "sub-resource", "getatt-resource", "undeclared"],
)
@pytest.mark.parametrize("used", [True, False], ids=["used-in-fn-if", "unused"])
def test_a_condition_that_refers_to_a_resource_or_nothing_is_refused(
    tmp_path: Path, condition: str, message: str, used: bool
) -> None:
    key = "!If [C, a, b]" if used else "k"
    path = write(
        tmp_path / "t.yaml",
        f"""\
        Parameters:
          P: {{Type: String, Default: x}}
        Conditions:
          C: {condition}
          Fine: !Equals [!Sub "${{P}}-${{AWS::Region}}", x-us-east-1]
        Resources:
          T:
            Type: AWS::DynamoDB::Table
            Properties:
              KeySchema: [{{AttributeName: {key}, KeyType: HASH}}]
              AttributeDefinitions: [{{AttributeName: k, AttributeType: S}}]
        """,
    )
    with pytest.raises(TemplateError, match=message):
        resolve_stack(path, stack_name="s")
    fine = path.read_text().replace(f"C: {condition}", "C: !Equals [!Ref P, x]")
    assert resolve_stack(write(tmp_path / "ok.yaml", fine)).tables["T"].partition_key == ("a" if used else "k")
