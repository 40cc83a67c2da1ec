"""End-to-end: the same contract against a stack deployed with `sam deploy` (see stack.py for how to run).

The payload is the project's sample event's (events/event.json), or IDEMFLOW_E2E_EVENT's when the stack
wraps another function (SideEffectFunctionArn).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest

from idemflow.contract import WorkflowError, sample_event
from tests.paths import TEMPLATE_PATH

from .stack import run, skip_without_a_stack, stack_outputs

skip_without_a_stack()

EVENT = Path(os.environ.get("IDEMFLOW_E2E_EVENT") or sample_event(TEMPLATE_PATH))


@pytest.fixture(scope="module")
def outputs() -> dict[str, str]:
    return stack_outputs()


def test_first_run_then_duplicate_replays_the_same_result(outputs: dict[str, str]) -> None:
    sfn = boto3.client("stepfunctions")
    body: dict[str, Any] = {**json.loads(EVENT.read_text()), "idempotencyKey": f"e2e-{uuid.uuid4()}"}
    first = run(sfn, outputs["StateMachineArn"], body)
    duplicate = run(sfn, outputs["StateMachineArn"], body)

    assert first["status"] == duplicate["status"] == "SUCCEEDED"
    first_output, duplicate_output = json.loads(first["output"]), json.loads(duplicate["output"])
    assert first_output["replayed"] is False and duplicate_output["replayed"] is True
    assert duplicate_output["result"] == first_output["result"]


def test_invalid_key_fails_named(outputs: dict[str, str]) -> None:
    sfn = boto3.client("stepfunctions")
    described = run(sfn, outputs["StateMachineArn"], {"idempotencyKey": "", "payload": {}})
    assert described["status"] == "FAILED"
    assert described.get("error") == WorkflowError.KEY_INVALID
