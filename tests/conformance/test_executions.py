"""StartExecution naming and idempotency, Standard and Express.

Sources: the Step Functions API reference (StartExecution, StartSyncExecution, DescribeExecution), and
executions recorded on AWS in LocalStack's AWS-validated snapshots (``LS`` below:
github.com/localstack/localstack, tests/aws/services/stepfunctions/v2/...).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from botocore.exceptions import ClientError

from idemflow.engine import state
from tests.conformance.harness import Target
from tests.polling import wait_until

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
PASS = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}
WAIT_AN_HOUR = {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 3600, "End": True}}}


@pytest.fixture
def running_machine(target: Target) -> Iterator[str]:
    """A Standard state machine whose executions stay RUNNING (a one-hour Wait) until stopped."""
    if target.embedded:
        state.update(wait_time_scale=1.0)  # this module's waits really wait; each test stops its execution
    try:
        yield target.machine(WAIT_AN_HOUR)
    finally:
        if target.embedded:
            state.update(wait_time_scale=0.0)


def _stop(target: Target, execution_arn: str) -> None:
    # Stopped once it waits: moto 5.2.5 fails StopExecution (AttributeError, HTTP 500) on an execution
    # whose worker has not started yet, a race seen under load.
    sfn = target.client("stepfunctions")
    wait_until(
        lambda: any(
            e["type"] == "WaitStateEntered" for e in sfn.get_execution_history(executionArn=execution_arn)["events"]
        ),
        30,
        what=f"{execution_arn} to enter its Wait state",
        interval=0.05,
    )
    sfn.stop_execution(executionArn=execution_arn)
    target.finish(execution_arn)


def test_a_start_without_a_name_is_named_with_a_uuid(target: Target) -> None:
    # API reference, StartExecution, name: "If you don't provide a name for the execution, Step Functions
    # automatically generates a universally unique identifier (UUID) as the execution name."
    arn = target.machine(PASS)
    first, second = target.start(arn), target.start(arn)  # the second nameless start is a new execution

    assert first["executionArn"] != second["executionArn"]
    for started in (first, second):
        run = target.finish(started["executionArn"])
        assert run.status == "SUCCEEDED"
        name = started["executionArn"].rsplit(":", 1)[1]
        assert UUID.match(name), name


def test_the_same_name_and_input_while_running_returns_the_same_execution(target: Target, running_machine: str) -> None:
    # API reference, StartExecution: "if you call StartExecution with the same name and input as a running
    # execution, the call succeeds and return the same response as the original request."
    # LS test_sfn_api.py::test_start_execution_idempotent (recorded 21-08-2024): HTTP 200, same executionArn.
    first = target.start(running_machine, {"a": 1}, name="same-name")
    try:
        again = target.start(running_machine, {"a": 1}, name="same-name")
        assert again["executionArn"] == first["executionArn"]
    finally:
        _stop(target, first["executionArn"])


def test_the_same_name_with_other_input_is_execution_already_exists(target: Target, running_machine: str) -> None:
    # Same recording: HTTP 400 ExecutionAlreadyExists, "Execution Already Exists: '<execution arn>'".
    first = target.start(running_machine, {"a": 1}, name="same-name")
    try:
        with pytest.raises(ClientError) as raised:
            target.start(running_machine, {"a": 2}, name="same-name")
        assert raised.value.response["Error"]["Code"] == "ExecutionAlreadyExists"
        assert first["executionArn"] in raised.value.response["Error"]["Message"]
    finally:
        _stop(target, first["executionArn"])


def test_concurrent_starts_of_one_name_and_input_run_one_execution(target: Target, running_machine: str) -> None:
    # API reference, StartExecution, name: "When you make multiple StartExecution calls with the same name,
    # the new execution doesn't run", and "When the original execution is open and the execution input from
    # the new call is identical, the Success message is returned": at the same time, as one after another.
    with ThreadPoolExecutor(8) as pool:
        started = list(pool.map(lambda _: target.start(running_machine, {"a": 1}, name="raced"), range(8)))
    arns = {s["executionArn"] for s in started}
    try:
        listed = target.client("stepfunctions").list_executions(stateMachineArn=running_machine)["executions"]
        assert len(arns) == 1, arns
        assert [(e["executionArn"], e["status"]) for e in listed if e["name"] == "raced"] == [(*arns, "RUNNING")]
    finally:
        for arn in arns:
            _stop(target, arn)


def test_the_name_of_a_closed_execution_is_not_reused(target: Target) -> None:
    # API reference, StartExecution: "If the execution is closed or if the input is different, it returns
    # a 400 ExecutionAlreadyExists error. You can reuse the name 90 days after it closes."
    arn = target.machine(PASS)
    done = target.start(arn, {"a": 1}, name="closed")
    assert target.finish(done["executionArn"]).status == "SUCCEEDED"

    with pytest.raises(ClientError) as raised:
        target.start(arn, {"a": 1}, name="closed")
    assert raised.value.response["Error"]["Code"] == "ExecutionAlreadyExists"


def test_express_sync_execution_returns_the_output_and_an_express_arn(target: Target) -> None:
    # LS test_sfn_api_express.py::test_start_sync_execution and express/test_express_sync.py::test_base
    # (recorded 26-06-2024): status SUCCEEDED, the output, and an execution ARN
    # arn:<partition>:states:<region>:<account>:express:<state machine>:<name>:<id>, the name its part [-2].
    arn = target.machine(PASS, express=True)
    sfn = target.client("stepfunctions")

    answer = sfn.start_sync_execution(stateMachineArn=arn, input='{"a": 1}', name="sync-one")

    assert answer["status"] == "SUCCEEDED" and answer["output"] == '{"a":1}'
    parts = answer["executionArn"].split(":")
    assert parts[5] == "express" and parts[6] == arn.rsplit(":", 1)[1] and parts[7] == "sync-one"
    assert len(parts) == 9 and parts[8]
    # StartExecution "isn't idempotent for EXPRESS workflows" (API reference): the name is reused at once.
    again = sfn.start_sync_execution(stateMachineArn=arn, input='{"a": 1}', name="sync-one")
    assert again["status"] == "SUCCEEDED" and again["executionArn"] != answer["executionArn"]


def test_a_failed_sync_execution_is_a_200_with_status_failed(target: Target) -> None:
    # API reference, StartSyncExecution: "StartSyncExecution will return a 200 OK response, even if your
    # execution fails". LS express/test_express_sync.py::test_base[BASE_RAISE_FAILURE] (26-06-2024):
    # status FAILED with the Fail state's error and cause, and no output.
    failing = {"StartAt": "F", "States": {"F": {"Type": "Fail", "Error": "SomeFailure", "Cause": "on purpose"}}}
    arn = target.machine(failing, express=True)

    answer = target.client("stepfunctions").start_sync_execution(stateMachineArn=arn, input="{}")

    assert answer["status"] == "FAILED"
    assert (answer["error"], answer["cause"]) == ("SomeFailure", "on purpose")
    assert "output" not in answer


def test_start_sync_execution_on_a_standard_machine_is_refused(target: Target) -> None:
    # LS test_sfn_api.py::test_start_sync_execution (recorded 03-07-2024): HTTP 400
    # StateMachineTypeNotSupported.
    arn = target.machine(PASS)
    with pytest.raises(ClientError) as raised:
        target.client("stepfunctions").start_sync_execution(stateMachineArn=arn, input="{}")
    assert raised.value.response["Error"]["Code"] == "StateMachineTypeNotSupported"


def test_an_express_execution_cannot_be_described(target: Target) -> None:
    # LS test_sfn_api_express.py::test_start_async_describe_history_execution (recorded 03-07-2024):
    # DescribeExecution of an express execution ARN is InvalidArn, "Invalid Arn: 'Resource type not valid
    # in this context: express'".
    arn = target.machine(PASS, express=True)
    answer = target.client("stepfunctions").start_sync_execution(stateMachineArn=arn, input="{}")

    with pytest.raises(ClientError) as raised:
        target.client("stepfunctions").describe_execution(executionArn=answer["executionArn"])
    assert raised.value.response["Error"]["Code"] == "InvalidArn"
    assert "Resource type not valid in this context: express" in raised.value.response["Error"]["Message"]


def test_a_request_without_a_required_member_is_a_validation_exception(target: Target) -> None:
    # API reference, DescribeExecution: executionArn "Required: Yes"; Common Errors: ValidationException (400).
    # The message is the one AWS's JSON services use (recorded: LS error_handling/
    # test_task_service_dynamodb.snapshot.json, "Value null at 'item' failed to satisfy constraint: Member
    # must not be null"). API Gateway's AWS integration sends what its template renders, unchecked.
    refused = _refusal(lambda: target.unvalidated_client("stepfunctions").describe_execution())
    assert refused == {
        "Code": "ValidationException",
        "Message": "1 validation error detected: Value null at 'executionArn' failed to satisfy constraint: "
        "Member must not be null",
    }


def _input_of(size: int) -> str:
    """A JSON input of exactly ``size`` UTF-8 bytes and fewer characters (two-byte "é"s): the quota counts
    bytes."""
    text = '{"a":"' + "é" * 1000 + '"}'
    return text[:-2] + "x" * (size - len(text.encode("utf-8"))) + '"}'


# API reference, StartExecution and StartSyncExecution, input: "Length constraints apply to the payload size,
# and are expressed as bytes in UTF-8 encoding. Length Constraints: Maximum length of 262144." A request that
# fails a constraint is a ValidationException (400: API reference, Common Errors) and starts nothing.
QUOTA = 262_144


def _refusal(start: Callable[[], Any]) -> dict[str, Any] | None:
    """The error a start is refused with, None when it started (an assertion, not pytest.raises: the fixes'
    own test runs this without the fix and counts an AssertionError as the failure it expects)."""
    try:
        start()
    except ClientError as exc:
        return dict(exc.response["Error"])
    return None


def test_a_start_with_an_input_over_the_quota_is_refused(target: Target) -> None:
    arn = target.machine(PASS)
    assert len(_input_of(QUOTA + 1)) < QUOTA  # over in bytes, under in characters
    refused = _refusal(lambda: target.start(arn, _input_of(QUOTA + 1)))
    assert refused is not None and refused["Code"] == "ValidationException"
    assert "262144" in refused["Message"]
    assert target.client("stepfunctions").list_executions(stateMachineArn=arn)["executions"] == []
    # Exactly the quota starts and runs.
    run = target.finish(target.start(arn, _input_of(QUOTA))["executionArn"])
    assert run.status == "SUCCEEDED"


def test_a_sync_start_with_an_input_over_the_quota_is_refused(target: Target) -> None:
    arn = target.machine(PASS, express=True)
    sfn = target.client("stepfunctions")
    refused = _refusal(lambda: sfn.start_sync_execution(stateMachineArn=arn, input=_input_of(QUOTA + 1)))
    assert refused is not None and refused["Code"] == "ValidationException"
    assert sfn.start_sync_execution(stateMachineArn=arn, input=_input_of(QUOTA))["status"] == "SUCCEEDED"


def _timed(branches: int, waits: list[int]) -> dict[str, Any]:
    """A machine with a 60 s TimeoutSeconds whose ``branches`` Parallel branches each wait ``waits`` in turn."""
    states: dict[str, Any] = {}
    for n, seconds in enumerate(waits):
        states[f"Wait{n}"] = {"Type": "Wait", "Seconds": seconds}
        states[f"Wait{n}"].update({"Next": f"Wait{n + 1}"} if n + 1 < len(waits) else {"End": True})

    def branch(b: int) -> dict[str, Any]:
        renamed = {f"{name}b{b}": dict(s) for name, s in states.items()}
        for s in renamed.values():
            if "Next" in s:
                s["Next"] = f"{s['Next']}b{b}"
        return {"StartAt": f"Wait0b{b}", "States": renamed}

    parallel = {"Type": "Parallel", "Branches": [branch(b) for b in range(branches)], "End": True}
    return {"TimeoutSeconds": 60, "StartAt": "All", "States": {"All": parallel}}


def test_waits_count_at_their_full_length_against_the_state_machine_timeout(target: Target) -> None:
    # ASL, TimeoutSeconds: "the maximum number of seconds an execution of the state machine can run. If it runs
    # longer than the specified time, the execution fails with a States.Timeout Error name" (status TIMED_OUT, an
    # ExecutionTimedOut event: LS timeouts/test_timeouts.py::test_global_timeout). 40 s + 40 s outlast 60 s
    # whatever the engine's wait-time scale: the execution ends in the second Wait, and nothing follows.
    run = target.run(_timed(1, [40, 40]), {})

    assert run.status == "TIMED_OUT", run
    assert run.entered() == ["All", "Wait0b0", "Wait1b0"]
    assert [e["type"] for e in run.events][-1] == "ExecutionTimedOut"
    assert [e["type"] for e in run.events].count("ExecutionTimedOut") == 1


def test_waits_that_overlap_count_once_against_the_state_machine_timeout(target: Target) -> None:
    # Branches run at once (ASL, Parallel: "causes the interpreter to execute each branch ... as concurrently as
    # possible"): three branches of 40 s + 15 s end 55 s after the start, within its 60 s.
    run = target.run(_timed(3, [40, 15]), {})

    assert run.status == "SUCCEEDED", run
