"""``lambda-invoke`` and ``lambda-task``: Lambda ``Invoke`` goes to the local runtime, and a gate sees each Lambda
request and its response. For each, what moto does without it and with it."""

from __future__ import annotations

import json
import os

import pytest

from idemflow.engine import state
from idemflow.engine.state import TaskRequest
from tests.unit.hooks.served import (
    FUNCTION_NAME,
    Moto,
    leave_out,
    run,
)

pytestmark = pytest.mark.unit


# -- lambda-invoke: Lambda Invoke goes to the local runtime ------------------------------------------
def test_lambda_task_reaches_the_local_runtime(moto: Moto) -> None:
    done = run(moto, "lambda", {"hello": "world"})

    assert done["status"] == "SUCCEEDED", done
    output = json.loads(done["output"])
    assert output["mark"] == "basic"  # the handler's return value
    assert output["event"] == {"hello": "world"}
    assert output["function_name"] == FUNCTION_NAME
    assert output["pid"] != os.getpid()
    assert moto.runtime.invocations(FUNCTION_NAME)[-1].event == {"hello": "world"}


def test_without_the_hook_moto_only_echoes_the_request(moto: Moto) -> None:
    before = len(moto.runtime.invocations(FUNCTION_NAME))
    leave_out("lambda-invoke")

    done = run(moto, "lambda", {"hello": "world"})

    assert done["status"] == "SUCCEEDED", done
    assert json.loads(done["output"]) == {"hello": "world"}
    assert len(moto.runtime.invocations(FUNCTION_NAME)) == before


def test_handler_exception_is_the_states_error(moto: Moto) -> None:
    done = run(moto, "lambda", {"action": "raise", "message": "no such customer"})

    assert done["status"] == "FAILED"
    assert done["error"] == "ValueError"  # the errorType, through X-Amz-Function-Error: Unhandled
    assert json.loads(done["cause"])["errorMessage"] == "no such customer"


@pytest.mark.parametrize("error", ["Lambda.TooManyRequestsException", "Lambda.ServiceException"])
def test_lambda_service_error_is_the_states_error(moto: Moto, error: str) -> None:
    moto.faults.fail_next(FUNCTION_NAME, error=error, message="injected")

    done = run(moto, "lambda", {})

    assert done["status"] == "FAILED"
    assert done["error"] == error
    assert moto.runtime.invocations(FUNCTION_NAME)[-1].outcome == "injected"


# -- lambda-task: a gate sees each Lambda request and its response ------------------------------------
class _RecordingGate:
    """A gate that lets every request through and remembers what it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def before(self, request: TaskRequest) -> None:
        self.seen.append(("before", request.service))

    def after(self, request: TaskRequest) -> None:
        self.seen.append(("after", request.service))

    def ended(self, execution_arn: str) -> None:
        pass


def _lambda_requests_a_gate_sees(moto: Moto) -> list[tuple[str, str]]:
    gate = _RecordingGate()
    state.update(gate=gate)
    try:
        done = run(moto, "lambda", {"hello": "world"})
    finally:
        state.update(gate=None)
    assert done["status"] == "SUCCEEDED", done
    return [seen for seen in gate.seen if seen[1] == "lambda"]


def test_a_gate_sees_each_lambda_request_and_its_response(moto: Moto) -> None:
    assert _lambda_requests_a_gate_sees(moto) == [("before", "lambda"), ("after", "lambda")]


def test_without_the_hook_a_gate_never_sees_a_lambda_request(moto: Moto) -> None:
    leave_out("lambda-task")
    assert _lambda_requests_a_gate_sees(moto) == []
