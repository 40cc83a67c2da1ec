"""Runs the conformance suite's small state machines on a target: the embedded engine, or an endpoint.

The target is the embedded engine unless ``IDEMFLOW_CONFORMANCE_ENDPOINT`` names another:

- a URL (``http://localhost:8083``: Step Functions Local, or an engine started by ``idemflow serve``);
  its Lambda functions and table are named by ``IDEMFLOW_CONFORMANCE_RESOURCES``, a JSON file of this
  directory's ``template.yaml`` outputs (``RoleArn``, ``TableName``, ``<Name>FunctionArn``);
- ``aws``: the account of the usual AWS credentials; ``IDEMFLOW_CONFORMANCE_STACK`` names the stack of
  ``template.yaml`` deployed there (``sam deploy --template tests/conformance/template.yaml ...``), whose
  outputs are read from CloudFormation.

Tests that need a capability an endpoint lacks (the embedded engine's fault injection, say) are skipped
there with the reason. Every state machine a test creates is deleted when its module ends.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from idemflow.engine import Engine
from idemflow.engine.services.stepfunctions.executions import wait_for_execution
from tests.polling import wait_until

TEMPLATE = Path(__file__).resolve().parent / "template.yaml"
ENV_ENDPOINT = "IDEMFLOW_CONFORMANCE_ENDPOINT"
ENV_RESOURCES = "IDEMFLOW_CONFORMANCE_RESOURCES"
ENV_STACK = "IDEMFLOW_CONFORMANCE_STACK"
# Endpoints are polled (never the embedded engine, which signals the end of an execution).
POLL_SECONDS = 0.2


@dataclass
class Run:
    """One execution as the API describes it, with its history."""

    arn: str
    status: str
    output: Any
    error: str | None
    cause: str | None
    events: list[dict[str, Any]] = field(default_factory=list)

    def of_type(self, event_type: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == event_type]

    def entered(self) -> list[str]:
        return [e["stateEnteredEventDetails"]["name"] for e in self.of_type_suffix("StateEntered")]

    def of_type_suffix(self, suffix: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"].endswith(suffix)]

    def failure(self, event_type: str) -> tuple[str, str]:
        """Error and cause of the first event of this type (TaskFailed, LambdaFunctionFailed ...)."""
        (event, *_) = self.of_type(event_type) or [None]
        assert event is not None, f"no {event_type} event in {[e['type'] for e in self.events]}"
        details = next(v for k, v in event.items() if k.endswith("EventDetails"))
        return details.get("error", ""), details.get("cause", "")


class Target:
    """Where the suite runs: clients, the stack's resources, and state machines made for one test."""

    kind: str

    def __init__(self, resources: dict[str, str]):
        self.resources = resources
        self._machines: list[str] = []

    # -- to implement -----------------------------------------------------------------------------
    def client(self, service: str) -> Any:
        raise NotImplementedError

    def unvalidated_client(self, service: str) -> Any:
        """A client that sends what it is given, unchecked against the operation's input shape, as API
        Gateway's ``AWS`` integration does (SDKs check required members before they send)."""
        raise NotImplementedError

    def _wait(self, execution_arn: str, timeout: float) -> None:
        sfn = self.client("stepfunctions")
        wait_until(
            lambda: sfn.describe_execution(executionArn=execution_arn)["status"] != "RUNNING",
            timeout,
            what=f"{execution_arn} to end",
            interval=POLL_SECONDS,
        )

    def close(self) -> None:
        sfn = self.client("stepfunctions")
        for arn in self._machines:
            sfn.delete_state_machine(stateMachineArn=arn)
        self._machines.clear()

    # -- for tests ----------------------------------------------------------------------------------
    @property
    def embedded(self) -> bool:
        return self.kind == "embedded"

    def function_arn(self, name: str) -> str:
        return self.resources[f"{name}FunctionArn"]

    @property
    def table(self) -> str:
        return self.resources["TableName"]

    def machine(self, definition: dict[str, Any] | str, *, express: bool = False) -> str:
        """Create a state machine for this test (a fresh name) and return its ARN."""
        text = definition if isinstance(definition, str) else json.dumps(definition)
        arn = self.client("stepfunctions").create_state_machine(
            name=f"conformance-{uuid.uuid4().hex[:12]}",
            definition=text,
            roleArn=self.resources["RoleArn"],
            type="EXPRESS" if express else "STANDARD",
        )["stateMachineArn"]
        self._machines.append(arn)
        return str(arn)

    def start(self, machine_arn: str, execution_input: Any = None, name: str | None = None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"stateMachineArn": machine_arn}
        if execution_input is not None:
            kwargs["input"] = execution_input if isinstance(execution_input, str) else json.dumps(execution_input)
        if name is not None:
            kwargs["name"] = name
        return dict(self.client("stepfunctions").start_execution(**kwargs))

    def finish(self, execution_arn: str, timeout: float = 60.0) -> Run:
        self._wait(execution_arn, timeout)
        sfn = self.client("stepfunctions")
        described = sfn.describe_execution(executionArn=execution_arn)
        events: list[dict[str, Any]] = []
        for page in sfn.get_paginator("get_execution_history").paginate(executionArn=execution_arn):
            events.extend(page["events"])
        output = described.get("output")
        return Run(
            arn=execution_arn,
            status=described["status"],
            output=json.loads(output) if output is not None else None,
            error=described.get("error"),
            cause=described.get("cause"),
            events=events,
        )

    def run(self, definition: dict[str, Any] | str, execution_input: Any = None, timeout: float = 60.0) -> Run:
        """Create a state machine, run one execution of it to its end."""
        arn = self.machine(definition)
        return self.finish(self.start(arn, execution_input)["executionArn"], timeout)


class EmbeddedTarget(Target):
    kind = "embedded"

    def __init__(self, without: tuple[str, ...] = ()) -> None:
        # Waits and retry intervals scaled to nothing, Lambda timeouts to a twentieth: no test sleeps.
        # ``without`` leaves engine changes out (test_fixes_are_needed.py shows each fix is needed).
        self.engine = Engine(
            TEMPLATE,
            stack_name="conformance",
            wait_time_scale=0,
            lambda_timeout_scale=0.05,
            warm=False,
            without=without,
        )
        self.engine.start()
        assert self.engine.stack is not None
        super().__init__(dict(self.engine.stack.outputs))

    def client(self, service: str) -> Any:
        return self.engine.client(service)

    def unvalidated_client(self, service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=self.engine.endpoint_url,
            region_name=self.engine.region,
            aws_access_key_id="local",
            aws_secret_access_key="local",
            config=Config(parameter_validation=False, inject_host_prefix=False),
        )

    def _wait(self, execution_arn: str, timeout: float) -> None:
        if not wait_for_execution(execution_arn, timeout):
            raise AssertionError(f"gave up waiting for {execution_arn} to end after {timeout:g} s")

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.engine.stop()


class EndpointTarget(Target):
    def __init__(self, endpoint: str, resources: dict[str, str], *, region: str | None = None):
        self.kind = endpoint
        self.endpoint_url = None if endpoint == "aws" else endpoint
        self.region = region or os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION") or "us-east-1"
        self._session = boto3.session.Session(region_name=self.region)
        self._clients: dict[str, Any] = {}
        super().__init__(resources)

    def client(self, service: str) -> Any:
        if service not in self._clients:
            kwargs: dict[str, Any] = {"config": Config(inject_host_prefix=self.endpoint_url is None)}
            if self.endpoint_url is not None:
                kwargs["endpoint_url"] = self.endpoint_url
                if not self._session.get_credentials():
                    kwargs.update(aws_access_key_id="local", aws_secret_access_key="local")
            self._clients[service] = self._session.client(service, **kwargs)
        return self._clients[service]

    def unvalidated_client(self, service: str) -> Any:
        client = self.client(service)
        return self._session.client(
            service,
            endpoint_url=self.endpoint_url,
            config=client.meta.config.merge(Config(parameter_validation=False)),
            **(
                {}
                if self._session.get_credentials()
                else {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
            ),
        )


def _stack_outputs(stack: str) -> dict[str, str]:
    described = boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}


def target_from_environment() -> tuple[Callable[[], Target] | None, str | None]:
    """A factory for the target the environment names, or None and why the suite cannot run there."""
    endpoint = os.environ.get(ENV_ENDPOINT, "").strip()
    if not endpoint or endpoint == "embedded":
        return EmbeddedTarget, None
    if endpoint == "aws":
        stack = os.environ.get(ENV_STACK, "")
        if not stack:
            return None, f"{ENV_ENDPOINT}=aws needs {ENV_STACK}: the stack of tests/conformance/template.yaml"
        return (lambda: EndpointTarget("aws", _stack_outputs(stack))), None
    resources_file = os.environ.get(ENV_RESOURCES, "")
    if not resources_file:
        return None, f"{ENV_ENDPOINT}={endpoint} needs {ENV_RESOURCES}: a JSON file of the stack's outputs"
    resources = json.loads(Path(resources_file).read_text())
    return (lambda: EndpointTarget(endpoint, resources)), None
