"""A state machine starting another with ``arn:aws:states:::states:startExecution.sync:2`` (the doors' intake).

Sources: the developer guide's "Start a new AWS Step Functions state machine from a running execution"
(https://docs.aws.amazon.com/step-functions/latest/dg/connect-stepfunctions.html: ``.sync:2`` returns the
child's ``Output`` as JSON, ``.sync`` as a string) and executions recorded on AWS in LocalStack's
AWS-validated snapshot tests/aws/services/stepfunctions/v2/callback/test_callback.snapshot.json
(github.com/localstack/localstack): ``test_start_execution_sync2`` (the TaskSucceeded output: ExecutionArn,
Input and Output as JSON, Status SUCCEEDED) and ``test_start_execution_sync_delegate_failure`` (the parent's
TaskFailed: error ``States.TaskFailed``, the cause the child's DescribeExecution as JSON text, with its
Error, Cause and Status FAILED).
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from typing import Any

from idemflow.engine import state as engine_state
from tests.conformance.harness import Target


@contextlib.contextmanager
def real_waits(target: Target) -> Iterator[None]:
    """Wait states wait their real time on the embedded engine too (it scales them to nothing for the suite)."""
    if not target.embedded:
        yield
        return
    scale = engine_state.current().wait_time_scale
    engine_state.update(wait_time_scale=1.0)
    try:
        yield
    finally:
        engine_state.update(wait_time_scale=scale)


CHILD_SUCCEEDS = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "Result": {"Arg1": "argument1"}, "End": True}}}
CHILD_FAILS = {
    "StartAt": "Raise",
    "States": {
        "Raise": {
            "Type": "Fail",
            "Error": "SomeFailure",
            "Cause": "This state machines raises a 'SomeFailure' failure.",
        }
    },
}


def parent(child_arn: str, pattern: str) -> dict[str, Any]:
    return {
        "StartAt": "StartTarget",
        "States": {
            "StartTarget": {
                "Type": "Task",
                "Resource": f"arn:aws:states:::states:startExecution{pattern}",
                "Parameters": {"StateMachineArn": child_arn, "Input.$": "$", "Name": "TestStartTarget"},
                "End": True,
            }
        },
    }


def test_a_sync2_task_answers_the_childs_execution_as_json(target: Target) -> None:
    child = target.machine(CHILD_SUCCEEDS)

    run = target.run(parent(child, ".sync:2"), {})

    assert run.status == "SUCCEEDED", (run.error, run.cause)
    # test_start_execution_sync2, TaskSucceeded output (recorded):
    # {"ExecutionArn": ..., "Input": {}, "Name": "TestStartTarget", "Output": {"Arg1": "argument1"},
    #  "StateMachineArn": ..., "Status": "SUCCEEDED", ...}
    assert run.output["Output"] == {"Arg1": "argument1"}
    assert run.output["Input"] == {}
    assert run.output["Status"] == "SUCCEEDED"
    assert run.output["Name"] == "TestStartTarget"
    assert run.output["StateMachineArn"] == child
    assert run.output["ExecutionArn"].split(":")[-2:] == [child.split(":")[-1], "TestStartTarget"]
    # The child's redrive fields, as DescribeExecution gives them, in the same casing: recorded in LS
    # local_mocking/test_base_callbacks.py::test_sfn_start_execution_sync[SFN_SYNC] and
    # credentials/test_credentials_base.py::test_cross_account_states_start_sync_execution.
    assert (run.output["RedriveCount"], run.output["RedriveStatus"], run.output["RedriveStatusReason"]) == (
        0,
        "NOT_REDRIVABLE",
        "Execution is SUCCEEDED and cannot be redriven",
    )
    # The TaskSubmitted event carries StartExecution's answer in the same casing.
    (submitted,) = run.of_type("TaskSubmitted")
    assert set(json.loads(submitted["taskSubmittedEventDetails"]["output"])) >= {"ExecutionArn", "StartDate"}


def test_a_sync_task_answers_the_childs_output_as_text(target: Target) -> None:
    child = target.machine(CHILD_SUCCEEDS)

    run = target.run(parent(child, ".sync"), {})

    # test_start_execution_sync (recorded): "Output": "{\"Arg1\":\"argument1\"}", a string.
    assert run.status == "SUCCEEDED", (run.error, run.cause)
    assert json.loads(run.output["Output"]) == {"Arg1": "argument1"}


def test_a_failed_child_fails_the_task_with_its_execution_as_the_cause(
    target: Target,
) -> None:
    child = target.machine(CHILD_FAILS)

    run = target.run(parent(child, ".sync"), {})

    # test_start_execution_sync_delegate_failure (recorded): TaskFailed error "States.TaskFailed", cause
    # {"Cause": "This state machines raises a 'SomeFailure' failure.", "Error": "SomeFailure",
    #  "ExecutionArn": ..., "Status": "FAILED", ...} as JSON text; the execution fails the same way.
    assert (run.status, run.error) == ("FAILED", "States.TaskFailed")
    (failed,) = run.of_type("TaskFailed")
    assert failed["taskFailedEventDetails"]["error"] == "States.TaskFailed"
    cause = json.loads(failed["taskFailedEventDetails"]["cause"])
    assert cause["Error"] == "SomeFailure"
    assert cause["Cause"] == "This state machines raises a 'SomeFailure' failure."
    assert cause["Status"] == "FAILED"
    assert cause["ExecutionArn"].endswith(":TestStartTarget")
    assert json.loads(str(run.cause)) == cause


def test_an_sdk_start_execution_task_speaks_the_states_casing(target: Target) -> None:
    # The SDK integration (arn:aws:states:::aws-sdk:sfn:startExecution), as recorded on AWS in LocalStack's
    # tests/aws/services/stepfunctions/v2/services/test_aws_sdk_task_service.snapshot.json
    # (test_sfn_start_execution, 06-11-2025): parameters {"StateMachineArn", "Input": null,
    # "Name": "TestStartTarget"}; TaskSucceeded output {"ExecutionArn": ...:TestStartTarget, "StartDate"}.
    child = target.machine(CHILD_SUCCEEDS)
    definition = {
        "StartAt": "StartExecution",
        "States": {
            "StartExecution": {
                "Type": "Task",
                "Resource": "arn:aws:states:::aws-sdk:sfn:startExecution",
                "Parameters": {"StateMachineArn.$": "$.StateMachineArn", "Input.$": "$.Input", "Name.$": "$.Name"},
                "End": True,
            }
        },
    }

    run = target.run(definition, {"StateMachineArn": child, "Input": None, "Name": "TestStartTarget"})

    assert run.status == "SUCCEEDED", (run.error, run.cause)
    assert set(run.output) == {"ExecutionArn", "StartDate"}
    assert run.output["ExecutionArn"].split(":")[-2:] == [child.split(":")[-1], "TestStartTarget"]
    (started,) = target.client("stepfunctions").list_executions(stateMachineArn=child)["executions"]
    assert started["executionArn"] == run.output["ExecutionArn"]


def test_an_sqs_send_message_task_sends_an_object_body_as_its_json(target: Target) -> None:
    # connect-sqs (https://docs.aws.amazon.com/step-functions/latest/dg/connect-sqs.html): its callback
    # example's MessageBody is an object ({"Input.$": "$", "TaskToken.$": "$$.Task.Token"}), which the
    # consumer reads as JSON (LocalStack's AWS-validated callback tests read it with States.StringToJson).
    # The doors' intake dead-letters a message's JSON body this way.
    sqs = target.client("sqs")
    url = sqs.create_queue(QueueName=f"conformance-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    try:
        run = target.run(
            {
                "StartAt": "Send",
                "States": {
                    "Send": {
                        "Type": "Task",
                        "Resource": "arn:aws:states:::sqs:sendMessage",
                        "Parameters": {
                            "QueueUrl": url,
                            "MessageBody.$": "$.body",
                            "MessageAttributes": {"why": {"DataType": "String", "StringValue.$": "$.why"}},
                        },
                        "End": True,
                    }
                },
            },
            {"body": {"amount": 4200, "note": "é"}, "why": "IdempotencyKeyReused"},
        )
        assert run.status == "SUCCEEDED", (run.error, run.cause)
        (message,) = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"]
        assert json.loads(message["Body"]) == {"amount": 4200, "note": "é"}
        assert message["MessageAttributes"]["why"]["StringValue"] == "IdempotencyKeyReused"
        assert run.output["MessageId"] == message["MessageId"]  # test_send_message (recorded): MessageId, MD5...
        assert "MD5OfMessageBody" in run.output
    finally:
        sqs.delete_queue(QueueUrl=url)


def test_a_cause_holds_32768_characters_at_most(target: Target) -> None:
    # API reference, ExecutionFailedEventDetails and TaskFailedEventDetails, cause: "Length Constraints:
    # Minimum length of 0. Maximum length of 32768." A child failing with a longer cause (its Fail state's
    # CausePath), and the parent's TaskFailed cause (the child's DescribeExecution, its input included), are
    # both held at that length, and the Catch's Cause is the TaskFailed cause. Which characters AWS keeps is
    # not on record: the engine keeps the first ones, and this test checks the lengths only.
    child = target.machine(
        {"StartAt": "Raise", "States": {"Raise": {"Type": "Fail", "Error": "Big", "CausePath": "$.cause"}}}
    )
    start = parent(child, ".sync:2")
    start["States"]["StartTarget"]["Catch"] = [
        {"ErrorEquals": ["States.TaskFailed"], "ResultPath": "$.failure", "Next": "Caught"}
    ]
    start["States"]["Caught"] = {"Type": "Pass", "OutputPath": "$.failure", "End": True}

    run = target.run(start, {"cause": "c" * 40_000})

    assert run.status == "SUCCEEDED", (run.error, run.cause)
    error, cause = run.failure("TaskFailed")
    assert error == "States.TaskFailed" and len(cause) == 32_768
    assert run.output == {"Error": "States.TaskFailed", "Cause": cause}
    (started,) = run.of_type("TaskSubmitted")
    child_arn = json.loads(started["taskSubmittedEventDetails"]["output"])["ExecutionArn"]
    described = target.client("stepfunctions").describe_execution(executionArn=child_arn)
    assert (described["error"], len(described["cause"])) == ("Big", 32_768)


def test_a_state_machine_stops_another_through_the_sdk_integration(target: Target) -> None:
    # StopExecution answers {"stopDate"} (API reference, StopExecution; recorded on AWS in LocalStack's
    # tests/aws/services/stepfunctions/v2/test_sfn_api.snapshot.json, test_stop_execution: "stop_res":
    # {"stopDate": "datetime"}, then the execution's ExecutionAborted); an aws-sdk task answers the response's
    # members in Pascal case ("StartDate" in test_aws_sdk_task_service.snapshot.json, test_sfn_start_execution).
    held = {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 3600, "End": True}}}
    stopping = {
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
    with real_waits(target):  # the held execution waits its hour until it is stopped
        execution = target.start(target.machine(held))["executionArn"]
        run = target.run(stopping, {"ExecutionArn": execution})
        stopped = target.finish(execution)

    assert run.status == "SUCCEEDED", (run.error, run.cause)
    assert list(run.output) == ["StopDate"]
    assert stopped.status == "ABORTED", (stopped.error, stopped.cause)
    assert stopped.of_type("ExecutionAborted")
