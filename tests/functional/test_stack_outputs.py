"""The engine answers CloudFormation's DescribeStacks for the stacks it deployed, so the operator commands
take ``--stack-name`` against ``idemflow serve`` as against AWS: ``start`` reads StateMachineArn, ``record``
and ``release`` read IdempotencyTableName and WorkflowScope, ``history --key`` finds the key's newest
execution (ListExecutions lists "the most recent execution first": Step Functions API Reference,
ListExecutions)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator

import boto3
import pytest
from botocore.exceptions import ClientError

from idemflow import cli
from idemflow.engine import Engine
from tests.charge.side_effect import payment

pytestmark = pytest.mark.functional

SCOPE = "shop"  # not the template's default: record must take the stack's


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(wait_time_scale=0, parameter_overrides={"WorkflowScope": SCOPE}) as engine:
        yield engine


def cfn(engine: Engine) -> object:
    return boto3.client(
        "cloudformation",
        endpoint_url=engine.endpoint_url,
        region_name=engine.region,
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


def test_describe_stacks_answers_the_deployed_stacks_outputs_and_parameters(engine: Engine) -> None:
    stack = engine.workflow.stack
    (described,) = cfn(engine).describe_stacks(StackName=stack.name)["Stacks"]  # type: ignore[attr-defined]

    assert described["StackStatus"] == "CREATE_COMPLETE"
    assert {o["OutputKey"]: o["OutputValue"] for o in described["Outputs"]} == stack.outputs
    assert {o["OutputKey"]: o["OutputValue"] for o in described["Outputs"]}["WorkflowScope"] == SCOPE
    assert {p["ParameterKey"]: p["ParameterValue"] for p in described["Parameters"]}["WorkflowScope"] == SCOPE
    assert re.fullmatch(
        rf"arn:aws:cloudformation:{engine.region}:\d{{12}}:stack/{stack.name}/[0-9a-f-]{{36}}", described["StackId"]
    )


def test_a_stack_that_does_not_exist_and_another_action_are_refused_by_name(engine: Engine) -> None:
    with pytest.raises(ClientError) as missing:
        cfn(engine).describe_stacks(StackName="no-such-stack")  # type: ignore[attr-defined]
    assert missing.value.response["Error"]["Code"] == "ValidationError"
    assert missing.value.response["Error"]["Message"] == "Stack with id no-such-stack does not exist"
    with pytest.raises(ClientError) as other:
        cfn(engine).list_stacks()  # type: ignore[attr-defined]
    assert (
        "serves DescribeStacks, ListStackResources, DescribeStackResources only"
        in (other.value.response["Error"]["Message"])
    )


def test_start_record_and_history_by_stack_name(engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    key = f"stack-{uuid.uuid4()}"
    where = ["--endpoint-url", engine.endpoint_url, "--stack-name", engine.workflow.stack.name, "--key", key]

    assert cli.main(["start", *where, "--wait"]) == 0
    assert cli.main(["start", *where, "--wait", "--fresh"]) == 0  # a second execution, replayed
    started = re.findall(r"arn:\s+(\S+)", capsys.readouterr().out)
    assert len(started) == 2

    assert cli.main(["record", *where]) == 0
    printed = capsys.readouterr().out
    assert f"({SCOPE}#" in printed and "COMPLETED" in printed  # the stack's scope, not the template default

    assert cli.main(["history", *where]) == 0
    assert capsys.readouterr().out.startswith(f"{started[1]}: ")  # the newest execution of the key

    assert cli.main(["history", *where[:4], "--key", f"never-{key}"]) == 1
    assert "no execution found for key" in capsys.readouterr().err


def test_history_finds_a_keys_execution_whichever_client_started_it(
    engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    # An execution started as aws stepfunctions start-execution starts it: its own name, the key in its input.
    key = f"cli-{uuid.uuid4()}"
    started = engine.http_client("stepfunctions").start_execution(
        stateMachineArn=engine.workflow.state_machine_arn,
        name=f"by-hand-{uuid.uuid4().hex[:8]}",
        input=json.dumps({"idempotencyKey": key, "payload": payment()}),
    )["executionArn"]
    assert engine.wait(started).status == "SUCCEEDED"
    by_stack = ["--endpoint-url", engine.endpoint_url, "--stack-name", engine.workflow.stack.name, "--key", key]
    table = ["--endpoint-url", engine.endpoint_url, "--table", engine.workflow.idempotency_table, "--scope", SCOPE]

    assert cli.main(["history", *by_stack]) == 0  # found by its input
    assert capsys.readouterr().out.startswith(f"{started}: ")
    # As the runbook has it against serve: the table alone; the record's owner names the state machine.
    assert cli.main(["history", *table, "--key", key]) == 0
    assert capsys.readouterr().out.startswith(f"{started}: ")
    # Beyond the executions searched, the record's owner is what is left.
    assert cli.main(["history", *table, "--key", key, "--scan", "0"]) == 0
    assert capsys.readouterr().out.startswith(f"{started}: ")
    assert cli.main(["history", *by_stack[:4], "--key", f"never-{key}", "--scan", "0"]) == 1
    assert "no execution found for key" in capsys.readouterr().err


def test_list_and_describe_stack_resources_name_what_the_engine_deployed(engine: Engine) -> None:
    # CloudFormation API Reference, ListStackResources (StackResourceSummaries: LogicalResourceId,
    # PhysicalResourceId, ResourceType, ResourceStatus ...) and DescribeStackResources (StackName or
    # PhysicalResourceId, LogicalResourceId to narrow it). The resources are those after SAM's transform: a
    # SAM function is an AWS::Lambda::Function and its role (unit: tests/unit/test_template_events.py compares
    # them with aws-sam-translator's).
    stack, client = engine.workflow.stack, cfn(engine)
    summaries = client.list_stack_resources(StackName=stack.name)["StackResourceSummaries"]  # type: ignore[attr-defined]
    listed = {s["LogicalResourceId"]: (s["ResourceType"], s["PhysicalResourceId"]) for s in summaries}

    assert listed["IdempotentStateMachine"] == ("AWS::StepFunctions::StateMachine", engine.workflow.state_machine_arn)
    assert listed["IdempotencyTable"] == ("AWS::DynamoDB::Table", engine.workflow.idempotency_table)
    assert listed["ChargeFunction"] == ("AWS::Lambda::Function", engine.workflow.side_effect_function)
    assert listed["ChargeFunctionRole"][0] == "AWS::IAM::Role"
    assert all(s["ResourceStatus"] == "CREATE_COMPLETE" for s in summaries)
    assert not any(kind.startswith("AWS::Serverless::") for kind, _ in listed.values())
    # The names resolve against the engine: the state machine is described by the physical id listed.
    sfn = engine.http_client("stepfunctions")
    assert sfn.describe_state_machine(stateMachineArn=listed["IdempotentStateMachine"][1])["name"]

    (one,) = client.describe_stack_resources(  # type: ignore[attr-defined]
        StackName=stack.name, LogicalResourceId="IdempotencyTable"
    )["StackResources"]
    by_physical = client.describe_stack_resources(  # type: ignore[attr-defined]
        PhysicalResourceId=engine.workflow.idempotency_table
    )["StackResources"]
    assert (one["StackName"], one["PhysicalResourceId"]) == (stack.name, engine.workflow.idempotency_table)
    assert [r["LogicalResourceId"] for r in by_physical] == ["IdempotencyTable"]
