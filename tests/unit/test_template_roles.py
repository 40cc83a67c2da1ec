"""The roles the real templates deploy, expanded by the SAM transform and resolved as the engine resolves the stack,
decided by the IAM evaluator: what the workflow's roles grant is read from template.yaml, never copied here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from idemflow.contract import IDEMPOTENCY_TABLE_LOGICAL_ID, STATE_MACHINE_LOGICAL_ID
from idemflow.engine.catalog import resource_types
from idemflow.engine.services.dynamodb.service import TABLE_ARN
from idemflow.engine.services.iam.evaluation import Evaluator
from idemflow.engine.services.sqs.service import Queue
from idemflow.engine.stack import WorkflowStack, resolve_stack
from idemflow.template import TemplateError, load_template
from idemflow.template.managed_policies import MANAGED_POLICIES
from idemflow.template.roles import Role, template_roles, transform
from tests.paths import PROJECT_ROOT, TEMPLATE_PATH

OUTBOX = PROJECT_ROOT / "examples" / "outbox" / "template.yaml"
DYNAMODB_WRITES = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")


def roles(path: Path = TEMPLATE_PATH, **overrides: str) -> dict[str, Role]:
    return template_roles(path, types=resource_types(), parameter_overrides=overrides)


def role_of(found: dict[str, Role], logical_id: str, path: str = "") -> Role:
    (role,) = [r for r in found.values() if r.path == path and logical_id in r.assumed_by]
    return role


def evaluator(role: Role) -> Evaluator:
    return Evaluator(role.arn, [(p.name, p.document) for p in role.policies])


def table_arn(stack: WorkflowStack, logical_id: str) -> str:
    return TABLE_ARN.format(region=stack.region, account=stack.account_id, name=stack.tables[logical_id].name)


@pytest.fixture(scope="module")
def project() -> tuple[WorkflowStack, dict[str, Role]]:
    return resolve_stack(TEMPLATE_PATH), roles()


def test_the_state_machines_role_allows_its_records_and_functions_on_the_deployed_arns(
    project: tuple[WorkflowStack, dict[str, Role]],
) -> None:
    stack, found = project
    role = role_of(found, STATE_MACHINE_LOGICAL_ID)
    assert role.services == ("states.amazonaws.com",)
    decide = evaluator(role).decide
    table = table_arn(stack, IDEMPOTENCY_TABLE_LOGICAL_ID)
    for action in DYNAMODB_WRITES:
        assert decide(action, table).allowed, action
    assert decide("lambda:InvokeFunction", stack.side_effect_arn()).allowed
    # The clock is granted by SAM's LambdaInvokePolicy template, expanded by the transform.
    assert decide("lambda:InvokeFunction", stack.functions["ClockFunction"].arn).allowed
    # And no more: a Scan, another table, a function it does not name.
    assert not decide("dynamodb:Scan", table).allowed
    assert not decide("dynamodb:PutItem", table_arn(stack, "LedgerTable")).allowed
    assert not decide("lambda:InvokeFunction", stack.functions["ClockFunction"].arn.replace("Clock", "Other")).allowed


def test_a_functions_role_carries_the_managed_policies_sam_attaches(
    project: tuple[WorkflowStack, dict[str, Role]],
) -> None:
    stack, found = project
    role = role_of(found, "ChargeFunction")
    managed = [p.name for p in role.policies if p.managed]
    assert managed == [
        "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
        "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
    ]
    decide = evaluator(role).decide
    group = f"arn:aws:logs:{stack.region}:{stack.account_id}:log-group:/aws/lambda/x"
    assert decide("logs:PutLogEvents", group).allowed
    assert decide("xray:PutTraceSegments", "*").allowed
    assert decide("dynamodb:PutItem", table_arn(stack, "LedgerTable")).allowed
    assert not decide("dynamodb:UpdateItem", table_arn(stack, "LedgerTable")).allowed


def test_a_removed_statement_denies_its_call_with_awss_message(tmp_path: Path) -> None:
    template = load_template(TEMPLATE_PATH)
    policies = template["Resources"][STATE_MACHINE_LOGICAL_ID]["Properties"]["Policies"]
    statements = next(p["Statement"] for p in policies if "Statement" in p)
    (records,) = [s for s in statements if "dynamodb:PutItem" in s["Action"]]
    statements.remove(records)
    copy = tmp_path / "template.yaml"
    copy.write_text(yaml.safe_dump(template, sort_keys=False))
    stack = resolve_stack(TEMPLATE_PATH)
    table = table_arn(stack, IDEMPOTENCY_TABLE_LOGICAL_ID)

    role = role_of(roles(copy), STATE_MACHINE_LOGICAL_ID)
    decision = evaluator(role).decide("dynamodb:PutItem", table)

    assert not decision.allowed and decision.statement is None
    # IAM User Guide, "Troubleshoot access denied error messages"
    # (https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_access-denied.html):
    # "because no <type> policy allows the <action> action".
    assert decision.message == (
        f"User: arn:aws:sts::{stack.account_id}:assumed-role/{role.name}/idemflow is not authorized to perform: "
        f"dynamodb:PutItem on resource: {table} because no identity-based policy allows the dynamodb:PutItem action"
    )
    # The same call with the real template is allowed: the statement removed was the one granting it.
    assert evaluator(role_of(roles(), STATE_MACHINE_LOGICAL_ID)).decide("dynamodb:PutItem", table).allowed


def test_a_role_whose_condition_is_false_is_not_created_and_the_doors_roles_follow_their_parameters() -> None:
    assert "QueuePipeRole" not in roles()
    stack = resolve_stack(TEMPLATE_PATH, parameter_overrides={"QueueFrontDoor": "true"})
    role = roles(QueueFrontDoor="true")["QueuePipeRole"]
    assert role.assumed_by == ("QueuePipe",) and role.services == ("pipes.amazonaws.com",)
    queue = stack.models(Queue)["RequestQueue"].arn
    decide = evaluator(role).decide
    assert decide("sqs:ReceiveMessage", queue).allowed
    assert decide("states:StartExecution", stack.state_machines["IntakeStateMachine"].arn).allowed
    assert not decide("states:StartExecution", stack.state_machines[STATE_MACHINE_LOGICAL_ID].arn).allowed


def test_the_intakes_sam_policy_templates_are_expanded() -> None:
    # StepFunctionsExecutionPolicy and SQSSendMessagePolicy, as the transform writes them.
    stack = resolve_stack(TEMPLATE_PATH, parameter_overrides={"QueueFrontDoor": "true"})
    decide = evaluator(role_of(roles(QueueFrontDoor="true"), "IntakeStateMachine")).decide
    assert decide("states:StartExecution", stack.state_machines[STATE_MACHINE_LOGICAL_ID].arn).allowed
    assert decide("sqs:SendMessage", stack.models(Queue)["DoorDeadLetterQueue"].arn).allowed
    assert not decide("sqs:SendMessage", stack.models(Queue)["RequestQueue"].arn).allowed


def test_the_outbox_examples_nested_workflow_may_invoke_the_examples_function() -> None:
    stack = resolve_stack(OUTBOX)
    found = roles(OUTBOX)
    (path,) = stack.workflows()
    role = role_of(found, STATE_MACHINE_LOGICAL_ID, path)
    assert role.name.startswith(f"{stack.name}-{path}-")
    decide = evaluator(role).decide
    assert decide("lambda:InvokeFunction", stack.side_effect_arn()).allowed
    nested = stack.workflow()
    for action in DYNAMODB_WRITES:
        assert decide(action, table_arn(nested, IDEMPOTENCY_TABLE_LOGICAL_ID)).allowed, action
    # The example's own function writes its outbox, and only that.
    notify = evaluator(role_of(found, "NotifyFunction")).decide
    assert notify("dynamodb:PutItem", table_arn(stack, "OutboxTable")).allowed
    assert not notify("dynamodb:PutItem", table_arn(nested, IDEMPOTENCY_TABLE_LOGICAL_ID)).allowed


ALL_DOORS = {
    "HttpFrontDoor": "true",
    "QueueFrontDoor": "true",
    "TopicFrontDoor": "true",
    "EventFrontDoor": "true",
    "KinesisStreamArn": "arn:aws:kinesis:us-east-1:123456789012:stream/s",
    "DynamoDBStreamArn": "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-01-01T00:00:00.000",
}


@pytest.mark.parametrize(("path", "overrides"), [(TEMPLATE_PATH, ALL_DOORS), (OUTBOX, {})], ids=["project", "outbox"])
def test_every_managed_policy_the_templates_attach_is_shipped_as_aws_publishes_it(
    path: Path, overrides: dict[str, str]
) -> None:
    from moto.iam.aws_managed_policies import aws_managed_policies_data

    attached = {p.name for role in roles(path, **overrides).values() for p in role.policies if p.managed}
    assert attached == set(MANAGED_POLICIES)
    published = json.loads(aws_managed_policies_data)
    for arn, document in MANAGED_POLICIES.items():
        assert document == published[arn.rsplit("/", 1)[1]]["Document"], arn


def test_every_role_is_assumed_by_what_passes_it() -> None:
    found = roles(**ALL_DOORS)
    assert {lid: r.assumed_by for lid, r in found.items()} == {
        "HttpApiRole": ("HttpRequestsPost", "HttpRequestGet"),
        "QueuePipeRole": ("QueuePipe",),
        "StreamPipeRole": ("StreamPipe",),
        "TableStreamPipeRole": ("TableStreamPipe",),
        "EventRuleRole": ("EventRule",),
        "ChargeFunctionRole": ("ChargeFunction",),
        "ClockFunctionRole": ("ClockFunction",),
        "IdempotentStateMachineRole": (STATE_MACHINE_LOGICAL_ID,),
        "IntakeStateMachineRole": ("IntakeStateMachine",),
    }


def test_the_transform_gets_s3_stand_ins_for_local_paths_and_keeps_them() -> None:
    template = load_template(TEMPLATE_PATH)
    transformed = transform(template, "us-east-1")
    written = template["Resources"][STATE_MACHINE_LOGICAL_ID]["Properties"]["DefinitionUri"]
    assert written in transformed.artifacts.values()
    (stand_in,) = [k for k, v in transformed.artifacts.items() if v == written]
    made = transformed.template["Resources"][STATE_MACHINE_LOGICAL_ID]["Properties"]
    assert made["DefinitionS3Location"]["Key"] in stand_in
    # The template given is not changed.
    assert template["Resources"][STATE_MACHINE_LOGICAL_ID]["Properties"]["DefinitionUri"] == written


def test_a_managed_policy_the_engine_does_not_ship_is_refused_by_name(tmp_path: Path) -> None:
    template: dict[str, Any] = {
        "Transform": "AWS::Serverless-2016-10-31",
        "Resources": {
            "Fn": {
                "Type": "AWS::Serverless::Function",
                "Properties": {
                    "CodeUri": "fn/",
                    "Handler": "app.handler",
                    "Runtime": "python3.12",
                    "Policies": ["arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"],
                },
            }
        },
    }
    path = tmp_path / "template.yaml"
    path.write_text(yaml.safe_dump(template))
    with pytest.raises(TemplateError, match=r"Resources\.FnRole\.ManagedPolicyArns: .*AmazonS3ReadOnlyAccess"):
        roles(path)


STATE_MACHINE_SIDE_EFFECT = "arn:aws:states:us-east-1:123456789012:stateMachine:charge"
FUNCTION_SIDE_EFFECT = "arn:aws:lambda:us-east-1:123456789012:function:charge"


def test_a_state_machine_side_effects_role_may_start_it_watch_its_executions_and_invoke_no_function() -> None:
    # "IAM policies for Step Functions", Synchronous (https://docs.aws.amazon.com/step-functions/latest/dg/stepfunctions-iam.html).
    role = role_of(roles(SideEffectStateMachineArn=STATE_MACHINE_SIDE_EFFECT), STATE_MACHINE_LOGICAL_ID)
    decide = evaluator(role).decide
    execution = "arn:aws:states:us-east-1:123456789012:execution:charge:some-token-0"
    rule = "arn:aws:events:us-east-1:123456789012:rule/StepFunctionsGetEventsForStepFunctionsExecutionRule"
    assert decide("states:StartExecution", STATE_MACHINE_SIDE_EFFECT).allowed
    assert not decide("states:StartExecution", STATE_MACHINE_SIDE_EFFECT + "-other").allowed
    assert decide("states:DescribeExecution", execution).allowed and decide("states:StopExecution", execution).allowed
    assert not decide("states:DescribeExecution", execution.replace(":charge:", ":other:")).allowed
    assert all(decide(a, rule).allowed for a in ("events:PutTargets", "events:PutRule", "events:DescribeRule"))
    assert not decide("lambda:InvokeFunction", "arn:aws:lambda:us-east-1:123456789012:function:none").allowed
    # The function kind's role starts no state machine.
    function_role = role_of(roles(SideEffectFunctionArn=FUNCTION_SIDE_EFFECT), STATE_MACHINE_LOGICAL_ID)
    assert not evaluator(function_role).decide("states:StartExecution", STATE_MACHINE_SIDE_EFFECT).allowed
    assert evaluator(function_role).decide("lambda:InvokeFunction", FUNCTION_SIDE_EFFECT).allowed


def test_a_transform_kept_on_disk_serves_a_new_process_without_the_translator(tmp_path: Path) -> None:
    # Each process that starts an engine would import the translator (some 0.7 s of CPU) for the same templates.
    env = {**os.environ, "IDEMFLOW_CACHE_DIR": str(tmp_path / "cache")}
    script = (
        "import json, sys; from idemflow.template import load_template; from idemflow.template.roles import transform;"
        f"made = transform(load_template(__import__('pathlib').Path({str(OUTBOX)!r})), 'eu-west-1');"
        "print(json.dumps([made.template, made.artifacts, 'samtranslator' in sys.modules]))"
    )

    def run() -> list[Any]:
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        return list(json.loads(out.stdout))

    first, second = run(), run()
    assert first[2] is True and second[2] is False  # the second process read the first one's transform
    assert second[:2] == first[:2]
    (kept,) = (tmp_path / "cache" / "sam-transforms").glob("*/*.json")
    kept.write_text('{"template": ')  # cut short: transformed again, and kept whole again
    third = run()
    assert third[2] is True and third[:2] == first[:2]
    assert json.loads(kept.read_text())["artifacts"] == first[1]


def test_nothing_is_kept_when_the_cache_folder_is_set_empty(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("IDEMFLOW_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    transform({**load_template(OUTBOX), "Description": f"unique {tmp_path}"}, "eu-west-1")
    assert list(tmp_path.rglob("*.json")) == []
