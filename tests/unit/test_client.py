"""idemflow.client, the entry point's helpers: execution names and input, starting and waiting on a stubbed
Step Functions, reading a record and a stack output. No engine, no network."""

from __future__ import annotations

import json
import re
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from idemflow import client, keys
from idemflow.contract import MAX_KEY_LENGTH, STATE_MACHINE_LOGICAL_ID, WorkflowError, sample_payload
from tests.paths import TEMPLATE_PATH

# A state machine ARN as a stack named idemflow names it (the stubs answer any ARN alike).
ARN = f"arn:aws:states:us-east-1:123456789012:stateMachine:idemflow-{STATE_MACHINE_LOGICAL_ID}"
PAYLOAD = sample_payload(TEMPLATE_PATH)


# -- execution names -------------------------------------------------------------------------------------------
NAME = re.compile(r"[A-Za-z0-9_-]{1,80}")


@pytest.mark.parametrize("key", ["order-1", "", "ключ-🔑 with spaces/and'quotes\"{}", "k" * MAX_KEY_LENGTH])
def test_execution_name_is_deterministic_short_and_valid(key: str) -> None:
    name = client.execution_name(key, PAYLOAD)

    assert name == client.execution_name(key, dict(PAYLOAD))
    assert NAME.fullmatch(name) and len(name) <= 80
    fresh = client.execution_name(key, PAYLOAD, fresh=True)
    assert NAME.fullmatch(fresh) and len(fresh) <= 80
    assert fresh.startswith(name + "-") and fresh != client.execution_name(key, PAYLOAD, fresh=True)


def test_execution_name_depends_on_key_and_payload_but_not_on_key_order() -> None:
    name = client.execution_name("order-1", PAYLOAD)

    assert client.execution_name("order-1", dict(reversed(list(PAYLOAD.items())))) == name
    assert client.execution_name("order-2", PAYLOAD) != name
    # Another payload under the same key gets another name: the workflow, not ExecutionAlreadyExists,
    # answers it (IdempotencyKeyReused).
    assert client.execution_name("order-1", {**PAYLOAD, "other": 1}) != name
    # The payload part is the prefix of the record's fingerprint, since the input is canonical JSON.
    assert name.endswith(keys.fingerprint(json.loads(keys.canonical_json(PAYLOAD)))[:12])


def test_execution_input_is_canonical_json() -> None:
    body = client.execution_input("k", {"b": 1, "a": {"d": 2, "c": 3}})
    assert body == '{"idempotencyKey":"k","payload":{"a":{"c":3,"d":2},"b":1}}'


def test_execution_arn_is_derived_from_the_state_machine_arn() -> None:
    assert client.execution_arn(ARN, "n") == ARN.replace(":stateMachine:", ":execution:") + ":n"
    with pytest.raises(ValueError, match="not a state machine ARN"):
        client.execution_arn("arn:aws:lambda:us-east-1:1:function:f", "n")


# -- the client against a stubbed Step Functions -------------------------------------------------------------
@pytest.fixture
def sfn() -> Any:
    return boto3.session.Session().client(
        "stepfunctions",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        endpoint_url="http://127.0.0.1:9",
    )


def test_start_sends_canonical_json_under_the_derived_name(sfn: Any) -> None:
    name = client.execution_name("k", PAYLOAD)
    with Stubber(sfn) as stub:
        stub.add_response(
            "start_execution",
            {"executionArn": "arn:x", "startDate": 0},
            {"stateMachineArn": ARN, "name": name, "input": client.execution_input("k", PAYLOAD)},
        )
        assert client.start(sfn, ARN, "k", PAYLOAD) == "arn:x"


def test_start_reports_the_existing_execution_when_its_name_was_used(sfn: Any) -> None:
    name = client.execution_name("k", PAYLOAD)
    existing = {
        "executionArn": client.execution_arn(ARN, name),
        "stateMachineArn": ARN,
        "name": name,
        "status": "SUCCEEDED",
        "startDate": 0,
        "input": client.execution_input("k", PAYLOAD),
        "output": '{"replayed":false}',
    }
    with Stubber(sfn) as stub:
        stub.add_client_error("start_execution", "ExecutionAlreadyExists", "Execution Already Exists")
        stub.add_response("describe_execution", existing, {"executionArn": client.execution_arn(ARN, name)})
        started = client.start(sfn, ARN, "k", PAYLOAD)

    assert isinstance(started, dict)
    assert started["alreadyExisted"] is True and started["status"] == "SUCCEEDED"


def test_start_refuses_a_name_taken_by_another_input(sfn: Any) -> None:
    taken = {
        "executionArn": client.execution_arn(ARN, "mine"),
        "stateMachineArn": ARN,
        "name": "mine",
        "status": "RUNNING",
        "startDate": 0,
        "input": client.execution_input("k", {"other": 1}),
    }
    with Stubber(sfn) as stub:
        stub.add_client_error("start_execution", "ExecutionAlreadyExists")
        stub.add_response("describe_execution", taken)
        with pytest.raises(client.ExecutionNameConflictError, match="another input"):
            client.start(sfn, ARN, "k", PAYLOAD, name="mine")


def test_start_checks_the_input_before_any_request(sfn: Any) -> None:
    with Stubber(sfn), pytest.raises(keys.IdempotencyKeyInvalidError):
        client.start(sfn, ARN, "k" * (MAX_KEY_LENGTH + 1), PAYLOAD)  # the stubber has no response queued


def test_wait_gives_up_at_its_deadline(sfn: Any) -> None:
    running = {"executionArn": "arn:x", "stateMachineArn": ARN, "status": "RUNNING", "startDate": 0}
    with Stubber(sfn) as stub:
        stub.add_response("describe_execution", running)
        with pytest.raises(client.ExecutionTimeoutError, match="still running"):
            client.wait(sfn, "arn:x", timeout=0)


def test_wait_returns_the_closed_execution(sfn: Any) -> None:
    done = {
        "executionArn": "arn:x",
        "stateMachineArn": ARN,
        "status": "FAILED",
        "startDate": 0,
        "error": WorkflowError.KEY_REUSED.value,
    }
    with Stubber(sfn) as stub:
        stub.add_response("describe_execution", done)
        assert client.wait(sfn, "arn:x", timeout=5)["error"] == WorkflowError.KEY_REUSED


def test_intake_deliveries_describes_a_succeeded_execution_once_and_a_failed_one_at_each_call(sfn: Any) -> None:
    # RedriveExecution takes FAILED, TIMED_OUT and ABORTED executions only (the API reference's RedriveExecution,
    # ExecutionNotRedrivable): a succeeded execution's output is final, a failed one may yet succeed.
    intake = ARN  # the stubs answer any state machine alike

    def execution(name: str, status: str, second: int) -> dict[str, Any]:
        arn = client.execution_arn(intake, name)
        return {"executionArn": arn, "stateMachineArn": intake, "name": name, "status": status, "startDate": second}

    done, failed, running = execution("a", "SUCCEEDED", 1), execution("b", "FAILED", 2), execution("c", "RUNNING", 3)
    listed = {"executions": [running, failed, done]}  # newest first
    described = {**done, "output": json.dumps({"deliveries": [{"id": "m1", "outcome": "COMPLETED"}]})}
    described_failed = {**failed, "error": "States.TaskFailed"}
    succeeded: dict[str, list[dict[str, Any]]] = {}
    with Stubber(sfn) as stub:
        stub.add_response("list_executions", listed, {"stateMachineArn": intake})
        stub.add_response("describe_execution", described, {"executionArn": done["executionArn"]})
        stub.add_response("describe_execution", described_failed, {"executionArn": failed["executionArn"]})
        stub.add_response("list_executions", listed, {"stateMachineArn": intake})
        stub.add_response("describe_execution", described_failed, {"executionArn": failed["executionArn"]})
        first = client.intake_deliveries(sfn, intake, succeeded)
        second = client.intake_deliveries(sfn, intake, succeeded)
        stub.assert_no_pending_responses()

    assert first == second == ([{"id": "m1", "outcome": "COMPLETED"}], [described_failed])
    assert succeeded == {done["executionArn"]: [{"id": "m1", "outcome": "COMPLETED"}]}


def test_record_reads_consistently_and_returns_plain_values() -> None:
    ddb = boto3.session.Session().client(
        "dynamodb",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        endpoint_url="http://127.0.0.1:9",
    )
    item = {
        "id": {"S": "payments#x"},
        "status": {"S": "COMPLETED"},
        "ttl": {"N": "1795510011"},
        "resultStored": {"BOOL": True},
    }
    with Stubber(ddb) as stub:
        stub.add_response(
            "get_item",
            {"Item": item},
            {"TableName": "t", "ConsistentRead": True, "Key": {"id": {"S": keys.record_key("payments", "k")}}},
        )
        stub.add_response("get_item", {})
        assert client.record(ddb, "t", "payments", "k") == {
            "id": "payments#x",
            "status": "COMPLETED",
            "ttl": 1795510011,
            "resultStored": True,
        }
        assert client.record(ddb, "t", "payments", "other") is None


def test_stack_output_reads_the_state_machine_arn_of_a_stack() -> None:
    cfn = boto3.session.Session().client(
        "cloudformation", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stack = {
        "StackName": "idemflow",
        "CreationTime": 0,
        "StackStatus": "CREATE_COMPLETE",
        "Outputs": [{"OutputKey": "StateMachineArn", "OutputValue": ARN}],
    }
    with Stubber(cfn) as stub:
        stub.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": "idemflow"})
        stub.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": "idemflow"})
        stub.add_response("list_stack_resources", {"StackResourceSummaries": []}, {"StackName": "idemflow"})
        assert client.stack_output(cfn, "idemflow", "StateMachineArn") == ARN
        with pytest.raises(ValueError, match=r"no output SomeOtherOutput$"):  # no nested stack to name
            client.stack_output(cfn, "idemflow", "SomeOtherOutput")
