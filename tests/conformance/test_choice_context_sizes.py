"""Choice timestamp rules, the context object, and the payload quota.

Sources: the Step Functions developer guide (choice-state, input-output-contextobject, service quotas,
concepts-error-handling) and executions recorded on AWS in LocalStack's AWS-validated snapshots (``LS``:
tests/aws/services/stepfunctions/v2/...).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from idemflow.contract import MAX_STATE_PAYLOAD_BYTES
from tests.conformance.harness import Target

AWS_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _choose(target: Target, rule: dict[str, Any], execution_input: Any) -> str:
    definition = {
        "StartAt": "Choose",
        "States": {
            "Choose": {"Type": "Choice", "Choices": [{**rule, "Next": "Yes"}], "Default": "No"},
            "Yes": {"Type": "Pass", "End": True},
            "No": {"Type": "Pass", "End": True},
        },
    }
    run = target.run(definition, execution_input)
    assert run.status == "SUCCEEDED", (run.error, run.cause)
    return run.entered()[-1]


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        # Docs, choice-state: timestamps are compared as instants and "must conform to the RFC3339 profile
        # of ISO 8601"; RFC 3339 allows a fraction of a second and a numeric offset. The lease arithmetic
        # of the product compares such times (TimestampLessThanEqualsPath).
        ("2026-11-23T08:00:00.250Z", "2026-11-23T08:00:00.251Z"),
        ("2026-11-23T08:00:00.999Z", "2026-11-23T08:00:01Z"),
        ("2026-11-23T10:00:00.000+02:00", "2026-11-23T08:00:00.001Z"),
    ],
)
def test_timestamps_with_fractional_seconds_compare_as_instants(target: Target, earlier: str, later: str) -> None:
    rule = {"Variable": "$.a", "TimestampLessThanPath": "$.b"}
    assert _choose(target, rule, {"a": earlier, "b": later}) == "Yes"
    assert _choose(target, rule, {"a": later, "b": earlier}) == "No"


@pytest.mark.parametrize("value", [None, 1, "", "2023-02-24 12:15:56.832957", [], {}, True])
def test_a_value_that_is_not_a_timestamp_is_not_equal_to_one(target: Target, value: Any) -> None:
    # LS choice_operators/test_timestamp_operators.py (recorded 22-06-2023): TimestampEquals with a
    # Variable that is not a timestamp is false, not an error.
    rule = {"Variable": "$.a", "TimestampEquals": "2023-02-24T12:15:56Z"}
    assert _choose(target, rule, {"a": value}) == "No"


def test_the_context_object_has_the_recorded_fields_and_formats(target: Target) -> None:
    # LS context_object/test_context_object.py [$$] (recorded 11-09-2024): Execution{Id, Input, StartTime,
    # Name, RoleArn, RedriveCount}, StateMachine{Id, Name}, State{Name, EnteredTime}; no RetryCount and no
    # Task in a Pass state.
    definition = {"StartAt": "Look", "States": {"Look": {"Type": "Pass", "Parameters": {"ctx.$": "$$"}, "End": True}}}
    arn = target.machine(definition)
    started = target.start(arn, {"in": 1}, name="context-look")
    run = target.finish(started["executionArn"])

    context = run.output["ctx"]
    assert set(context) == {"Execution", "StateMachine", "State"}
    assert set(context["State"]) == {"Name", "EnteredTime"} and context["State"]["Name"] == "Look"
    assert set(context["StateMachine"]) == {"Id", "Name"} and context["StateMachine"]["Id"] == arn
    execution = context["Execution"]
    assert {"Id", "Input", "StartTime", "Name", "RoleArn"} <= set(execution)
    assert execution["Id"] == started["executionArn"] and execution["Name"] == "context-look"
    assert execution["Input"] == {"in": 1} and execution["RoleArn"] == target.resources["RoleArn"]


def test_start_time_and_entered_time_are_utc_with_milliseconds(target: Target) -> None:
    # LS test_base.py::test_execution_dateformat: StartTime is always three fractional digits and "Z"
    # (e.g. 2023-11-21T06:27:31.545Z); the docs' EnteredTime example has the same form.
    definition = {
        "StartAt": "Look",
        "States": {
            "Look": {
                "Type": "Pass",
                "Parameters": {"start.$": "$$.Execution.StartTime", "entered.$": "$$.State.EnteredTime"},
                "End": True,
            }
        },
    }
    run = target.run(definition, {})
    assert run.status == "SUCCEEDED", run.cause
    assert AWS_TIME.match(run.output["start"]) and AWS_TIME.match(run.output["entered"]), run.output
    assert run.output["start"] <= run.output["entered"]


def _text_of_bytes(size: int, unicode: bool) -> dict[str, str]:
    """An object whose compact JSON, {"v":"..."}, is ``size`` UTF-8 bytes."""
    body = size - len('{"v":""}')
    return {"v": ("é" * (body // 2) + "a" * (body % 2)) if unicode else "a" * body}


@pytest.mark.parametrize("unicode", [False, True])
def test_a_result_of_exactly_the_quota_in_utf8_bytes_passes(target: Target, unicode: bool) -> None:
    # Service quotas: "262,144 bytes of data as a UTF-8 encoded string" for a state's input or output.
    # A Pass state's output of exactly that many bytes is within it.
    definition = {
        "StartAt": "Big",
        "States": {"Big": {"Type": "Pass", "Result": _text_of_bytes(MAX_STATE_PAYLOAD_BYTES, unicode), "End": True}},
    }
    run = target.run(definition, {})
    assert run.status == "SUCCEEDED", run.cause
    assert len(json.dumps(run.output, separators=(",", ":"), ensure_ascii=False).encode()) == MAX_STATE_PAYLOAD_BYTES


@pytest.mark.parametrize("unicode", [False, True])
def test_a_result_one_byte_over_the_quota_fails_data_limit_exceeded(target: Target, unicode: bool) -> None:
    # LS error_handling/test_states_errors.py::test_start_large_input... (recorded 21-03-2024): a Pass
    # state's output over the quota fails the execution, States.DataLimitExceeded, cause "The state/task
    # '<state>' returned a result with a size exceeding the maximum number of bytes service limit."
    definition = {
        "StartAt": "Big",
        "States": {
            "Big": {"Type": "Pass", "Result": _text_of_bytes(MAX_STATE_PAYLOAD_BYTES + 1, unicode), "End": True}
        },
    }
    run = target.run(definition, {})
    assert (run.status, run.error) == ("FAILED", "States.DataLimitExceeded")
    assert "'Big' returned a result with a size exceeding the maximum number of bytes service limit" in (
        run.cause or ""
    )


def test_a_tasks_input_after_parameters_over_the_quota_fails_the_task(target: Target) -> None:
    # Docs, concepts-error-handling, States.DataLimitExceeded: raised when "the input of a state after
    # Parameters processing" exceeds the quota. The state's input (140,000 bytes) fits; its parameters,
    # which use it twice, do not: the task fails before its request.
    definition = {
        "StartAt": "Get",
        "States": {
            "Get": {
                "Type": "Task",
                "Resource": "arn:aws:states:::dynamodb:getItem",
                "Parameters": {
                    "TableName": target.table,
                    "Key": {"pk": {"S.$": "$.text"}},
                    "ProjectionExpression.$": "$.text",
                },
                "Catch": [{"ErrorEquals": ["States.DataLimitExceeded"], "Next": "TooBig"}],
                "End": True,
            },
            "TooBig": {"Type": "Pass", "End": True},
        },
    }
    run = target.run(definition, {"text": "a" * 140_000})
    assert run.entered() == ["Get", "TooBig"]
    assert run.failure("TaskFailed")[0] == "States.DataLimitExceeded"
    assert not run.of_type("TaskSubmitted")


def test_an_execution_whose_output_is_a_string_describes_it_as_json(target: Target) -> None:
    # API reference, DescribeExecution: "output: The JSON output data of the execution". AWS's recorded
    # outputs are compact JSON (LS express/test_express_sync.py::test_base, recorded 26-06-2024).
    definition = {"StartAt": "Say", "States": {"Say": {"Type": "Pass", "Result": "Zoë", "End": True}}}
    run = target.run(definition, {})
    described = target.client("stepfunctions").describe_execution(executionArn=run.arn)
    assert described["output"] == '"Zoë"'
    obj = {"StartAt": "Say", "States": {"Say": {"Type": "Pass", "Result": {"a": [1, 2]}, "End": True}}}
    assert target.client("stepfunctions").describe_execution(executionArn=target.run(obj, {}).arn)["output"] == (
        '{"a":[1,2]}'
    )
