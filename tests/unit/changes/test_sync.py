"""``StartSyncExecution`` (``sync.py``): ``start-sync-execution``. For each change, moto 5.2.5's behaviour without it
and the engine's with it."""

from __future__ import annotations

import copy
import json
import os
import time
import urllib.request
from collections.abc import Iterator
from typing import Any, cast

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from idemflow.engine import state
from idemflow.engine.services.stepfunctions import sync
from idemflow.engine.services.stepfunctions.sync import LOCAL_ENDPOINT_CLIENT_CONFIG
from tests.unit.changes.machines import (
    AWS_START_TIME,
    MOTO_CONFIG,
    REGION,
    create_state_machine,
)

pytestmark = pytest.mark.unit


# ---------------------------------------------------------------------------------------------
# start-sync-execution
# ---------------------------------------------------------------------------------------------

ECHO_MACHINE = {
    "StartAt": "Echo",
    "States": {
        "Echo": {
            "Type": "Pass",
            "Parameters": {"got.$": "$", "name.$": "$$.Execution.Name", "t.$": "$$.Execution.StartTime"},
            "End": True,
        }
    },
}
FAIL_MACHINE = {
    "StartAt": "No",
    "States": {"No": {"Type": "Fail", "Error": "Nope", "Cause": "refused on purpose"}},
}


def test_unpatched_moto_5_2_5_has_no_start_sync_execution(unpatched: None, sfn: Any) -> None:
    arn = create_state_machine(sfn, ECHO_MACHINE, "EXPRESS")

    with pytest.raises(ClientError) as raised:
        sfn.start_sync_execution(stateMachineArn=arn, name="a", input="{}")

    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert "Not yet implemented" in str(raised.value)


def test_patched_start_sync_execution_returns_the_result(patched: None, sfn: Any) -> None:
    arn = create_state_machine(sfn, ECHO_MACHINE, "EXPRESS")

    response = sfn.start_sync_execution(stateMachineArn=arn, name="order-42", input='{"a": 1}')

    assert response["status"] == "SUCCEEDED"
    output = json.loads(response["output"])
    assert output["got"] == {"a": 1}
    assert output["name"] == "order-42"
    assert AWS_START_TIME.match(output["t"])
    assert response["executionArn"].startswith(arn.replace(":stateMachine:", ":express:") + ":order-42:")
    assert response["stateMachineArn"] == arn
    assert response["name"] == "order-42"
    assert response["input"] == '{"a": 1}'
    assert response["inputDetails"] == {"included": True}
    assert response["outputDetails"] == {"included": True}
    assert response["startDate"] <= response["stopDate"]
    assert response["billingDetails"]["billedDurationInMilliseconds"] >= 100
    assert response["billingDetails"]["billedMemoryUsedInMB"] == 64
    assert "error" not in response


def test_patched_start_sync_execution_keeps_nothing_of_the_ended_execution(patched: None, sfn: Any) -> None:
    # AWS keeps no Express execution: no event is left to wait on, no copy of the state machine is kept.
    from moto.stepfunctions.models import StateMachine

    from idemflow.engine.services.stepfunctions import execution_end

    arn = create_state_machine(sfn, ECHO_MACHINE, "EXPRESS")
    tracked = len(StateMachine.instances_tracked)  # type: ignore[attr-defined]

    arns = [sfn.start_sync_execution(stateMachineArn=arn, input="{}")["executionArn"] for _ in range(5)]

    assert not set(arns) & set(execution_end._done)
    assert len(StateMachine.instances_tracked) == tracked  # type: ignore[attr-defined]


def test_patched_start_sync_execution_reports_a_failure(patched: None, sfn: Any) -> None:
    arn = create_state_machine(sfn, FAIL_MACHINE, "EXPRESS")

    response = sfn.start_sync_execution(stateMachineArn=arn, input="{}")

    assert response["status"] == "FAILED"
    assert response["error"] == "Nope"
    assert response["cause"] == "refused on purpose"
    assert "output" not in response
    assert response["name"]  # a generated name, like AWS


def test_patched_start_sync_execution_names_may_repeat_like_express(patched: None, sfn: Any) -> None:
    arn = create_state_machine(sfn, ECHO_MACHINE, "EXPRESS")

    first = sfn.start_sync_execution(stateMachineArn=arn, name="same", input="{}")
    second = sfn.start_sync_execution(stateMachineArn=arn, name="same", input='{"b": 2}')

    assert first["status"] == second["status"] == "SUCCEEDED"
    assert first["executionArn"] != second["executionArn"]


def test_patched_start_sync_execution_rejects_standard_and_bad_input(patched: None, sfn: Any) -> None:
    standard = create_state_machine(sfn, ECHO_MACHINE, "STANDARD")
    with pytest.raises(ClientError) as raised:
        sfn.start_sync_execution(stateMachineArn=standard, input="{}")
    assert raised.value.response["Error"]["Code"] == "StateMachineTypeNotSupported"

    express = create_state_machine(sfn, ECHO_MACHINE, "EXPRESS")
    with pytest.raises(ClientError) as raised:
        sfn.start_sync_execution(stateMachineArn=express, input="{not json")
    assert raised.value.response["Error"]["Code"] == "InvalidExecutionInput"

    with pytest.raises(ClientError) as raised:
        sfn.start_sync_execution(stateMachineArn=express + "-missing", input="{}")
    assert raised.value.response["Error"]["Code"] == "StateMachineDoesNotExist"


def test_patched_start_sync_execution_times_out_at_its_deadline(
    patched: None, sfn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    state.update(wait_time_scale=1.0)
    monkeypatch.setattr(sync, "SYNC_EXECUTION_TIMEOUT_SECONDS", 0.2)
    arn = create_state_machine(
        sfn, {"StartAt": "Long", "States": {"Long": {"Type": "Wait", "Seconds": 60, "End": True}}}, "EXPRESS"
    )

    started = time.monotonic()
    response = sfn.start_sync_execution(stateMachineArn=arn, input="{}")

    assert response["status"] == "TIMED_OUT"
    assert time.monotonic() - started < 2.0
    assert "output" not in response


def test_boto3_prefixes_the_host_of_start_sync_execution_unless_told_not_to() -> None:
    """Why the engine's clients need LOCAL_ENDPOINT_CLIENT_CONFIG (checked without any network)."""
    sent: list[str] = []

    class Sent(Exception):
        pass

    def capture(request: Any, **_: Any) -> None:
        sent.append(request.url)
        raise Sent  # stop before anything leaves the process

    for config in (Config(), LOCAL_ENDPOINT_CLIENT_CONFIG):
        client = boto3.client(
            "stepfunctions",
            region_name=REGION,
            endpoint_url="http://127.0.0.1:5999",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=config.merge(Config(retries={"max_attempts": 0})),
        )
        client.meta.events.register("before-send.*", capture)
        with pytest.raises(Sent):
            client.start_sync_execution(stateMachineArn="arn:aws:states:us-east-1:123456789012:stateMachine:x")

    assert sent == ["http://sync-127.0.0.1:5999/", "http://127.0.0.1:5999/"]


@pytest.fixture
def moto_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    from moto.core.config import default_user_config
    from moto.server import ThreadedMotoServer

    user_config = cast(dict[str, Any], default_user_config)
    saved_config = copy.deepcopy(user_config)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    port = server.get_host_and_port()[1]
    endpoint = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("MOTO_PORT", str(port))  # the interpreter's own clients call localhost:$MOTO_PORT
    request = urllib.request.Request(
        f"{endpoint}/moto-api/config", data=json.dumps(MOTO_CONFIG).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status in (200, 201)
    try:
        yield endpoint
    finally:
        reset = urllib.request.Request(f"{endpoint}/moto-api/reset", data=b"", method="POST")
        with urllib.request.urlopen(reset, timeout=10):
            pass
        server.stop()
        user_config.clear()
        user_config.update(saved_config)


def test_patched_start_sync_execution_through_threaded_moto_server(patched: None, moto_server: str) -> None:
    client = boto3.client(
        "stepfunctions",
        region_name=REGION,
        endpoint_url=moto_server,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"max_attempts": 0}).merge(LOCAL_ENDPOINT_CLIENT_CONFIG),
    )
    ok = create_state_machine(client, ECHO_MACHINE, "EXPRESS")
    failing = create_state_machine(client, FAIL_MACHINE, "EXPRESS")

    response = client.start_sync_execution(stateMachineArn=ok, name="via-server", input='{"x": [1, 2]}')
    failed = client.start_sync_execution(stateMachineArn=failing, input="{}")

    assert response["status"] == "SUCCEEDED"
    assert json.loads(response["output"])["got"] == {"x": [1, 2]}
    assert (failed["status"], failed["error"], failed["cause"]) == ("FAILED", "Nope", "refused on purpose")
    assert os.environ["MOTO_PORT"] == moto_server.rsplit(":", 1)[1]
