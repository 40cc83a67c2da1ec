"""A moto server wired like the engine's, and how the hooks' tests drive it."""

from __future__ import annotations

import json
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from idemflow.engine import registry
from idemflow.engine.faults import Faults
from idemflow.engine.services.lambda_.runtime import LambdaRuntime
from idemflow.engine.services.stepfunctions.execution_end import forget_execution
from idemflow.engine.services.stepfunctions.executions import wait_for_execution

REGION = "us-east-1"
ACCOUNT = "123456789012"
FIXTURE_CODE = Path(__file__).parents[2] / "functional" / "fixtures" / "functions" / "basic"
FUNCTION_NAME = "hooks-basic"
TABLE = "hooks-table"
SERVICES = ("stepfunctions", "dynamodb", "lambda", "iam", "sqs", "kinesis", "dynamodbstreams")


@dataclass
class Moto:
    endpoint: str
    port: int
    runtime: LambdaRuntime
    faults: Faults
    function_arn: str
    role_arn: str
    clients: dict[str, Any]
    machines: dict[str, str]
    server: Any = None
    """The werkzeug server answering on ``port``."""

    def client(self, service: str) -> Any:
        if service not in self.clients:
            self.clients[service] = boto3.session.Session().client(
                service,
                endpoint_url=self.endpoint,
                region_name=REGION,
                aws_access_key_id="local",
                aws_secret_access_key="local",
                config=Config(retries={"max_attempts": 0}),
            )
        return self.clients[service]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def lambda_machine(function_arn: str) -> dict[str, Any]:
    return {
        "StartAt": "CallFunction",
        "States": {
            "CallFunction": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": function_arn, "Payload.$": "$"},
                "OutputPath": "$.Payload",
                "End": True,
            },
        },
    }


PUT_MACHINE: dict[str, Any] = {
    "StartAt": "PutRecord",
    "States": {
        "PutRecord": {
            "Type": "Task",
            "Resource": "arn:aws:states:::dynamodb:putItem",
            "Parameters": {
                "TableName": TABLE,
                "Item": {"id": {"S.$": "$.id"}, "by": {"S": "PutRecord"}},
                "ConditionExpression": "attribute_not_exists(id)",
            },
            "ResultPath": "$.put",
            "Next": "Done",
        },
        "Done": {"Type": "Pass", "Parameters": {"id.$": "$.id", "stored": True}, "End": True},
    },
}


CHILD_MACHINE: dict[str, Any] = {
    "StartAt": "Answer",
    "States": {"Answer": {"Type": "Pass", "Parameters": {"answered.$": "$.question"}, "End": True}},
}


def sync_machine(child_arn: str) -> dict[str, Any]:
    """Starts ``child_arn`` with ``.sync:2``, named by the input's ``name``, and returns its output."""
    return {
        "StartAt": "StartChild",
        "States": {
            "StartChild": {
                "Type": "Task",
                "Resource": "arn:aws:states:::states:startExecution.sync:2",
                "Parameters": {
                    "StateMachineArn": child_arn,
                    "Name.$": "$.name",
                    "Input": {"question.$": "$.question"},
                },
                "OutputPath": "$.Output",
                "End": True,
            },
        },
    }


def leave_out(name: str) -> None:
    registry.apply(without=[name], hooks_too=True)


def run(moto: Moto, machine: str, execution_input: Any) -> dict[str, Any]:
    """Start an execution, wait for it to end (by joining its thread: works with and without the hooks)."""
    sfn = moto.client("stepfunctions")
    arn = sfn.start_execution(
        stateMachineArn=moto.machines[machine], name=f"e-{uuid.uuid4().hex[:12]}", input=json.dumps(execution_input)
    )["executionArn"]
    assert wait_for_execution(arn, timeout=20), "the execution did not end"
    forget_execution(arn)  # the hook keeps an event per execution until it is forgotten
    described: dict[str, Any] = sfn.describe_execution(executionArn=arn)
    return described


def history(moto: Moto, execution_arn: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = moto.client("stepfunctions").get_execution_history(executionArn=execution_arn)[
        "events"
    ]
    return events


def task_failures(moto: Moto, execution_arn: str) -> list[tuple[str, str]]:
    return [
        (e["taskFailedEventDetails"]["error"], e["taskFailedEventDetails"].get("cause", ""))
        for e in history(moto, execution_arn)
        if e["type"] == "TaskFailed"
    ]


def stored(moto: Moto, item_id: str) -> dict[str, Any] | None:
    item: dict[str, Any] | None = (
        moto.client("dynamodb").get_item(TableName=TABLE, Key={"id": {"S": item_id}}, ConsistentRead=True).get("Item")
    )
    return item


def run_puts(moto: Moto, count: int) -> None:
    for _ in range(count):
        assert run(moto, "put", {"id": f"cached-{uuid.uuid4()}"})["status"] == "SUCCEEDED"
