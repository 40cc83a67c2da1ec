"""``sfn-task``: a ``states:startExecution`` task's faults per state name, and a gate that sees its request and its
child's end. For each, what moto does without it and with it."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from idemflow.engine import state
from idemflow.engine.services.stepfunctions.task_gates import LOST_START_ERROR
from idemflow.engine.state import TaskRequest
from tests.unit.hooks.served import Moto, leave_out, run, task_failures

pytestmark = pytest.mark.unit


def _children(moto: Moto, name: str) -> list[dict[str, Any]]:
    listed = moto.client("stepfunctions").list_executions(stateMachineArn=moto.machines["child"])["executions"]
    return [e for e in listed if e["name"] == name]


def _start(name: str) -> dict[str, Any]:
    return {"name": name, "question": "why"}


class _RecordingGate:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def before(self, request: TaskRequest) -> None:
        self.seen.append(("before", request.service, request.action))

    def after(self, request: TaskRequest) -> None:
        self.seen.append(("after", request.service, request.action))

    def ended(self, execution_arn: str) -> None:
        pass


def _what_a_gate_sees(moto: Moto) -> list[tuple[str, str, str]]:
    gate = _RecordingGate()
    state.update(gate=gate)
    try:
        done = run(moto, "sync", _start(f"c-{uuid.uuid4().hex[:12]}"))
    finally:
        state.update(gate=None)
    assert done["status"] == "SUCCEEDED", done
    return [seen for seen in gate.seen if seen[1] == "states"]


def test_a_gate_sees_the_start_of_a_child_and_its_end(moto: Moto) -> None:
    child = moto.machines["child"]
    assert _what_a_gate_sees(moto) == [("before", "states", child), ("after", "states", child)]


def test_without_the_hook_a_gate_never_sees_a_start_execution_task(moto: Moto) -> None:
    leave_out("sfn-task")
    assert _what_a_gate_sees(moto) == []


def test_refuse_start_next_fails_that_states_start_as_the_api_names_it_and_starts_no_child(moto: Moto) -> None:
    # The task names a refusal StepFunctions.<code>Exception, as AWS does (recorded on AWS: LocalStack's
    # test_task_service_sfn.snapshot.json, test_start_execution_no_such_arn, 30-06-2023).
    moto.faults.refuse_start_next("StartChild", 1, "StateMachineDoesNotExist")
    name = f"c-{uuid.uuid4().hex[:12]}"

    done = run(moto, "sync", _start(name))

    assert (done["status"], done["error"]) == ("FAILED", "StepFunctions.StateMachineDoesNotExistException")
    ((_, cause),) = task_failures(moto, done["executionArn"])
    assert "Service: AWSStepFunctions; Status Code: 400; Error Code: StateMachineDoesNotExist" in cause
    assert _children(moto, name) == []
    assert moto.faults.pending() == {}


def test_a_lost_start_response_starts_the_child_and_fails_the_task(moto: Moto) -> None:
    moto.faults.lose_start_response_next("StartChild")
    name = f"c-{uuid.uuid4().hex[:12]}"

    done = run(moto, "sync", _start(name))

    assert (done["status"], done["error"]) == ("FAILED", LOST_START_ERROR)
    assert len(_children(moto, name)) == 1


def test_without_the_hook_a_start_is_never_refused(moto: Moto) -> None:
    leave_out("sfn-task")
    moto.faults.refuse_start_next("StartChild", 1, "StateMachineDoesNotExist")
    name = f"c-{uuid.uuid4().hex[:12]}"

    done = run(moto, "sync", _start(name))

    assert done["status"] == "SUCCEEDED", done
    assert len(_children(moto, name)) == 1
    assert moto.faults.pending() == {"start-refused:StartChild": 1}
