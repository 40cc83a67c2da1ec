"""RedriveExecution: an unsuccessful Standard execution continues where it stopped.

Sources: the Step Functions API reference (RedriveExecution, DescribeExecution, ListExecutions,
ExecutionRedrivenEventDetails), the developer guide's redrive page ("Restarting state machine executions with
redrive in Step Functions", ``DG`` below: docs.aws.amazon.com/step-functions/latest/dg/redrive-executions.html)
and executions recorded on AWS in LocalStack's AWS-validated snapshots (``LS`` below:
github.com/localstack/localstack, tests/aws/services/stepfunctions/v2/...).

Each machine fails at a DynamoDB task whose condition (``attribute_exists``) holds only once the test has
written a "gate" item: the test opens the gate, then redrives, as an operator fixes a cause and redrives.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import pytest
from botocore.exceptions import ClientError

from idemflow.engine import state
from tests.conformance.harness import Run, Target
from tests.polling import wait_until


def _gate_task(key_path: str, next_state: str | None) -> dict[str, Any]:
    """A task that fails (DynamoDB.ConditionalCheckFailedException) until the item ``key_path`` names exists."""
    task: dict[str, Any] = {
        "Type": "Task",
        "Resource": "arn:aws:states:::dynamodb:updateItem",
        "Parameters": {
            "TableName": "${Table}",
            "Key": {"pk": {"S.$": key_path}},
            "UpdateExpression": "SET passed = :yes",
            "ConditionExpression": "attribute_exists(pk)",
            "ExpressionAttributeValues": {":yes": {"BOOL": True}},
        },
        "ResultPath": None,
    }
    task.update({"Next": next_state} if next_state else {"End": True})
    return task


def _count_task(key_path: str, next_state: str) -> dict[str, Any]:
    """A task that adds 1 to the item ``key_path`` names: how often a state ran."""
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::dynamodb:updateItem",
        "Parameters": {
            "TableName": "${Table}",
            "Key": {"pk": {"S.$": key_path}},
            "UpdateExpression": "ADD runs :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        },
        "ResultPath": None,
        "Next": next_state,
    }


def _machine(target: Target, definition: dict[str, Any]) -> str:
    text = __import__("json").dumps(definition).replace("${Table}", target.table)
    return target.machine(text)


# Prepare (Pass) -> Count (runs += 1) -> Gate (fails until its gate item exists) -> Seen ($$.Execution)
GATED = {
    "StartAt": "Prepare",
    "States": {
        "Prepare": {"Type": "Pass", "Result": "prepared", "ResultPath": "$.prepared", "Next": "Count"},
        "Count": _count_task("$.counter", "Gate"),
        "Gate": _gate_task("$.gate", "Seen"),
        "Seen": {"Type": "Pass", "Parameters": {"execution.$": "$$.Execution", "input.$": "$"}, "End": True},
    },
}


# First (Pass) -> Hold (a one-hour Wait) -> Done: stopped in Hold while the engine's waits really wait.
HELD = {
    "StartAt": "First",
    "States": {
        "First": {"Type": "Pass", "Next": "Hold"},
        "Hold": {"Type": "Wait", "Seconds": 3600, "Next": "Done"},
        "Done": {"Type": "Pass", "End": True},
    },
}


def _stop_in_wait(target: Target, arn: str, waits: int = 1) -> Run:
    """Stop the execution once it has entered a Wait state ``waits`` times; its run, ABORTED."""
    sfn = target.client("stepfunctions")

    def entered() -> int:
        return sum(e["type"] == "WaitStateEntered" for e in sfn.get_execution_history(executionArn=arn)["events"])

    wait_until(lambda: entered() == waits, 30, what="the Wait state", interval=0.05)
    sfn.stop_execution(executionArn=arn)
    return target.finish(arn)


@pytest.fixture
def keys(target: Target) -> Iterator[dict[str, str]]:
    suffix = uuid.uuid4().hex[:10]
    made = {"counter": f"counter-{suffix}", "gate": f"gate-{suffix}"}
    yield made
    ddb = target.client("dynamodb")
    for key in made.values():
        ddb.delete_item(TableName=target.table, Key={"pk": {"S": key}})


def _open(target: Target, key: str) -> None:
    target.client("dynamodb").put_item(TableName=target.table, Item={"pk": {"S": key}})


def _runs(target: Target, key: str) -> int:
    item = target.client("dynamodb").get_item(TableName=target.table, Key={"pk": {"S": key}}, ConsistentRead=True)
    return int(item.get("Item", {}).get("runs", {"N": "0"})["N"])


def _redrive(target: Target, execution_arn: str, **kwargs: Any) -> dict[str, Any]:
    return dict(target.client("stepfunctions").redrive_execution(executionArn=execution_arn, **kwargs))


def _failed_gated(target: Target, keys: dict[str, str]) -> tuple[str, Run]:
    arn = _machine(target, GATED)
    first = target.finish(target.start(arn, keys)["executionArn"])
    assert first.status == "FAILED" and first.error == "DynamoDB.ConditionalCheckFailedException", first
    return arn, first


def _after_redrive(run: Run) -> list[dict[str, Any]]:
    """The events the redrive appended: from ExecutionRedriven on."""
    (redriven,) = run.of_type("ExecutionRedriven")
    return [e for e in run.events if e["id"] > redriven["id"]]


def test_a_failed_execution_continues_at_its_failed_state_with_the_same_arn_and_input(
    target: Target, keys: dict[str, str]
) -> None:
    # DG: "Step Functions continues the failed execution from the unsuccessful step and uses the same input ...
    # the successful steps ... are not rerun"; "Redriven executions use the same state machine definition and
    # execution ARN"; "Redriven executions append their event history to the existing event history. ...
    # the ExecutionRedriven event". ExecutionRedrivenEventDetails: redriveCount.
    _, first = _failed_gated(target, keys)
    gate_input = [e for e in first.events if e.get("stateEnteredEventDetails", {}).get("name") == "Gate"]
    _open(target, keys["gate"])

    answer = _redrive(target, first.arn)
    run = target.finish(first.arn)

    assert isinstance(answer["redriveDate"], datetime.datetime)
    assert run.status == "SUCCEEDED" and run.arn == first.arn
    assert _runs(target, keys["counter"]) == 1  # Count succeeded the first time: not run again
    assert run.events[: len(first.events)] == first.events  # the history goes on
    (redriven,) = run.of_type("ExecutionRedriven")
    assert redriven["executionRedrivenEventDetails"] == {"redriveCount": 1}
    assert redriven["id"] == first.events[-1]["id"] + 1
    after = _after_redrive(run)
    entered = [e["stateEnteredEventDetails"] for e in after if "stateEnteredEventDetails" in e]
    assert [e["name"] for e in entered] == ["Gate", "Seen"]
    assert entered[0]["input"] == gate_input[0]["stateEnteredEventDetails"]["input"]  # the state's same input
    assert run.output["input"] == {**keys, "prepared": "prepared"}
    assert [e["type"] for e in after][-1] == "ExecutionSucceeded"


def test_the_context_object_counts_redrives_and_gives_the_redrive_time(target: Target, keys: dict[str, str]) -> None:
    # LS base/test_base.py::test_query_context_object_values (recorded): $$.Execution has "RedriveCount": 0
    # and no RedriveTime on an execution never redriven. Context object page: RedriveCount, and RedriveTime
    # "only available if you've redriven an execution".
    never = target.run({"StartAt": "Seen", "States": {"Seen": GATED["States"]["Seen"]}}, {"a": 1})
    assert never.output["execution"]["RedriveCount"] == 0 and "RedriveTime" not in never.output["execution"]

    _, first = _failed_gated(target, keys)
    _open(target, keys["gate"])
    date = _redrive(target, first.arn)["redriveDate"]
    seen = target.finish(first.arn).output["execution"]

    assert seen["RedriveCount"] == 1
    redrive_time = datetime.datetime.fromisoformat(seen["RedriveTime"].replace("Z", "+00:00"))
    assert abs((redrive_time - date).total_seconds()) < 1


def test_describe_and_list_say_what_was_redriven(target: Target, keys: dict[str, str]) -> None:
    # API reference, DescribeExecution: redriveCount ("If you have not yet redriven an execution, the
    # redriveCount is 0"), redriveDate ("If you have not yet redriven an execution, the redriveDate is null"),
    # redriveStatus, redriveStatusReason. LS base/test_base.py::test_state_fail (recorded): a FAILED execution
    # is "redriveCount": 0, "redriveStatus": "REDRIVABLE", no reason, no redriveDate; test_sfn_api.py::
    # test_describe_execution (recorded): a SUCCEEDED one "NOT_REDRIVABLE", "Execution is SUCCEEDED and cannot
    # be redriven". ListExecutions: redriveFilter REDRIVEN | NOT_REDRIVEN; items carry redriveCount, redriveDate.
    sfn = target.client("stepfunctions")
    machine, first = _failed_gated(target, keys)
    other = target.finish(target.start(machine, {**keys, "gate": keys["gate"] + "-never"})["executionArn"])

    failed = sfn.describe_execution(executionArn=first.arn)
    assert (failed["redriveCount"], failed["redriveStatus"]) == (0, "REDRIVABLE")
    assert "redriveStatusReason" not in failed and "redriveDate" not in failed

    _open(target, keys["gate"])
    date = _redrive(target, first.arn)["redriveDate"]
    target.finish(first.arn)
    succeeded = sfn.describe_execution(executionArn=first.arn)

    assert (succeeded["redriveCount"], succeeded["redriveDate"]) == (1, date)
    assert succeeded["redriveStatus"] == "NOT_REDRIVABLE"
    assert succeeded["redriveStatusReason"] == "Execution is SUCCEEDED and cannot be redriven"

    def listed(**kwargs: Any) -> dict[str, dict[str, Any]]:
        items = sfn.list_executions(stateMachineArn=machine, **kwargs)["executions"]
        return {item["executionArn"]: item for item in items}

    assert list(listed(redriveFilter="REDRIVEN")) == [first.arn]
    assert list(listed(redriveFilter="NOT_REDRIVEN")) == [other.arn]
    both = listed()
    assert (both[first.arn]["redriveCount"], both[first.arn]["redriveDate"]) == (1, date)
    assert both[other.arn]["redriveCount"] == 0 and "redriveDate" not in both[other.arn]
    assert "redriveStatus" not in both[first.arn]  # ExecutionListItem has no status or reason


def test_list_executions_places_an_ended_execution_by_its_stop(target: Target, embedded_only: None) -> None:
    # ListExecutions: "Results are sorted by time, with the most recent execution first. Running executions are
    # sorted by their startDate or redriveDate, and other executions are sorted by their stopDate" (API
    # reference). A started first and stopped last is listed before B, started after it and ended at once.
    sfn = target.client("stepfunctions")
    pick = {"Variable": "$.wait", "BooleanEquals": True, "Next": "Hold"}
    states = {"Pick": {"Type": "Choice", "Choices": [pick], "Default": "Done"}, **HELD["States"]}
    machine = target.machine({"StartAt": "Pick", "States": states})
    state.update(wait_time_scale=1.0)
    try:
        a = target.start(machine, {"wait": True})["executionArn"]
        b = target.start(machine, {"wait": False})["executionArn"]
        assert target.finish(b).status == "SUCCEEDED"
        assert _stop_in_wait(target, a).status == "ABORTED"
    finally:
        state.update(wait_time_scale=0.0)

    # Both ended: by their stops, a's the later (how running and ended ones interleave is not pinned here).
    assert [e["executionArn"] for e in sfn.list_executions(stateMachineArn=machine)["executions"]] == [a, b]


def test_a_running_or_succeeded_execution_is_not_redrivable(target: Target, keys: dict[str, str]) -> None:
    # API reference, RedriveExecution: ExecutionNotRedrivable, "The execution Amazon Resource Name (ARN) that
    # you specified for executionArn cannot be redriven"; DescribeExecution: "redriveStatus is NOT_REDRIVABLE
    # if calling the RedriveExecution API action would return the ExecutionNotRedrivable error".
    sfn = target.client("stepfunctions")
    done = target.run({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})

    with pytest.raises(ClientError) as refused:
        _redrive(target, done.arn)

    assert refused.value.response["Error"]["Code"] == "ExecutionNotRedrivable"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert sfn.describe_execution(executionArn=done.arn)["redriveCount"] == 0


def test_an_execution_that_does_not_exist_or_is_express_is_refused(target: Target) -> None:
    # API reference, RedriveExecution errors: ExecutionDoesNotExist. An Express execution: "This API action is
    # not supported by EXPRESS state machines"; its ARN is refused as DescribeExecution refuses it (LS
    # test_sfn_api_express.py::test_start_async_describe_history_execution, recorded): InvalidArn.
    machine = target.machine({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})
    missing = machine.replace(":stateMachine:", ":execution:") + ":no-such-execution"
    express = machine.replace(":stateMachine:", ":express:") + ":name:" + str(uuid.uuid4())

    with pytest.raises(ClientError) as not_there:
        _redrive(target, missing)
    with pytest.raises(ClientError) as not_standard:
        _redrive(target, express)

    assert not_there.value.response["Error"]["Code"] == "ExecutionDoesNotExist"
    assert not_standard.value.response["Error"]["Code"] == "InvalidArn"
    assert not_standard.value.response["Error"]["Message"] == (
        "Invalid Arn: 'Resource type not valid in this context: express'"
    )


def test_an_express_execution_started_asynchronously_is_refused(target: Target) -> None:
    # RedriveExecution: "This API action is not supported by EXPRESS state machines." On AWS, StartExecution of an
    # Express machine answers an express: ARN, refused as above; moto answers an execution: one.
    machine = target.machine({"StartAt": "Stop", "States": {"Stop": {"Type": "Fail", "Error": "Broken"}}}, express=True)
    arn = target.start(machine)["executionArn"]

    with pytest.raises(ClientError) as refused:
        _redrive(target, arn)

    assert refused.value.response["Error"]["Code"] == "InvalidArn"


def test_a_client_token_used_again_answers_the_same_redrive(target: Target, keys: dict[str, str]) -> None:
    # API reference, RedriveExecution, clientToken: "The API will return idempotent responses for the last 10
    # client tokens used to successfully redrive the execution. These client tokens are valid for up to 15
    # minutes after they are first used."
    sfn = target.client("stepfunctions")
    _, first = _failed_gated(target, keys)
    _open(target, keys["gate"])

    once = _redrive(target, first.arn, clientToken="operator-redrive-1")
    target.finish(first.arn)
    again = _redrive(target, first.arn, clientToken="operator-redrive-1")
    with pytest.raises(ClientError) as another:
        _redrive(target, first.arn, clientToken="operator-redrive-2")

    assert again["redriveDate"] == once["redriveDate"]
    assert sfn.describe_execution(executionArn=first.arn)["redriveCount"] == 1
    assert another.value.response["Error"]["Code"] == "ExecutionNotRedrivable"


def test_a_client_token_outside_the_models_constraints_is_refused(target: Target, keys: dict[str, str]) -> None:
    # API reference, RedriveExecution, clientToken: "Length Constraints: Minimum length of 1. Maximum length of 64.
    # Pattern: [!-~]+"; errors: ValidationException. The message in AWS's usual form for a constraint, as recorded
    # for statusFilter (LS test_sfn_api.py::test_state_machine_status_filter): "1 validation error detected: ...".
    _, first = _failed_gated(target, keys)

    refused = []
    for token in ("x" * 65, "with space"):
        with pytest.raises(ClientError) as error:
            _redrive(target, first.arn, clientToken=token)
        refused.append(error.value.response["Error"])

    assert [e["Code"] for e in refused] == ["ValidationException"] * 2
    assert all(e["Message"].startswith("1 validation error detected: Value ") for e in refused)
    assert target.client("stepfunctions").describe_execution(executionArn=first.arn)["redriveCount"] == 0


def test_a_fail_state_is_entered_again_and_fails_again(target: Target) -> None:
    # DG, "Redrive behavior of individual states", Fail: "Reenters the Fail state and fails again."
    machine = target.machine({"StartAt": "Stop", "States": {"Stop": {"Type": "Fail", "Error": "Broken"}}})
    first = target.finish(target.start(machine)["executionArn"])

    _redrive(target, first.arn)
    run = target.finish(first.arn)

    assert (run.status, run.error) == ("FAILED", "Broken")
    assert [e["type"] for e in _after_redrive(run)] == ["FailStateEntered", "ExecutionFailed"]
    assert target.client("stepfunctions").describe_execution(executionArn=first.arn)["redriveCount"] == 1


def test_an_inline_map_runs_again_only_its_unsuccessful_iterations(target: Target) -> None:
    # DG, Inline Map: "Reschedules and redrives only those iterations that failed or aborted." One iteration at
    # a time: iteration 1 fails, 2 never starts; the redrive runs 1 and 2, not 0.
    suffix = uuid.uuid4().hex[:10]
    items = [{"counter": f"iter-{n}-{suffix}", "gate": f"gate-{n}-{suffix}"} for n in range(3)]
    machine = _machine(
        target,
        {
            "StartAt": "Each",
            "States": {
                "Each": {
                    "Type": "Map",
                    "ItemsPath": "$.items",
                    "MaxConcurrency": 1,
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "INLINE"},
                        "StartAt": "Count",
                        "States": {"Count": _count_task("$.counter", "Gate"), "Gate": _gate_task("$.gate", None)},
                    },
                    "End": True,
                }
            },
        },
    )
    for item in (items[0], items[2]):
        _open(target, item["gate"])
    first = target.finish(target.start(machine, {"items": items})["executionArn"])
    assert first.status == "FAILED"
    assert [_runs(target, item["counter"]) for item in items] == [1, 1, 0]

    _open(target, items[1]["gate"])
    _redrive(target, first.arn)
    run = target.finish(first.arn)

    assert run.status == "SUCCEEDED", run
    assert [_runs(target, item["counter"]) for item in items] == [1, 2, 1]
    assert run.output == items  # every iteration's output, in order, the first run's included
    started = [
        e["mapIterationStartedEventDetails"]["index"]
        for e in _after_redrive(run)
        if "mapIterationStartedEventDetails" in e
    ]
    assert started == [1, 2]


def test_a_parallel_state_runs_again_only_its_unsuccessful_branches(target: Target) -> None:
    # API reference, RedriveExecution: "For workflows that include an Inline Map or Parallel state,
    # RedriveExecution API action reschedules and redrives only the iterations and branches that failed or
    # aborted." Branch 1 fails at its gate once branches 0 and 2 have ended (it polls for a "go" item the test
    # writes then: a failing branch aborts the others still running); they are not run again, and the state's
    # output keeps every branch's, in order.
    suffix = uuid.uuid4().hex[:10]
    branches = [{"counter": f"branch-{n}-{suffix}", "gate": f"gate-{n}-{suffix}"} for n in range(3)]
    go = f"go-{suffix}"

    def branch(n: int) -> dict[str, Any]:
        out = {"Type": "Pass", "Parameters": {"branch": n, "redrives.$": "$$.Execution.RedriveCount"}, "End": True}
        states = {f"Count{n}": _count_task(f"$.b{n}.counter", f"Gate{n}"), f"Out{n}": out}
        states[f"Gate{n}"] = _gate_task(f"$.b{n}.gate", f"Out{n}")
        if n != 1:
            return {"StartAt": f"Count{n}", "States": states}
        poll = {
            "Type": "Task",
            "Resource": "arn:aws:states:::dynamodb:getItem",
            "Parameters": {"TableName": "${Table}", "Key": {"pk": {"S": go}}, "ConsistentRead": True},
            "ResultPath": "$.go",
            "Next": "Go1",
        }
        ready = {"Variable": "$.go.Item", "IsPresent": True, "Next": "Count1"}
        return {
            "StartAt": "Poll1",
            "States": {**states, "Poll1": poll, "Go1": {"Type": "Choice", "Choices": [ready], "Default": "Poll1"}},
        }

    parallel = {"Type": "Parallel", "Branches": [branch(n) for n in range(3)], "End": True}
    machine = _machine(target, {"StartAt": "All", "States": {"All": parallel}})
    for n in (0, 2):
        _open(target, branches[n]["gate"])
    arn = target.start(machine, {f"b{n}": b for n, b in enumerate(branches)})["executionArn"]
    sfn = target.client("stepfunctions")

    def ended() -> int:
        events = sfn.get_execution_history(executionArn=arn, maxResults=1000, reverseOrder=True)["events"]
        return sum(e.get("stateExitedEventDetails", {}).get("name") in ("Out0", "Out2") for e in events)

    wait_until(lambda: ended() == 2, 30, what="branches 0 and 2 to end", interval=0.05)
    _open(target, go)
    try:
        first = target.finish(arn)
        assert (first.status, first.error) == ("FAILED", "DynamoDB.ConditionalCheckFailedException"), first
        assert [_runs(target, b["counter"]) for b in branches] == [1, 1, 1]

        _open(target, branches[1]["gate"])
        _redrive(target, first.arn)
        run = target.finish(first.arn)
    finally:
        target.client("dynamodb").delete_item(TableName=target.table, Key={"pk": {"S": go}})

    assert run.status == "SUCCEEDED", run
    assert [_runs(target, b["counter"]) for b in branches] == [1, 2, 1]
    assert run.output == [{"branch": 0, "redrives": 0}, {"branch": 1, "redrives": 1}, {"branch": 2, "redrives": 0}]
    entered = [e["stateEnteredEventDetails"]["name"] for e in _after_redrive(run) if "stateEnteredEventDetails" in e]
    assert entered == ["All", "Poll1", "Go1", "Count1", "Gate1", "Out1"]


def test_an_aborted_execution_continues_at_the_state_it_was_stopped_in(target: Target, embedded_only: None) -> None:
    # DG: redrive restarts "failed, aborted, or timed out executions"; a state is redriven when it has an
    # Entered event and no Exited event (redrive-map-run.html). LS has no recorded describe of an ABORTED one.
    machine = target.machine(HELD)
    sfn = target.client("stepfunctions")
    state.update(wait_time_scale=1.0)  # the Wait really waits until the execution is stopped
    try:
        arn = target.start(machine, {"a": 1})["executionArn"]
        first = _stop_in_wait(target, arn)
    finally:
        state.update(wait_time_scale=0.0)
    assert first.status == "ABORTED"
    assert sfn.describe_execution(executionArn=arn)["redriveStatus"] == "REDRIVABLE"

    _redrive(target, arn)
    run = target.finish(arn)

    assert run.status == "SUCCEEDED" and run.output == {"a": 1}
    assert [e["stateEnteredEventDetails"]["name"] for e in _after_redrive(run) if "stateEnteredEventDetails" in e] == [
        "Hold",
        "Done",
    ]


# First (a 40 s Wait) -> Second (a 40 s Wait) -> Done, in 60 s: the execution times out in Second.
TIMED = {
    "TimeoutSeconds": 60,
    "StartAt": "First",
    "States": {
        "First": {"Type": "Wait", "Seconds": 40, "Next": "Second"},
        "Second": {"Type": "Wait", "Seconds": 40, "Next": "Done"},
        "Done": {"Type": "Pass", "End": True},
    },
}


def test_a_timed_out_execution_continues_in_the_state_it_timed_out_in(target: Target, embedded_only: None) -> None:
    # DG: redrive restarts "failed, aborted, or timed out executions"; "the TimeoutSeconds ... reset to 0" (so
    # Second's 40 s, 80 s after the start, fit in the redriven run's 60 s). LS, timeouts/test_timeouts.py::
    # test_global_timeout: a TIMED_OUT execution's describe has redriveStatus REDRIVABLE and no reason, and
    # ExecutionTimedOut is its last event. ListExecutions gives its stopDate ("If the execution already ended").
    sfn = target.client("stepfunctions")
    machine = target.machine(TIMED)
    arn = target.start(machine, {"a": 1})["executionArn"]
    first = target.finish(arn)
    assert first.status == "TIMED_OUT", first
    assert first.entered() == ["First", "Second"]
    assert [e["type"] for e in first.events][-1] == "ExecutionTimedOut"
    described = sfn.describe_execution(executionArn=arn)
    assert (described["redriveStatus"], "redriveStatusReason" in described) == ("REDRIVABLE", False)
    (listed,) = sfn.list_executions(stateMachineArn=machine)["executions"]
    assert listed["stopDate"] == described["stopDate"]

    _redrive(target, arn)
    run = target.finish(arn)

    assert run.status == "SUCCEEDED" and run.output == {"a": 1}, run
    assert [e["stateEnteredEventDetails"]["name"] for e in _after_redrive(run) if "stateEnteredEventDetails" in e] == [
        "Second",
        "Done",
    ]


def test_after_its_redrivable_period_an_execution_is_not_redrivable(
    target: Target, keys: dict[str, str], embedded_only: None
) -> None:
    # DG, eligibility: "The workflow execution hasn't exceeded the redrivable period of 14 days ... This period
    # starts from the day a state machine completes its execution." redriveStatusReason (API reference):
    # "Execution redrivable period exceeded". The engine's clock is moved instead of waiting 14 days.
    sfn = target.client("stepfunctions")
    _, first = _failed_gated(target, keys)
    state.update(clock_offset=13.9 * 86_400)
    try:
        assert sfn.describe_execution(executionArn=first.arn)["redriveStatus"] == "REDRIVABLE"
        state.update(clock_offset=14.1 * 86_400)
        described = sfn.describe_execution(executionArn=first.arn)
        with pytest.raises(ClientError) as refused:
            _redrive(target, first.arn)
    finally:
        state.update(clock_offset=0)

    assert (described["redriveStatus"], described["redriveStatusReason"]) == (
        "NOT_REDRIVABLE",
        "Execution redrivable period exceeded",
    )
    assert refused.value.response["Error"]["Code"] == "ExecutionNotRedrivable"


def _moto_execution(target: Target, arn: str) -> Any:
    return cast(Any, target).engine._sfn_backend().describe_execution(arn)


def test_an_execution_at_the_history_event_limit_is_not_redrivable(
    target: Target, keys: dict[str, str], embedded_only: None
) -> None:
    # API reference, RedriveExecution, its conditions: a history of fewer than 24,999 events (room for
    # ExecutionRedriven and one more under the 25,000-event quota). redriveStatusReason (DescribeExecution):
    # "Execution history event limit exceeded". The history is padded to the limit: running 25,000 events takes
    # 5 s here.
    sfn = target.client("stepfunctions")
    _, first = _failed_gated(target, keys)
    history = _moto_execution(target, first.arn).exec_worker.env.event_manager._history_event_list
    padding = [dict(history[-1]) for _ in range(24_998 - len(history))]
    history.extend(padding)
    try:
        assert sfn.describe_execution(executionArn=first.arn)["redriveStatus"] == "REDRIVABLE"
        history.append(dict(history[-1]))
        described = sfn.describe_execution(executionArn=first.arn)
        with pytest.raises(ClientError) as refused:
            _redrive(target, first.arn)
    finally:
        del history[len(history) - len(padding) - 1 :]

    assert (described["redriveStatus"], described["redriveStatusReason"]) == (
        "NOT_REDRIVABLE",
        "Execution history event limit exceeded",
    )
    assert refused.value.response["Error"]["Code"] == "ExecutionNotRedrivable"


def test_an_execution_started_over_a_year_ago_is_not_redrivable(
    target: Target, keys: dict[str, str], embedded_only: None
) -> None:
    # API reference, RedriveExecution, its conditions: the execution has not exceeded its maximum open time of one
    # year; redriveStatusReason (DescribeExecution): "Execution has exceeded the max execution time". Its start is
    # moved a year back, its stop kept in the redrivable period.
    sfn = target.client("stepfunctions")
    _, first = _failed_gated(target, keys)
    execution = _moto_execution(target, first.arn)
    started = execution.start_date
    execution.start_date = started - datetime.timedelta(days=364)
    try:
        assert sfn.describe_execution(executionArn=first.arn)["redriveStatus"] == "REDRIVABLE"
        execution.start_date = started - datetime.timedelta(days=366)
        described = sfn.describe_execution(executionArn=first.arn)
        with pytest.raises(ClientError) as refused:
            _redrive(target, first.arn)
    finally:
        execution.start_date = started

    assert (described["redriveStatus"], described["redriveStatusReason"]) == (
        "NOT_REDRIVABLE",
        "Execution has exceeded the max execution time",
    )
    assert refused.value.response["Error"]["Code"] == "ExecutionNotRedrivable"


def test_two_redrives_at_once_redrive_once(target: Target, keys: dict[str, str]) -> None:
    # DescribeExecution, redriveStatusReason: "Execution is RUNNING and cannot be redriven"; RedriveExecution
    # answers ExecutionNotRedrivable when it would say NOT_REDRIVABLE. Two operators (or a retried call without
    # a client token) redriving at once: the second finds the execution running again.
    sfn = target.client("stepfunctions")
    _, first = _failed_gated(target, keys)
    _open(target, keys["gate"])

    def redrive() -> str:
        try:
            _redrive(target, first.arn)
        except ClientError as refused:
            return str(refused.response["Error"]["Code"])
        return "redriven"

    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = sorted(pool.map(lambda _: redrive(), range(2)))
    run = target.finish(first.arn)

    assert answers == ["ExecutionNotRedrivable", "redriven"]
    assert run.status == "SUCCEEDED" and len(run.of_type("ExecutionRedriven")) == 1
    assert sfn.describe_execution(executionArn=first.arn)["redriveCount"] == 1


def test_a_map_entered_again_reruns_what_failed_in_that_visit(target: Target) -> None:
    # DG, Inline Map: "Reschedules and redrives only those iterations that failed or aborted": of the Map's run
    # that failed. A Map entered twice (a loop) fails in its second visit; the redrive reruns that visit's
    # failed iteration, never handing back an output of the first visit.
    fails_once = {
        "And": [
            {"Variable": "$.round", "NumericEquals": 2},
            {"Variable": "$.v", "NumericEquals": 1},
            {"Variable": "$.redrives", "NumericEquals": 0},
        ],
        "Next": "Boom",
    }
    machine = target.machine(
        {
            "StartAt": "Init",
            "States": {
                "Init": {"Type": "Pass", "Result": {"items": [1, 2], "round": 1}, "Next": "Each"},
                "Each": {
                    "Type": "Map",
                    "ItemsPath": "$.items",
                    "MaxConcurrency": 1,
                    "ResultPath": "$.out",
                    "ItemSelector": {
                        "v.$": "$$.Map.Item.Value",
                        "round.$": "$.round",
                        "redrives.$": "$$.Execution.RedriveCount",
                    },
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "INLINE"},
                        "StartAt": "Check",
                        "States": {
                            "Check": {"Type": "Choice", "Choices": [fails_once], "Default": "Ok"},
                            "Boom": {"Type": "Fail", "Error": "Boom"},
                            "Ok": {"Type": "Pass", "Parameters": {"v.$": "$.v", "round.$": "$.round"}, "End": True},
                        },
                    },
                    "Next": "Again",
                },
                "Again": {
                    "Type": "Choice",
                    "Choices": [{"Variable": "$.round", "NumericEquals": 1, "Next": "Second"}],
                    "Default": "Done",
                },
                "Second": {"Type": "Pass", "Result": {"items": [1, 2], "round": 2}, "Next": "Each"},
                "Done": {"Type": "Pass", "End": True},
            },
        }
    )
    first = target.finish(target.start(machine, {})["executionArn"])
    assert (first.status, first.error) == ("FAILED", "Boom")

    _redrive(target, first.arn)
    run = target.finish(first.arn)

    assert run.status == "SUCCEEDED", run
    assert run.output["out"] == [{"v": 1, "round": 2}, {"v": 2, "round": 2}]


def test_an_execution_stopped_again_after_its_redrive_continues_there_at_the_next(
    target: Target, embedded_only: None
) -> None:
    # A redrive of a redrive: each continues where the last attempt stopped; the state that succeeded in the first
    # attempt is never run again, and each stop ends with ExecutionAborted.
    machine = target.machine(HELD)
    state.update(wait_time_scale=1.0)
    try:
        arn = target.start(machine, {"a": 1})["executionArn"]
        assert _stop_in_wait(target, arn, 1).status == "ABORTED"
        _redrive(target, arn)
        assert _stop_in_wait(target, arn, 2).status == "ABORTED"
    finally:
        state.update(wait_time_scale=0.0)
    _redrive(target, arn)
    run = target.finish(arn)

    assert run.status == "SUCCEEDED" and run.output == {"a": 1}
    assert run.entered() == ["First", "Hold", "Hold", "Hold", "Done"]
    assert [e["type"] for e in run.events].count("ExecutionAborted") == 2
    assert [e["executionRedrivenEventDetails"]["redriveCount"] for e in run.of_type("ExecutionRedriven")] == [1, 2]
