"""A state machine starting another (``sfn_tasks.py``, ``sync.py``): ``sfn-task-casing``, ``sync-child-end``. For each
change, moto 5.2.5's behaviour without it and the engine's with it."""

from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from idemflow.engine import registry, state
from idemflow.engine.services.stepfunctions.executions import wait_for_execution
from tests.unit.changes.machines import (
    create_state_machine,
    history_types,
    run,
    start,
    wait_until,
)

pytestmark = pytest.mark.unit


# ---------------------------------------------------------------------------------------------
# sfn-task-casing, sync-child-end: a state machine starting another (.sync, .sync:2)
# ---------------------------------------------------------------------------------------------
def _starting(child_arn: str) -> dict[str, Any]:
    return {
        "StartAt": "Start",
        "States": {
            "Start": {
                "Type": "Task",
                "Resource": "arn:aws:states:::states:startExecution.sync:2",
                "Parameters": {"StateMachineArn": child_arn, "Input": {"n": 1}},
                "End": True,
            }
        },
    }


_CHILD = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}


def test_unpatched_moto_5_2_5_refuses_a_start_execution_tasks_state_machine_arn(unpatched: None, sfn: Any) -> None:
    child = create_state_machine(sfn, _CHILD)

    described = run(sfn, create_state_machine(sfn, _starting(child)))

    # botocore's StartExecution has stateMachineArn; moto hands it StateMachineArn as written.
    assert described["status"] == "FAILED"
    assert described["error"] == "States.Runtime"
    assert sfn.list_executions(stateMachineArn=child)["executions"] == []


def test_patched_a_start_execution_task_starts_the_child_and_answers_in_states_casing(patched: None, sfn: Any) -> None:
    child = create_state_machine(sfn, _CHILD)

    described = run(sfn, create_state_machine(sfn, _starting(child)))

    assert described["status"] == "SUCCEEDED", described.get("cause")
    output = json.loads(described["output"])
    assert (output["Status"], output["Output"], output["Input"]) == ("SUCCEEDED", {"n": 1}, {"n": 1})
    assert [e["executionArn"] for e in sfn.list_executions(stateMachineArn=child)["executions"]] == [
        output["ExecutionArn"]
    ]


def test_unpatched_moto_5_2_5_polls_a_sync_child_every_half_second(sfn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_callback

    registry.apply(without=["sync-child-end"])
    state.update(wait_time_scale=0)
    # The child waits (Wait state, released below) so that the parent's first look finds it running.
    gate = threading.Event()
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        gate.set()
        time.sleep(0.01)

    monkeypatch.setattr(state_task_service_callback, "time", SimpleNamespace(sleep=sleep))
    child = create_state_machine(
        sfn, {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 1, "End": True}}}
    )
    state.update(wait_time_scale=1.0)
    execution = start(sfn, create_state_machine(sfn, _starting(child)))
    assert gate.wait(5), "the parent never polled"
    state.update(wait_time_scale=0)
    assert wait_for_execution(execution, 10)

    assert sleeps and set(sleeps) == {0.5}  # DescribeExecution, then 0.5 s of real time, again and again


def test_patched_a_sync_task_learns_its_childs_end_without_sleeping(
    patched: None, sfn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_callback

    sleeps: list[float] = []
    monkeypatch.setattr(state_task_service_callback, "time", SimpleNamespace(sleep=sleeps.append))
    hold = {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 3600, "End": True}}}
    child = create_state_machine(sfn, hold)
    state.update(wait_time_scale=1.0)  # the child holds until it is stopped, below
    execution = start(sfn, create_state_machine(sfn, _starting(child)))
    wait_until(lambda: "TaskSubmitted" in history_types(sfn, execution))
    (child_execution,) = sfn.list_executions(stateMachineArn=child)["executions"]
    wait_until(lambda: "WaitStateEntered" in history_types(sfn, child_execution["executionArn"]))
    sfn.stop_execution(executionArn=child_execution["executionArn"])

    assert wait_for_execution(execution, 10)
    assert sfn.describe_execution(executionArn=execution)["error"] == "States.TaskFailed"  # ABORTED child
    assert sleeps == []  # the child was running when the parent first looked, and its end woke the parent


# ---------------------------------------------------------------------------------------------
# sfn-task-casing: a state machine stopping another through the SDK integration (aws-sdk:sfn)
# ---------------------------------------------------------------------------------------------
_STOPPING = {
    "StartAt": "Stop",
    "States": {
        "Stop": {
            "Type": "Task",
            "Resource": "arn:aws:states:::aws-sdk:sfn:stopExecution",
            "Parameters": {"ExecutionArn.$": "$.ExecutionArn"},
            "End": True,
        }
    },
}


def test_unpatched_moto_5_2_5_fails_an_sdk_stop_execution_on_its_execution_arn(unpatched: None, sfn: Any) -> None:
    ended = run(sfn, create_state_machine(sfn, _CHILD))["executionArn"]

    described = run(sfn, create_state_machine(sfn, _STOPPING), {"ExecutionArn": ended})

    # botocore's StopExecution has executionArn; its serializer finds no member ExecutionArn.
    assert (described["status"], described["error"]) == ("FAILED", "States.Runtime")
    assert described["cause"].endswith(" 'ExecutionArn'")


def test_patched_sdk_start_and_describe_execution_tasks_speak_the_states_casing(patched: None, sfn: Any) -> None:
    child = create_state_machine(sfn, _CHILD)
    sdk = "arn:aws:states:::aws-sdk:sfn:"
    definition = {
        "StartAt": "Start",
        "States": {
            "Start": {
                "Type": "Task",
                "Resource": sdk + "startExecution",
                "Parameters": {"StateMachineArn": child, "Input": {"n": 1}},
                "ResultPath": "$.started",
                "Next": "Describe",
            },
            "Describe": {
                "Type": "Task",
                "Resource": sdk + "describeExecution",
                "Parameters": {"ExecutionArn.$": "$.started.ExecutionArn"},
                "ResultSelector": {"ExecutionArn.$": "$.ExecutionArn", "StateMachineArn.$": "$.StateMachineArn"},
                "ResultPath": "$.described",
                "End": True,
            },
        },
    }

    described = run(sfn, create_state_machine(sfn, definition))

    assert described["status"] == "SUCCEEDED", described.get("cause")
    output = json.loads(described["output"])
    assert set(output["started"]) == {"ExecutionArn", "StartDate"}
    assert output["described"] == {"ExecutionArn": output["started"]["ExecutionArn"], "StateMachineArn": child}
    (execution,) = sfn.list_executions(stateMachineArn=child)["executions"]
    assert execution["executionArn"] == output["started"]["ExecutionArn"]
    assert json.loads(sfn.describe_execution(executionArn=execution["executionArn"])["input"]) == {"n": 1}


def _held(sfn: Any) -> str:
    """An execution that stays RUNNING until it is stopped: it waits an hour, in real time."""
    state.update(wait_time_scale=1.0)
    held = {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 3600, "End": True}}}
    return start(sfn, create_state_machine(sfn, held))


def test_unpatched_moto_5_2_5_answers_stop_execution_without_its_stop_date(unpatched: None, sfn: Any) -> None:
    # Wait 1 s, not an hour: without the engine's changes the run sleeps its wait through, stopped or not.
    held = {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 1, "End": True}}}
    execution = start(sfn, create_state_machine(sfn, held))
    wait_until(lambda: "WaitStateEntered" in history_types(sfn, execution))

    answer = sfn.stop_execution(executionArn=execution)

    assert "stopDate" not in answer


def test_patched_an_sdk_stop_execution_task_aborts_the_execution_and_answers_its_stop_date(
    patched: None, sfn: Any
) -> None:
    child = _held(sfn)

    described = run(sfn, create_state_machine(sfn, _STOPPING), {"ExecutionArn": child})

    assert described["status"] == "SUCCEEDED", described.get("cause")
    assert list(json.loads(described["output"])) == ["StopDate"]
    assert wait_for_execution(child, 10)
    assert sfn.describe_execution(executionArn=child)["status"] == "ABORTED"
