"""What a kept execution holds: ``shared-history-values`` (``history_values.py``) and ``ended-environments``
(``ended_environments.py``). For each, moto 5.2.5's copies without it, and the same answers with it."""

from __future__ import annotations

from typing import Any

import pytest

from idemflow.engine import registry
from idemflow.engine.services.stepfunctions import executions
from idemflow.engine.services.stepfunctions.ended_environments import EndedEnvironment
from tests.unit.changes.machines import create_state_machine, run

pytestmark = pytest.mark.unit

# Three states passing a payload on: each state's output is the next one's input.
CHAIN: dict[str, Any] = {
    "StartAt": "One",
    "States": {
        "One": {"Type": "Pass", "Next": "Two"},
        "Two": {"Type": "Pass", "Next": "Three"},
        "Three": {"Type": "Pass", "End": True},
    },
}
PAYLOAD = {"order": "order-1", "lines": [{"sku": f"sku-{i}", "quantity": i} for i in range(8)]}
FAIL: dict[str, Any] = {"StartAt": "Boom", "States": {"Boom": {"Type": "Fail", "Error": "Boom", "Cause": "b"}}}


def kept_history(execution_arn: str) -> list[dict[str, Any]]:
    """The history moto keeps for the execution (the objects themselves, not a serialized copy)."""
    events: list[dict[str, Any]] = executions.find_execution(
        execution_arn
    ).exec_worker.env.event_manager._history_event_list
    return events


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [
        body[field]
        for event in events
        for body in event.values()
        if isinstance(body, dict)
        for field in ("input", "output")
        if isinstance(body.get(field), str)
    ]


def comparable(history: dict[str, Any]) -> list[dict[str, Any]]:
    """The events without what differs between two executions (timestamps, ARNs)."""
    return [{k: v for k, v in e.items() if k != "timestamp"} for e in history["events"]]


def test_unpatched_moto_5_2_5_keeps_a_copy_of_the_same_text_in_each_event(unpatched: None, sfn: Any) -> None:
    arn = run(sfn, create_state_machine(sfn, CHAIN), PAYLOAD)["executionArn"]

    found = texts(kept_history(arn))
    assert len(found) >= 6
    assert len({id(t) for t in found}) > len(set(found))  # equal texts, distinct objects


def test_patched_equal_texts_are_one_object_and_the_history_answers_the_same(patched: None, sfn: Any) -> None:
    machine = create_state_machine(sfn, CHAIN)
    arn = run(sfn, machine, PAYLOAD)["executionArn"]

    found = texts(kept_history(arn))
    assert len({id(t) for t in found}) == len(set(found))
    details = [
        b[f] for e in kept_history(arn) for b in e.values() if isinstance(b, dict) for f in ("inputDetails",) if f in b
    ]
    assert len(details) >= 3 and len({id(d) for d in details}) == 1
    shared = comparable(sfn.get_execution_history(executionArn=arn))
    registry.apply(without=["shared-history-values", "ended-environments"])
    moto_own = comparable(sfn.get_execution_history(executionArn=run(sfn, machine, PAYLOAD)["executionArn"]))
    assert shared == moto_own


def test_unpatched_moto_5_2_5_keeps_a_succeeded_executions_whole_environment(unpatched: None, sfn: Any) -> None:
    arn = run(sfn, create_state_machine(sfn, CHAIN), PAYLOAD)["executionArn"]

    env = executions.find_execution(arn).exec_worker.env
    assert not isinstance(env, EndedEnvironment)
    assert isinstance(env._frames, list) and env.states is not None  # the interpreter's frames and data, kept


def test_patched_a_succeeded_execution_keeps_its_history_and_output_only(patched: None, sfn: Any) -> None:
    machine = create_state_machine(sfn, CHAIN)
    done = run(sfn, machine, PAYLOAD)

    execution = executions.find_execution(done["executionArn"])
    assert isinstance(execution.exec_worker.env, EndedEnvironment)
    assert execution.exec_worker._evaluation_details is None
    assert (
        done["status"] == "SUCCEEDED"
        and done["output"] == sfn.describe_execution(executionArn=done["executionArn"])["output"]
    )
    history = sfn.get_execution_history(executionArn=done["executionArn"])["events"]
    assert [e["type"] for e in history][-1] == "ExecutionSucceeded"
    sfn.stop_execution(executionArn=done["executionArn"])  # an ended execution: nothing changes
    assert sfn.describe_execution(executionArn=done["executionArn"])["status"] == "SUCCEEDED"


def test_patched_a_failed_execution_keeps_its_whole_environment_for_redrive(patched: None, sfn: Any) -> None:
    arn = run(sfn, create_state_machine(sfn, FAIL))["executionArn"]

    assert not isinstance(executions.find_execution(arn).exec_worker.env, EndedEnvironment)
