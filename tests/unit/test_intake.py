"""The doors' intake definition (statemachine/intake.asl.json) as the template deploys it: valid Amazon States
Language, JSONPath and optimized integrations only, and no path of a delivery that ends in a failure (a
failed iteration would fail the whole batch, whose messages a FIRE_AND_FORGET pipe has already deleted)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from idemflow.engine.stack import resolve_stack
from tests.unit.test_definition_rules import _asl_validator

DOORS = {"QueueFrontDoor": "true", "EventFrontDoor": "true"}


@pytest.fixture(scope="module")
def intake() -> dict[str, Any]:
    stack = resolve_stack(parameter_overrides=DOORS)
    definition: dict[str, Any] = json.loads(stack.state_machines["IntakeStateMachine"].definition)
    return definition


def states(definition: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every state, the Map's iteration included."""
    found = dict(definition["States"])
    for state in definition["States"].values():
        if state["Type"] == "Map":
            found.update(states(state["ItemProcessor"]))
    return found


def test_the_deployed_intake_is_valid_amazon_states_language(intake: dict[str, Any], tmp_path: Path) -> None:
    result = _asl_validator(json.dumps(intake), tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_intake_uses_jsonpath_and_optimized_integrations_only(intake: dict[str, Any]) -> None:
    assert "QueryLanguage" not in intake and not any("QueryLanguage" in s for s in states(intake).values())
    resources = {s["Resource"] for s in states(intake).values() if s["Type"] == "Task"}
    assert resources == {"arn:aws:states:::states:startExecution.sync:2", "arn:aws:states:::sqs:sendMessage"}
    assert "Arguments" not in json.dumps(intake) and "Assign" not in json.dumps(intake)  # no JSONata, no Variables


def test_every_path_of_a_delivery_ends_completed_or_dead_lettered(intake: dict[str, Any]) -> None:
    iteration = intake["States"]["Deliver"]["ItemProcessor"]["States"]
    assert not [name for name, state in iteration.items() if state["Type"] in ("Fail", "Succeed")]
    ends = {name for name, state in iteration.items() if state.get("End")}
    assert ends == {"Completed", "DeadLettered"}
    # The workflow's start catches every error (to ReadFailure or DeadLetter); only the dead-letter sends
    # themselves may fail, after their retries, which fails the intake execution (docs/doors.md, "Nothing lost").
    start = iteration["StartWorkflow"]
    assert [c["ErrorEquals"] for c in start["Catch"]] == [["States.TaskFailed"], ["States.ALL"]]
    uncaught = {name for name, state in iteration.items() if state["Type"] == "Task" and not state.get("Catch")}
    assert uncaught == {"DeadLetter", "DeadLetterUnkeyed"}
    assert all(iteration[name]["Retry"][0]["ErrorEquals"] == ["States.ALL"] for name in uncaught)


def test_the_intake_waits_for_each_execution_of_the_templates_workflow(intake: dict[str, Any]) -> None:
    stack = resolve_stack(parameter_overrides=DOORS)
    start = intake["States"]["Deliver"]["ItemProcessor"]["States"]["StartWorkflow"]
    assert start["Parameters"]["StateMachineArn"] == stack.state_machines["IdempotentStateMachine"].arn
    assert set(start["Parameters"]["Input"]) == {
        "idempotencyKey.$",
        "payload.$",
        "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$",
    }


def test_a_failed_executions_cause_is_parsed_only_when_it_is_a_json_object(intake: dict[str, Any]) -> None:
    # A TaskFailed cause holds 32,768 characters at most (API reference, TaskFailedEventDetails): a child's
    # DescribeExecution with a large payload is cut, and parsing it would fail the whole batch with
    # States.Runtime, which no Catch catches (concepts-error-handling).
    iteration = intake["States"]["Deliver"]["ItemProcessor"]["States"]
    (task_failed,) = [c for c in iteration["StartWorkflow"]["Catch"] if c["ErrorEquals"] == ["States.TaskFailed"]]
    check = iteration[task_failed["Next"]]
    assert check["Type"] == "Choice" and check["Default"] == "DeadLetterBody"
    (rule,) = check["Choices"]
    assert rule["Next"] == "ReadFailure"
    assert {"Variable": "$.failure.Cause", "StringMatches": "{*}"} in rule["And"]
    parsing = [name for name, s in iteration.items() if "StringToJson($.failure.Cause)" in json.dumps(s)]
    assert parsing == ["ReadFailure"]
