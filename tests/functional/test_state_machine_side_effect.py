"""A state machine as the side effect (``SideEffectStateMachineArn``): the workflow runs the user's state machine
with ``arn:aws:states:::states:startExecution.sync:2`` and guards it as it guards a function.

The user's application is ``tests/functional/fixtures/child/template.yaml``, read as is: it nests the project's
template and passes its own state machine (``charge.asl.json``), whose payload picks what it does.

What AWS does, and where it is recorded:

- ``.sync:2`` answers the child's DescribeExecution with its ``Output`` as JSON ("Start a new AWS Step Functions
  state machine from a running execution", https://docs.aws.amazon.com/step-functions/latest/dg/connect-stepfunctions.html;
  recorded on AWS in localstack/localstack tests/aws/services/stepfunctions/v2/callback/test_callback.snapshot.json,
  ``test_start_execution_sync2``).
- A child that fails fails the task with ``States.TaskFailed``, the child's DescribeExecution as the cause's JSON
  text, holding its ``Error``, ``Cause`` and ``Status`` (same file, ``test_start_execution_sync_delegate_failure``:
  ``"Error": "SomeFailure"``; ``test_start_execution_sync_delegate_timeout``: a child whose task timed out,
  ``"Error": "States.Timeout"`` and no ``Cause``). The definition reads the child's error from there
  (``ReadChildFailure``), never from the task's error name. How AWS describes a TIMED_OUT or ABORTED child there
  is not on record beyond its ``Status``: the definition treats any status but FAILED as an unknown outcome.
- StartExecution (API reference, https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html):
  for a Standard state machine, the same name and input while the execution runs return that execution; once it
  closed, ``ExecutionAlreadyExists``; names are at most 80 characters. The child is named after the owner's token
  and the run's attempt, so a StartExecution retried after a lost response never starts a second child.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from idemflow.contract import MAX_STATE_PAYLOAD_BYTES, OUTCOME_UNKNOWN_ERRORS, RecordStatus, WorkflowError
from idemflow.engine import Engine
from tests.paths import PROJECT_ROOT

from .workflow.helpers import PAST, set_record

TEMPLATE = Path(__file__).parent / "fixtures" / "child" / "template.yaml"
CONTRACT_DOC = PROJECT_ROOT / "docs" / "contract.md"


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(TEMPLATE, wait_time_scale=0) as running:
        yield running


def child_arn(engine: Engine) -> str:
    assert engine.stack is not None
    return str(engine.stack.outputs["ChargeStateMachineArn"])


def children(engine: Engine, key: str) -> list[dict[str, Any]]:
    """The child executions started for a key (ListExecutions of the user's state machine, by their input), oldest
    first, each as DescribeExecution answers it."""
    sfn = engine.client("stepfunctions")
    listed = sfn.list_executions(stateMachineArn=child_arn(engine))["executions"]
    described = [sfn.describe_execution(executionArn=e["executionArn"]) for e in listed]
    mine = [d for d in described if json.loads(d["input"])["idempotencyKey"] == key]
    return sorted(mine, key=lambda d: d["startDate"])


def start(key: str, **payload: Any) -> dict[str, Any]:
    return {"idempotencyKey": key, "payload": {"amount": 4200, **payload}}


def test_the_workflow_runs_the_applications_state_machine_and_invokes_no_side_effect_function(engine: Engine) -> None:
    sm = engine.workflow.state_machine
    assert sm.substitutions["SideEffectKind"] == "stateMachine"
    assert sm.substitutions["SideEffectStateMachineArn"] == child_arn(engine)
    assert engine.stack is not None
    assert [f.logical_id for f in engine.stack.all_functions()] == ["ClockFunction"]


def test_a_first_run_runs_the_child_once_and_a_duplicate_replays_its_output(engine: Engine) -> None:
    key = f"charge-{uuid.uuid4()}"

    first, duplicate = engine.run(start(key)), engine.run(start(key))

    assert (first.status, first.replayed) == ("SUCCEEDED", False), first.cause
    assert first.output["result"] == {"chargedFor": key, "amount": 4200, "attempt": 0}
    assert (duplicate.status, duplicate.replayed) == ("SUCCEEDED", True)
    assert duplicate.output["result"] == first.output["result"]
    assert "RunSideEffectStateMachine" not in duplicate.path and "RunSideEffect" not in duplicate.path
    (child,) = children(engine, key)
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == RecordStatus.COMPLETED
    assert json.loads(record["result"]) == first.output["result"]
    # Named after the owner's token and the attempt; its input is the side-effect contract's request.
    assert child["name"] == f"{record['lockToken']}-0" and child["status"] == "SUCCEEDED"
    assert json.loads(child["input"]) == {
        "idempotencyKey": key,
        "payload": {"amount": 4200},
        "executionId": first.arn,
        "attempt": 0,
        "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID": first.arn,
    }


def test_a_child_failing_with_its_own_error_releases_the_key_and_fails_with_that_error(engine: Engine) -> None:
    key = f"charge-{uuid.uuid4()}"

    declined = engine.run(start(key, outcome="declined"))

    assert (declined.status, declined.error) == ("FAILED", "ChargeDeclinedError")
    described = json.loads(str(declined.cause))  # the child's DescribeExecution, as the .sync task's cause
    assert (described["Status"], described["Error"], described["Cause"]) == (
        "FAILED",
        "ChargeDeclinedError",
        "the card was declined",
    )
    assert declined.path[-4:] == ["NameChildFailure", "ReleaseLock", "ReadFunctionError", "SideEffectFailedAsReported"]
    assert engine.workflow.record(key) is None
    assert len(children(engine, key)) == 1
    # Released: the same key with a payload the child accepts runs it again, once.
    assert engine.run(start(key)).status == "SUCCEEDED"
    assert [c["status"] for c in children(engine, key)] == ["FAILED", "SUCCEEDED"]


def test_a_transient_error_runs_the_child_again_under_a_new_name(engine: Engine) -> None:
    key = f"charge-{uuid.uuid4()}"

    outcome = engine.run(start(key, failRuns=2))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.output["result"]["attempt"] == 2
    runs = children(engine, key)
    record = engine.workflow.record(key)
    assert record is not None
    assert [(c["name"], c["status"]) for c in runs] == [
        (f"{record['lockToken']}-0", "FAILED"),
        (f"{record['lockToken']}-1", "FAILED"),
        (f"{record['lockToken']}-2", "SUCCEEDED"),
    ]
    assert outcome.path.count("WaitToRunSideEffectAgain") == 2


def test_a_transient_error_that_lasts_fails_with_it_after_three_more_runs_and_releases_the_key(engine: Engine) -> None:
    key = f"charge-{uuid.uuid4()}"

    outcome = engine.run(start(key, failRuns=99))

    assert (outcome.status, outcome.error) == ("FAILED", "ProviderUnavailableError")
    assert len(children(engine, key)) == 4  # the first run and 3 more, as a function's 3 retries
    assert engine.workflow.record(key) is None


@pytest.mark.parametrize(
    ("outcome", "status"),
    [
        # The child's own TimeoutSeconds (60) passes in its 3600 s Wait: the child TIMED_OUT.
        ("slow", "TIMED_OUT"),
        # A States.* error the child did not catch (a task of its own failed): it may have done its work.
        ("crash", "FAILED"),
        # A Fail state with no error name: nothing says whether its work was done.
        ("silent", "FAILED"),
    ],
)
def test_a_child_that_times_out_or_fails_a_states_error_is_an_unknown_outcome_and_keeps_the_key(
    engine: Engine, outcome: str, status: str
) -> None:
    key = f"charge-{uuid.uuid4()}"

    first = engine.run(start(key, outcome=outcome))
    duplicate = engine.run(start(key, outcome=outcome))

    assert (first.status, first.error) == ("FAILED", WorkflowError.OUTCOME_UNKNOWN)
    assert first.path[-2:] == ["CheckChildFailure", "OutcomeUnknown"]
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == RecordStatus.IN_PROGRESS
    # The key stays locked until its lease ends: the duplicate waits and starts no child.
    assert duplicate.error == WorkflowError.IN_PROGRESS
    (child,) = children(engine, key)
    assert child["status"] == status


@pytest.mark.parametrize("error", sorted({*OUTCOME_UNKNOWN_ERRORS, "States.Permissions"}))
def test_a_child_failing_with_an_error_after_which_its_work_may_be_done_keeps_the_key(
    engine: Engine, error: str
) -> None:
    # The side-effect contract's unknown outcomes (idemflow.contract.OUTCOME_UNKNOWN_ERRORS, the function's) and any
    # States.* error, named by the child's own Fail state (ErrorPath): each keeps the lock, none releases it.
    key = f"charge-{uuid.uuid4()}"

    outcome = engine.run(start(key, error=error))

    assert (outcome.status, outcome.error) == ("FAILED", WorkflowError.OUTCOME_UNKNOWN), error
    assert outcome.path[-3:] == ["ReadChildFailure", "CheckChildFailure", "OutcomeUnknown"]
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == RecordStatus.IN_PROGRESS
    (child,) = children(engine, key)
    assert (child["status"], json.loads(child["input"])["payload"]["error"]) == ("FAILED", error)


def test_an_acquisition_whose_response_was_lost_runs_the_child_once(engine: Engine) -> None:
    # AcquireLock wrote the lock, its response never arrived: the read finds our own token and a live lease
    # (CheckRecord's rule for our token, for the state machine's kind) and runs the child, once.
    key = f"charge-{uuid.uuid4()}"
    engine.faults.lose_dynamodb_response_next("AcquireLock")

    outcome = engine.run(start(key))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.path.count("AcquireLock") == 1 and outcome.path.count("ReadRecord") == 2
    assert "RunSideEffect" not in outcome.path and outcome.path.count("RunSideEffectStateMachine") == 1
    assert [c["status"] for c in children(engine, key)] == ["SUCCEEDED"]


def test_a_lost_acquisition_whose_lease_has_passed_is_taken_over_before_the_child_runs(engine: Engine) -> None:
    # As above, but the lease written has passed by the time the record is read again: the child never runs under
    # a passed lease; the lock is taken over (a second AcquireLock, with a fresh lease) first.
    key = f"charge-{uuid.uuid4()}"
    engine.faults.lose_dynamodb_response_next("AcquireLock")
    engine.faults.before_dynamodb("ReadRecord", lambda: None)  # the first read: no record yet
    engine.faults.before_dynamodb("ReadRecord", lambda: set_record(engine, key, leaseExpiresAt=PAST))

    outcome = engine.run(start(key))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.path.count("AcquireLock") == 2 and outcome.path.count("RunSideEffectStateMachine") == 1
    assert [c["status"] for c in children(engine, key)] == ["SUCCEEDED"]


def test_a_run_stopped_before_its_lock_and_redriven_after_its_lease_takes_a_fresh_lease_before_the_child(
    engine: Engine,
) -> None:
    # As tests/functional/workflow/test_redrive.py for the function: AcquireLock throttled through its retries, the
    # execution redriven after the lease it computed has passed. CheckLease's rule for the state machine sends it
    # back to read (never to the child under a dead lease); it takes its own lock over with a fresh lease.
    key = f"charge-{uuid.uuid4()}"
    engine.faults.throttle_next("AcquireLock", 5)
    first = engine.run(start(key))
    assert first.path[-1] == "AcquireLock" and engine.workflow.record(key) is None
    engine.set_clock_offset(int(engine.workflow.stack.parameters["LockLeaseSeconds"]) + 1)
    try:
        before = len(engine.path(first.arn))
        engine.client("stepfunctions").redrive_execution(executionArn=first.arn)
        outcome = engine.wait(first.arn)
    finally:
        engine.set_clock_offset(0)

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.path[before:][:3] == ["AcquireLock", "CheckLease", "CountAttempt"]
    assert outcome.path[before:].count("AcquireLock") == 2
    assert [c["status"] for c in children(engine, key)] == ["SUCCEEDED"]


def _started_parent(engine: Engine, key: str) -> dict[str, Any]:
    """The running workflow execution for a key, as its history's DeriveKeys output holds it."""
    sfn = engine.client("stepfunctions")
    for listed in sfn.list_executions(stateMachineArn=engine.workflow.state_machine.arn, statusFilter="RUNNING")[
        "executions"
    ]:
        for event in engine.history(listed["executionArn"]):
            exited = event.get("stateExitedEventDetails", {})
            if exited.get("name") == "DeriveKeys" and json.loads(exited["output"])["idempotencyKey"] == key:
                return dict(json.loads(exited["output"]))
    raise AssertionError(f"no running execution for {key}")


def test_a_child_name_already_taken_is_an_unknown_outcome_and_keeps_the_key(engine: Engine) -> None:
    # StartExecution with a name already used and another input fails ExecutionAlreadyExists (API_StartExecution,
    # above): a child of that name may have done the work, so the lock stays. Its catcher comes before States.ALL's,
    # whose CheckChildRan reads any error but States.TaskFailed as a start that was refused and releases the lock.
    # The name is taken here between DeriveKeys and AcquireLock, as a StartExecution whose response was lost before
    # a redrive would.
    key = f"charge-{uuid.uuid4()}"
    sfn = engine.client("stepfunctions")

    def take_the_childs_name() -> None:
        token = _started_parent(engine, key)["idem"]["token"]
        taken = {"idempotencyKey": key, "payload": {"amount": 1}, "attempt": 0}
        sfn.start_execution(stateMachineArn=child_arn(engine), name=f"{token}-0", input=json.dumps(taken))

    engine.faults.before_dynamodb("AcquireLock", take_the_childs_name)

    outcome = engine.run(start(key))

    assert (outcome.status, outcome.error) == ("FAILED", WorkflowError.OUTCOME_UNKNOWN), outcome.cause
    assert outcome.path[-2:] == ["RunSideEffectStateMachine", "OutcomeUnknown"]
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == RecordStatus.IN_PROGRESS
    assert len(children(engine, key)) == 1


def test_a_child_output_over_the_quota_completes_the_key_without_its_result(engine: Engine) -> None:
    # The .sync:2 result is the child's DescribeExecution, its input and output: over the state quota, the task
    # fails States.DataLimitExceeded (which States.ALL does not catch), caught by name: completed, no result kept.
    key = f"charge-{uuid.uuid4()}"
    blob = "x" * (MAX_STATE_PAYLOAD_BYTES // 3)

    first = engine.run(start(key, outcome="large", blob=blob))
    duplicate = engine.run(start(key, outcome="large", blob=blob))

    assert first.status == "SUCCEEDED", first.cause
    assert first.output == {"idempotencyKey": key, "replayed": False, "result": None, "resultStored": False}
    assert "SaveWithoutResult" in first.path
    assert (duplicate.status, duplicate.replayed) == ("SUCCEEDED", True)
    assert [c["status"] for c in children(engine, key)] == ["SUCCEEDED"]


def test_ten_concurrent_starts_of_one_key_run_one_child(engine: Engine) -> None:
    key = f"charge-{uuid.uuid4()}"
    arns: list[str] = []
    ready = threading.Barrier(10)

    def go() -> None:
        ready.wait()
        arns.append(engine.start_execution(start(key), name=str(uuid.uuid4())))

    threads = [threading.Thread(target=go) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outcomes = [engine.wait(arn) for arn in arns]

    (child,) = children(engine, key)
    assert child["status"] == "SUCCEEDED"
    firsts = [o for o in outcomes if o.status == "SUCCEEDED" and not o.replayed]
    assert len(firsts) == 1
    # The others replayed the stored result, or gave up waiting: none ran the child.
    assert all(o.replayed or o.error == WorkflowError.IN_PROGRESS for o in outcomes if o not in firsts)
    assert all(o.output["result"] == firsts[0].output["result"] for o in outcomes if o.replayed)


def _cost(engine: Engine, arn: str) -> tuple[int, int, int]:
    history = engine.history(arn)
    scheduled = [e["taskScheduledEventDetails"]["resourceType"] for e in history if "taskScheduledEventDetails" in e]
    entered = sum(1 for e in history if e["type"].endswith("StateEntered"))
    return entered, scheduled.count("dynamodb"), scheduled.count("lambda")


def test_the_documented_cost_of_a_state_machine_side_effect_is_measured(engine: Engine) -> None:
    # docs/contract.md, "Guard a step of your own workflow": per path, the guarding execution's state transitions,
    # DynamoDB requests and Lambda invocations, and the child executions it started.
    documented = {
        path: (int(t), int(d), int(lam), int(c))
        for path, t, d, lam, c in re.findall(
            r"^\| ([a-z][^|]+?) \| (\d+) / (\d+) / (\d+) \| (\d+) \|$", CONTRACT_DOC.read_text(), re.MULTILINE
        )
    }
    first_key, again_key, declined_key = (f"cost-{uuid.uuid4()}" for _ in range(3))
    runs = {
        "first run": (first_key, engine.run(start(first_key))),
        "duplicate of a completed run": (first_key, engine.run(start(first_key))),
        "one transient error, then success": (again_key, engine.run(start(again_key, failRuns=1))),
        "the child's own error (key released)": (declined_key, engine.run(start(declined_key, outcome="declined"))),
    }
    started = {first_key: 0}
    measured = {}
    for path, (key, outcome) in runs.items():
        total = len(children(engine, key))
        measured[path] = (*_cost(engine, outcome.arn), total - started.get(key, 0))
        started[key] = total

    assert documented == measured
    # The child's own transitions, as the page says of the test's child: Decide, then Charge.
    (child,) = children(engine, first_key)
    assert _cost(engine, child["executionArn"])[0] == 2


def test_a_start_refused_once_for_the_execution_limit_is_retried_and_runs_the_child_once(engine: Engine) -> None:
    # StartExecution's ExecutionLimitExceeded (API_StartExecution, above) says no child started: Retry[0] starts it
    # again, and the run completes with one child.
    key = f"charge-{uuid.uuid4()}"
    engine.faults.refuse_start_next("RunSideEffectStateMachine", 1, "ExecutionLimitExceeded")

    outcome = engine.run(start(key))

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.path.count("RunSideEffectStateMachine") == 1
    assert [c["status"] for c in children(engine, key)] == ["SUCCEEDED"]
    assert engine.faults.pending() == {}


def test_a_child_state_machine_that_does_not_exist_releases_the_key_and_fails_with_the_error_aws_names(
    engine: Engine,
) -> None:
    # AWS fails the task StepFunctions.StateMachineDoesNotExistException, its cause "State Machine Does Not Exist:
    # '<arn>' (Service: AWSStepFunctions; Status Code: 400; Error Code: StateMachineDoesNotExist; ...)" (recorded on
    # AWS: localstack/localstack tests/aws/services/stepfunctions/v2/error_handling/test_task_service_sfn.snapshot.json,
    # test_start_execution_no_such_arn, 30-06-2023; the .sync:2 task sends the same StartExecution). No child ran: the
    # lock is released and the execution fails with that error, as for a function that does not exist
    # (tests/functional/workflow/test_side_effect_failures.py), never States.Runtime with the key held.
    key = f"charge-{uuid.uuid4()}"
    sfn = engine.client("stepfunctions")
    described = sfn.describe_state_machine(stateMachineArn=child_arn(engine))
    sfn.delete_state_machine(stateMachineArn=child_arn(engine))
    try:
        outcome = engine.run(start(key))
    finally:
        again = sfn.create_state_machine(
            name=described["name"], definition=described["definition"], roleArn=described["roleArn"]
        )
        assert again["stateMachineArn"] == child_arn(engine)

    assert (outcome.status, outcome.error) == ("FAILED", "StepFunctions.StateMachineDoesNotExistException")
    assert outcome.cause is not None
    assert outcome.cause.startswith(f"State Machine Does Not Exist: '{child_arn(engine)}'")
    assert "Error Code: StateMachineDoesNotExist" in outcome.cause
    assert outcome.path[-4:] == ["CheckChildRan", "ReleaseLock", "ReadFunctionError", "SideEffectFailedAsReported"]
    assert engine.workflow.record(key) is None
    assert children(engine, key) == []
    # Released: once the state machine exists, the same key runs it, once.
    assert engine.run(start(key)).status == "SUCCEEDED"
    assert [c["status"] for c in children(engine, key)] == ["SUCCEEDED"]


def test_a_start_refused_for_the_execution_limit_through_its_retries_releases_the_key(engine: Engine) -> None:
    # ExecutionLimitExceeded on the first start and its 4 retries: no child ever started, so the key is released and
    # the execution fails with the refusal's name.
    key = f"charge-{uuid.uuid4()}"
    engine.faults.refuse_start_next("RunSideEffectStateMachine", 5, "ExecutionLimitExceeded")

    outcome = engine.run(start(key))

    assert (outcome.status, outcome.error) == ("FAILED", "StepFunctions.ExecutionLimitExceededException")
    assert outcome.path[-4:] == ["CheckChildRan", "ReleaseLock", "ReadFunctionError", "SideEffectFailedAsReported"]
    assert engine.workflow.record(key) is None
    assert children(engine, key) == []
    assert engine.faults.pending() == {}


def test_a_child_stopped_midway_is_an_unknown_outcome_and_keeps_the_key(engine: Engine) -> None:
    # A child that ended ABORTED (StopExecution, as an operator stops it, here with an error name) may have done its
    # work: the outcome is unknown and the lock stays, whatever name the stop gave. The child is stopped just before
    # its read of the operator's table (payload outcome "stopped"), after which it would charge. (On the engine an
    # ABORTED child's description carries no Error, as in the interpreter moto took from LocalStack; whether AWS's
    # carries the stop's is not on record: statemachine/mutants-equivalent.json, CheckChildFailure.Choices[0].)
    key = f"charge-{uuid.uuid4()}"
    sfn = engine.client("stepfunctions")

    def stop_the_child() -> None:
        (running,) = [c for c in children(engine, key) if c["status"] == "RUNNING"]
        sfn.stop_execution(executionArn=running["executionArn"], error="OperatorStoppedIt", cause="stopped midway")

    engine.faults.before_dynamodb("CheckWithOperator", stop_the_child)

    outcome = engine.run(start(key, outcome="stopped"))

    assert (outcome.status, outcome.error) == ("FAILED", WorkflowError.OUTCOME_UNKNOWN), outcome.cause
    assert outcome.path[-3:] == ["ReadChildFailure", "CheckChildFailure", "OutcomeUnknown"]
    (failed,) = [e["taskFailedEventDetails"] for e in engine.history(outcome.arn) if e["type"] == "TaskFailed"]
    # The child's DescribeExecution, as .sync:2 reports a child that ended without succeeding.
    assert (failed["error"], json.loads(failed["cause"])["Status"]) == ("States.TaskFailed", "ABORTED")
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == RecordStatus.IN_PROGRESS
    assert [c["status"] for c in children(engine, key)] == ["ABORTED"]
    assert engine.faults.pending() == {}
