"""Tiny inline state machines on moto in this process: what the tests of the changes run."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from idemflow.engine.services.stepfunctions.executions import wait_for_execution

MOTO_CONFIG: Any = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
REGION = "us-east-1"
ROLE_ARN = "arn:aws:iam::123456789012:role/stepfunctions"
AWS_START_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def create_state_machine(sfn: Any, definition: dict[str, Any], sm_type: str = "STANDARD") -> str:
    arn: str = sfn.create_state_machine(
        name=f"sm-{uuid.uuid4().hex[:12]}",
        definition=json.dumps(definition),
        roleArn=ROLE_ARN,
        type=sm_type,
    )["stateMachineArn"]
    return arn


def run(sfn: Any, state_machine_arn: str, payload: Any = None, timeout: float = 10.0) -> dict[str, Any]:
    """Start an execution, wait for it to end, return describe_execution."""
    execution_arn = start(sfn, state_machine_arn, payload)
    assert wait_for_execution(execution_arn, timeout), "execution did not end in time"
    described: dict[str, Any] = sfn.describe_execution(executionArn=execution_arn)
    return described


def start(sfn: Any, state_machine_arn: str, payload: Any = None) -> str:
    execution_arn: str = sfn.start_execution(
        stateMachineArn=state_machine_arn,
        name=f"e-{uuid.uuid4().hex[:12]}",
        input=json.dumps({} if payload is None else payload),
    )["executionArn"]
    return execution_arn


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)  # >= 50 ms: tighter polling starves the interpreter's threads


def history_types(sfn: Any, execution_arn: str) -> list[str]:
    events = sfn.get_execution_history(executionArn=execution_arn)["events"]
    return [str(e["type"]) for e in events]


def failing_parallel(retry: dict[str, Any], name: str = "Flaky", then: str | None = None) -> dict[str, Any]:
    """A Parallel state whose only branch fails with error "Boom", retried per `retry`."""
    state: dict[str, Any] = {
        "Type": "Parallel",
        "Branches": [{"StartAt": "Explode", "States": {"Explode": {"Type": "Fail", "Error": "Boom", "Cause": "x"}}}],
        "Retry": [{"ErrorEquals": ["Boom"], **retry}],
    }
    if then is None:
        state["End"] = True
    else:
        state["Catch"] = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": then}]
    return {name: state}
