"""The engine's retention of closed executions (``services/stepfunctions/retention.py``, run by the
``execution-end`` hook), against what AWS documents.

AWS, Step Functions developer guide, "Execution guarantees" (express-at-least-once-execution.html), Standard
workflows: "Execution history data removed after 90 days. Workflow names can be reused after removal of
out-of-date execution data"; Express workflows: "Execution history is not captured by Step Functions". API
reference, DescribeExecution and GetExecutionHistory: ``ExecutionDoesNotExist``, "The specified execution does
not exist." The engine keeps closed Standard executions up to a count or an age the user sets: past it, an
execution answers as one past AWS's 90 days does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from idemflow.engine import state
from idemflow.engine.services.stepfunctions.executions import wait_for_execution
from idemflow.engine.state import Retention
from tests.unit.changes.machines import create_state_machine, run, start, wait_until

pytestmark = pytest.mark.unit

PASS_ONLY: dict[str, Any] = {"StartAt": "Only", "States": {"Only": {"Type": "Pass", "End": True}}}
PAUSE_30: dict[str, Any] = {"StartAt": "Pause", "States": {"Pause": {"Type": "Wait", "Seconds": 30, "End": True}}}
FAIL: dict[str, Any] = {"StartAt": "Boom", "States": {"Boom": {"Type": "Fail", "Error": "Boom", "Cause": "b"}}}


def does_not_exist(call: Any, **kwargs: Any) -> str:
    with pytest.raises(ClientError) as raised:
        call(**kwargs)
    return str(raised.value.response["Error"]["Code"])


def test_the_oldest_closed_executions_go_first_and_answer_as_past_aws_retention(patched: None, sfn: Any) -> None:
    state.update(retention=Retention(executions=2))
    machine = create_state_machine(sfn, PASS_ONLY)

    arns = [run(sfn, machine)["executionArn"] for _ in range(5)]

    listed = {e["executionArn"] for e in sfn.list_executions(stateMachineArn=machine)["executions"]}
    assert listed == set(arns[-2:])
    for evicted in arns[:3]:
        assert does_not_exist(sfn.describe_execution, executionArn=evicted) == "ExecutionDoesNotExist"
        assert does_not_exist(sfn.get_execution_history, executionArn=evicted) == "ExecutionDoesNotExist"
    assert sfn.describe_execution(executionArn=arns[-1])["status"] == "SUCCEEDED"


def test_without_a_retention_every_execution_is_kept_as_moto_does(patched: None, sfn: Any) -> None:
    machine = create_state_machine(sfn, PASS_ONLY)

    arns = [run(sfn, machine)["executionArn"] for _ in range(4)]

    assert {e["executionArn"] for e in sfn.list_executions(stateMachineArn=machine)["executions"]} == set(arns)


def test_a_running_execution_is_never_evicted(patched: None, sfn: Any) -> None:
    state.update(retention=Retention(executions=1), wait_time_scale=1.0)
    long = start(sfn, create_state_machine(sfn, PAUSE_30))
    wait_until(lambda: sfn.describe_execution(executionArn=long)["status"] == "RUNNING")
    quick = create_state_machine(sfn, PASS_ONLY)  # no wait: the scale of 1 keeps the long one waiting

    for _ in range(3):
        run(sfn, quick)

    assert sfn.describe_execution(executionArn=long)["status"] == "RUNNING"
    sfn.stop_execution(executionArn=long)
    assert wait_for_execution(long, 5)


def test_an_evicted_executions_name_can_be_used_again(patched: None, sfn: Any) -> None:
    # "Workflow names can be reused after removal of out-of-date execution data."
    state.update(retention=Retention(executions=1))
    machine = create_state_machine(sfn, PASS_ONLY)
    first = sfn.start_execution(stateMachineArn=machine, name="order-1", input="{}")["executionArn"]
    assert wait_for_execution(first, 10)
    with pytest.raises(ClientError, match="ExecutionAlreadyExists"):
        sfn.start_execution(stateMachineArn=machine, name="order-1", input='{"other": 1}')

    run(sfn, machine)  # order-1 falls out of the retention
    again = sfn.start_execution(stateMachineArn=machine, name="order-1", input='{"other": 1}')["executionArn"]

    assert wait_for_execution(again, 10)
    assert json.loads(sfn.describe_execution(executionArn=again)["input"]) == {"other": 1}


def test_an_execution_older_than_the_retention_goes_at_the_next_start(patched: None, sfn: Any) -> None:
    state.update(retention=Retention(seconds=60))
    machine = create_state_machine(sfn, PASS_ONLY)
    old = run(sfn, machine)["executionArn"]
    state.update(clock_offset=61)  # a minute and a second later, without waiting

    new = run(sfn, machine)["executionArn"]

    assert does_not_exist(sfn.describe_execution, executionArn=old) == "ExecutionDoesNotExist"
    assert sfn.describe_execution(executionArn=new)["status"] == "SUCCEEDED"


def test_an_evicted_failed_execution_cannot_be_redriven(patched: None, sfn: Any) -> None:
    state.update(retention=Retention(executions=1))
    failed = run(sfn, create_state_machine(sfn, FAIL))["executionArn"]
    run(sfn, create_state_machine(sfn, PASS_ONLY))

    assert does_not_exist(sfn.redrive_execution, executionArn=failed) == "ExecutionDoesNotExist"
