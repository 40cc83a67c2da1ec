"""``execution-end``: the end of an execution sets an event. For each, what moto does without it and with it."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from idemflow.engine.services.stepfunctions import execution_end
from idemflow.engine.services.stepfunctions.execution_end import execution_done, forget_execution
from tests.unit.hooks.served import (
    Moto,
    leave_out,
    run,
)

pytestmark = pytest.mark.unit


# -- execution-end: the end of an execution sets an event --------------------------------------------
@pytest.mark.parametrize(
    ("machine", "execution_input", "status"), [("lambda", {}, "SUCCEEDED"), ("lambda", {"action": "raise"}, "FAILED")]
)
def test_execution_done_is_set_when_the_execution_ends(
    moto: Moto, machine: str, execution_input: Any, status: str
) -> None:
    sfn = moto.client("stepfunctions")
    arn = sfn.start_execution(
        stateMachineArn=moto.machines[machine], name=f"e-{uuid.uuid4().hex[:12]}", input=json.dumps(execution_input)
    )["executionArn"]

    assert execution_done(arn).wait(timeout=20)
    assert sfn.describe_execution(executionArn=arn)["status"] == status
    forget_execution(arn)


def test_without_the_hook_execution_done_is_never_set(moto: Moto) -> None:
    leave_out("execution-end")
    done = run(moto, "lambda", {})

    assert done["status"] == "SUCCEEDED"
    assert not execution_done(done["executionArn"]).is_set()
    forget_execution(done["executionArn"])


def test_execution_done_before_the_end_is_not_set(moto: Moto, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    sfn = moto.client("stepfunctions")
    sleepy = {"action": "sleep", "seconds": 0.3, "ready": str(ready)}
    arn = sfn.start_execution(
        stateMachineArn=moto.machines["lambda"], name=f"e-{uuid.uuid4().hex[:12]}", input=json.dumps(sleepy)
    )["executionArn"]
    event = execution_done(arn)
    deadline = time.monotonic() + 10
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.01)

    assert ready.exists() and not event.is_set(), "set while the execution was still running"
    assert event.wait(timeout=20)
    forget_execution(arn)


def test_execution_done_events_are_capped_oldest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    # Executions nobody waits for (started by another client against `idemflow serve`) must not pile up.
    monkeypatch.setattr(execution_end, "MAX_DONE_EVENTS", 3)
    monkeypatch.setattr(execution_end, "_done", {})
    for i in range(5):
        execution_end.ended(f"arn:{i}")

    assert list(execution_end._done) == ["arn:2", "arn:3", "arn:4"]
    assert all(event.is_set() for event in execution_end._done.values())
