"""The registry's fixes and engine changes (``idemflow/engine/changes/``) against moto 5.2.5: for each,
moto's behaviour without it and the engine's with it. Sections are named by the registry's names.

The state machines here are tiny inline ones: they test moto's interpreter, not the product.
Nothing waits real seconds: executions are awaited by joining their worker thread
(``patches.wait_for_execution``; without ``worker-thread`` it polls every 50 ms), and races are made
deterministic with barriers rather than left to luck. "Unpatched" is moto with no change installed
(``registry.remove()``), "patched" with every change (``registry.apply()``).
"""

from __future__ import annotations

import copy
import datetime
import json
import logging
import os
import re
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any, cast

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto import mock_aws

from idemflow.engine import patches, registry, state
from idemflow.engine.changes import clock, executions, sync

pytestmark = pytest.mark.unit

MOTO_CONFIG: Any = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
REGION = "us-east-1"
ROLE_ARN = "arn:aws:iam::123456789012:role/stepfunctions"
AWS_START_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


# ---------------------------------------------------------------------------------------------
# Fixtures and helpers
# ---------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _restore_patch_state() -> Iterator[None]:
    """Whatever a test does to the changes, the next test finds them as they were."""
    left_out = registry.left_out()
    scale = state.current().wait_time_scale
    patches.clear_recorded_delays()
    yield
    if left_out is None:
        registry.remove()
    else:
        registry.apply(without=left_out, hooks_too=True)
    state.update(wait_time_scale=scale)
    patches.clear_recorded_delays()


@pytest.fixture(autouse=True)
def _quiet_interpreter() -> Iterator[None]:
    # moto's interpreter logs every failing state at ERROR level with the repr of its whole tree.
    logger = logging.getLogger("moto.stepfunctions.parser")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(level)


@pytest.fixture
def patched() -> None:
    registry.apply()
    state.update(wait_time_scale=0)


@pytest.fixture
def unpatched() -> None:
    registry.remove()


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws(config=MOTO_CONFIG):
        yield


@pytest.fixture
def sfn(aws: None) -> Any:
    return boto3.client("stepfunctions", region_name=REGION)


@pytest.fixture
def ddb(aws: None) -> Any:
    return boto3.client("dynamodb", region_name=REGION)


def create_state_machine(sfn: Any, definition: dict[str, Any], sm_type: str = "STANDARD") -> str:
    arn: str = sfn.create_state_machine(
        name=f"sm-{uuid.uuid4().hex[:12]}",
        definition=json.dumps(definition),
        roleArn=ROLE_ARN,
        type=sm_type,
    )["stateMachineArn"]
    return arn


def run(sfn: Any, state_machine_arn: str, payload: Any = None, timeout: float = 10.0) -> dict[str, Any]:
    """Start an execution, wait for it to end, return describe_execution."""
    execution_arn = start(sfn, state_machine_arn, payload)
    assert patches.wait_for_execution(execution_arn, timeout), "execution did not end in time"
    described: dict[str, Any] = sfn.describe_execution(executionArn=execution_arn)
    return described


def start(sfn: Any, state_machine_arn: str, payload: Any = None) -> str:
    execution_arn: str = sfn.start_execution(
        stateMachineArn=state_machine_arn,
        name=f"e-{uuid.uuid4().hex[:12]}",
        input=json.dumps({} if payload is None else payload),
    )["executionArn"]
    return execution_arn


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)  # >= 50 ms: tighter polling starves the interpreter's threads


def history_types(sfn: Any, execution_arn: str) -> list[str]:
    events = sfn.get_execution_history(executionArn=execution_arn)["events"]
    return [str(e["type"]) for e in events]


def failing_parallel(retry: dict[str, Any], name: str = "Flaky", then: str | None = None) -> dict[str, Any]:
    """A Parallel state whose only branch fails with error "Boom", retried per `retry`."""
    state: dict[str, Any] = {
        "Type": "Parallel",
        "Branches": [{"StartAt": "Explode", "States": {"Explode": {"Type": "Fail", "Error": "Boom", "Cause": "x"}}}],
        "Retry": [{"ErrorEquals": ["Boom"], **retry}],
    }
    if then is None:
        state["End"] = True
    else:
        state["Catch"] = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": then}]
    return {name: state}


# ---------------------------------------------------------------------------------------------
# wait-time scale setting
# ---------------------------------------------------------------------------------------------


def test_wait_time_scale_rejects_nonsense() -> None:
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            state.update(wait_time_scale=bad)
    state.update(wait_time_scale=0.5)
    assert state.current().wait_time_scale == 0.5


# ---------------------------------------------------------------------------------------------
# atomic-writes
# ---------------------------------------------------------------------------------------------


def _create_table(ddb: Any) -> str:
    name = f"locks-{uuid.uuid4().hex[:8]}"
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def _race_conditional_puts(ddb: Any, table: str, threads: int) -> tuple[list[int], list[str]]:
    """`threads` concurrent `attribute_not_exists(pk)` puts of the same key; returns winners and errors."""
    start_line = threading.Barrier(threads)
    winners: list[int] = []
    errors: list[str] = []

    def put(owner: int) -> None:
        start_line.wait(timeout=10)
        try:
            ddb.put_item(
                TableName=table,
                Item={"pk": {"S": "job-1"}, "owner": {"N": str(owner)}},
                ConditionExpression="attribute_not_exists(pk)",
            )
            winners.append(owner)
        except ClientError as error:
            errors.append(error.response["Error"]["Code"])

    workers = [threading.Thread(target=put, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
    return winners, errors


def test_unpatched_moto_5_2_5_loses_conditional_write_race(
    unpatched: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import moto.dynamodb.models.table as table_module

    threads = 8
    # Table.put_item reads the current item, then builds and evaluates the condition. Holding every
    # thread at a barrier between the two makes the race certain: all read "no item", all write.
    inside_window = threading.Barrier(threads)
    original = getattr(table_module, "get_filter_expression")  # noqa: B009 (not re-exported for mypy)

    def condition_after_everyone_has_read(*args: Any, **kwargs: Any) -> Any:
        inside_window.wait(timeout=10)
        return original(*args, **kwargs)

    monkeypatch.setattr(table_module, "get_filter_expression", condition_after_everyone_has_read)
    table = _create_table(ddb)

    winners, errors = _race_conditional_puts(ddb, table, threads)

    assert errors == []
    assert len(winners) == threads  # every "create if absent" succeeded


def test_patched_concurrent_conditional_puts_have_exactly_one_winner(
    patched: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import moto.dynamodb.models.table as table_module

    original = getattr(table_module, "get_filter_expression")  # noqa: B009

    def slow_condition(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.001)  # a wider window than moto's own, to give a race every chance
        return original(*args, **kwargs)

    monkeypatch.setattr(table_module, "get_filter_expression", slow_condition)
    table = _create_table(ddb)

    winners, errors = _race_conditional_puts(ddb, table, 50)

    assert len(winners) == 1
    assert errors == ["ConditionalCheckFailedException"] * 49
    item = ddb.get_item(TableName=table, Key={"pk": {"S": "job-1"}}, ConsistentRead=True)["Item"]
    assert item["owner"] == {"N": str(winners[0])}


# ---------------------------------------------------------------------------------------------
# start-time: $$.Execution.StartTime
# ---------------------------------------------------------------------------------------------

START_TIME_MACHINE = {
    "StartAt": "Stamp",
    "States": {"Stamp": {"Type": "Pass", "Parameters": {"t.$": "$$.Execution.StartTime"}, "End": True}},
}


def test_unpatched_moto_5_2_5_start_time_breaks_describe_execution(unpatched: None, sfn: Any) -> None:
    execution_arn = start(sfn, create_state_machine(sfn, START_TIME_MACHINE))
    assert patches.wait_for_execution(execution_arn, 10)
    # Unpatched, the wait polls the status, which moto sets before the output: wait for the output too (a
    # describe between the two found no output to serialize, under load).
    wait_until(lambda: executions.find_execution(execution_arn).output is not None, 10)

    with pytest.raises(TypeError, match="datetime is not JSON serializable"):
        sfn.describe_execution(executionArn=execution_arn)


def test_patched_start_time_is_an_aws_timestamp(patched: None, sfn: Any) -> None:
    described = run(sfn, create_state_machine(sfn, START_TIME_MACHINE))

    assert described["status"] == "SUCCEEDED"
    start_time = json.loads(described["output"])["t"]
    assert AWS_START_TIME.match(start_time), start_time
    assert start_time == patches.aws_timestamp(described["startDate"])


def test_aws_timestamp_format() -> None:
    moment = datetime.datetime(2026, 11, 23, 9, 26, 0, 123987, tzinfo=datetime.timezone(datetime.timedelta(hours=1)))
    assert patches.aws_timestamp(moment) == "2026-11-23T08:26:00.123Z"
    assert patches.aws_timestamp(datetime.datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05.000Z"


# ---------------------------------------------------------------------------------------------
# atomic-starts
# ---------------------------------------------------------------------------------------------
WAIT_AN_HOUR = {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 3600, "End": True}}}


@pytest.fixture
def held_start(sfn: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """A start of "held" (a one-hour Wait) paused on its own thread after moto listed the execution and
    before it started its worker: the window in which moto 5.2.5 has not set its status yet."""
    from moto.stepfunctions.parser.backend.execution import Execution

    state.update(wait_time_scale=1.0)
    machine = create_state_machine(sfn, WAIT_AN_HOUR)
    inside, release = threading.Event(), threading.Event()
    build_worker = Execution._get_start_execution_worker

    def paused(self: Any) -> Any:
        if self.name == "held":
            inside.set()
            release.wait(10)
        return build_worker(self)

    monkeypatch.setattr(Execution, "_get_start_execution_worker", paused)
    outcome: dict[str, Any] = {}

    def first_start() -> None:
        outcome["start"] = sfn.start_execution(stateMachineArn=machine, name="held", input="{}")

    thread = threading.Thread(target=first_start)
    thread.start()
    assert inside.wait(10), "the first start never reached its worker"
    yield SimpleNamespace(machine=machine, release=release, thread=thread, outcome=outcome)
    release.set()
    thread.join(10)
    if "start" in outcome:
        sfn.stop_execution(executionArn=outcome["start"]["executionArn"])


def test_unpatched_moto_5_2_5_lists_a_starting_execution_without_a_status(
    unpatched: None, held_start: SimpleNamespace, sfn: Any
) -> None:
    # In-process, moto's error escapes as the AttributeError the server turns into an HTTP 500.
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'value'"):
        sfn.list_executions(stateMachineArn=held_start.machine)
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'value'"):
        sfn.start_execution(stateMachineArn=held_start.machine, name="held", input="{}")


def test_patched_a_starting_execution_is_running_and_a_second_start_of_its_name_waits_for_it(
    patched: None, held_start: SimpleNamespace, sfn: Any
) -> None:
    listed = sfn.list_executions(stateMachineArn=held_start.machine)["executions"]
    assert [(e["name"], e["status"]) for e in listed] == [("held", "RUNNING")]
    second: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: second.update(sfn.start_execution(stateMachineArn=held_start.machine, name="held", input="{}"))
    )
    thread.start()

    held_start.release.set()
    thread.join(10)
    held_start.thread.join(10)

    assert second["executionArn"] == held_start.outcome["start"]["executionArn"]
    assert len(sfn.list_executions(stateMachineArn=held_start.machine)["executions"]) == 1


@pytest.fixture
def start_paused_before_listed(sfn: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """A start of "held" paused on its own thread after moto checked that no execution has its name and
    before it listed its own (while it copies the state machine)."""
    from moto.stepfunctions.parser import models

    state.update(wait_time_scale=1.0)
    machine = create_state_machine(sfn, WAIT_AN_HOUR)
    inside, release = threading.Event(), threading.Event()
    deepcopy = copy.deepcopy
    first: dict[str, Any] = {}

    def paused_deepcopy(value: Any, memo: Any = None) -> Any:
        if threading.current_thread() is first.get("thread"):
            inside.set()
            release.wait(10)
        return deepcopy(value, memo)

    monkeypatch.setattr(models, "copy", SimpleNamespace(deepcopy=paused_deepcopy))
    first["thread"] = threading.Thread(
        target=lambda: first.update(sfn.start_execution(stateMachineArn=machine, name="held", input="{}"))
    )
    first["thread"].start()
    assert inside.wait(10), "the first start never copied its state machine"
    yield SimpleNamespace(machine=machine, release=release, first=first)
    release.set()
    first["thread"].join(10)
    for execution in sfn.list_executions(stateMachineArn=machine)["executions"]:
        sfn.stop_execution(executionArn=execution["executionArn"])


def test_unpatched_moto_5_2_5_runs_two_executions_of_one_name_started_at_once(
    unpatched: None, start_paused_before_listed: SimpleNamespace, sfn: Any
) -> None:
    machine = start_paused_before_listed.machine
    second = sfn.start_execution(stateMachineArn=machine, name="held", input="{}")
    start_paused_before_listed.release.set()
    start_paused_before_listed.first["thread"].join(10)

    listed = sfn.list_executions(stateMachineArn=machine)["executions"]
    assert second["executionArn"] == start_paused_before_listed.first["executionArn"]  # the same ARN ...
    assert [e["name"] for e in listed] == ["held", "held"]  # ... for two executions


class SpiedLock:
    """The start lock, telling when a thread other than the first to take it asks for it."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.asked = threading.Event()
        self.first: threading.Thread | None = None

    def __enter__(self) -> None:
        if self.first is None:
            self.first = threading.current_thread()
        elif threading.current_thread() is not self.first:
            self.asked.set()
        self.lock.acquire()

    def __exit__(self, *_: Any) -> None:
        self.lock.release()


@pytest.fixture
def spied_start_lock(monkeypatch: pytest.MonkeyPatch) -> SpiedLock:
    spied = SpiedLock()
    monkeypatch.setattr(executions, "_start_lock", spied)
    return spied


def test_patched_a_start_of_a_name_being_started_waits_and_returns_the_same_execution(
    patched: None, spied_start_lock: SpiedLock, start_paused_before_listed: SimpleNamespace, sfn: Any
) -> None:
    held = start_paused_before_listed
    second: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: second.update(sfn.start_execution(stateMachineArn=held.machine, name="held", input="{}"))
    )
    thread.start()
    assert spied_start_lock.asked.wait(10), "the second start never asked for the start lock"

    held.release.set()
    thread.join(10)
    held.first["thread"].join(10)

    listed = sfn.list_executions(stateMachineArn=held.machine)["executions"]
    assert second["executionArn"] == held.first["executionArn"]
    assert [(e["name"], e["status"]) for e in listed] == [("held", "RUNNING")]


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

    for config in (Config(), patches.LOCAL_ENDPOINT_CLIENT_CONFIG):
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
        config=Config(retries={"max_attempts": 0}).merge(patches.LOCAL_ENDPOINT_CLIENT_CONFIG),
    )
    ok = create_state_machine(client, ECHO_MACHINE, "EXPRESS")
    failing = create_state_machine(client, FAIL_MACHINE, "EXPRESS")

    response = client.start_sync_execution(stateMachineArn=ok, name="via-server", input='{"x": [1, 2]}')
    failed = client.start_sync_execution(stateMachineArn=failing, input="{}")

    assert response["status"] == "SUCCEEDED"
    assert json.loads(response["output"])["got"] == {"x": [1, 2]}
    assert (failed["status"], failed["error"], failed["cause"]) == ("FAILED", "Nope", "refused on purpose")
    assert os.environ["MOTO_PORT"] == moto_server.rsplit(":", 1)[1]


# ---------------------------------------------------------------------------------------------
# parse-cache (a speedup)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def parse_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    calls: list[str] = []
    original = AmazonStateLanguageParser.parse

    def counting_parse(definition: str) -> Any:
        calls.append(definition)
        return original(definition)

    monkeypatch.setattr(AmazonStateLanguageParser, "parse", staticmethod(counting_parse))
    return calls


def _unique_pass_machine() -> dict[str, Any]:
    # A fresh definition text per test, so that whatever an earlier test cached does not count.
    return {
        "Comment": uuid.uuid4().hex,
        "StartAt": "A",
        "States": {
            "A": {"Type": "Pass", "Parameters": {"n.$": "States.MathAdd($.n, 1)"}, "Next": "B"},
            "B": {"Type": "Pass", "Parameters": {"n.$": "States.MathAdd($.n, 1)"}, "End": True},
        },
    }


def test_unpatched_moto_5_2_5_parses_the_definition_for_every_execution(
    unpatched: None, sfn: Any, parse_calls: list[str]
) -> None:
    arn = create_state_machine(sfn, _unique_pass_machine())
    parse_calls.clear()  # create_state_machine parses once to validate

    for n in range(5):
        assert json.loads(run(sfn, arn, {"n": n})["output"]) == {"n": n + 2}

    assert len(parse_calls) == 5


def test_patched_parses_each_definition_once(patched: None, sfn: Any, parse_calls: list[str]) -> None:
    before = patches.parse_cache_info()
    arn = create_state_machine(sfn, _unique_pass_machine())  # validated: parsed once, and kept

    for n in range(5):
        assert json.loads(run(sfn, arn, {"n": n})["output"]) == {"n": n + 2}

    assert len(parse_calls) == 1
    after = patches.parse_cache_info()
    assert (after["misses"] - before["misses"], after["hits"] - before["hits"]) == (1, 5)


def test_patched_a_definition_parsed_for_one_engine_serves_the_next(sfn: Any, parse_calls: list[str]) -> None:
    # Removed and installed again (one engine stopped, the next started in the same process), the change
    # keeps what it parsed: the same text is not parsed again.
    definition = _unique_pass_machine()
    registry.apply()
    try:
        create_state_machine(sfn, definition)
    finally:
        registry.remove()
    assert len(parse_calls) == 1
    registry.apply()
    try:
        arn = create_state_machine(sfn, definition)
        assert json.loads(run(sfn, arn, {"n": 1})["output"]) == {"n": 3}
    finally:
        registry.remove()

    assert len(parse_calls) == 1


@pytest.fixture
def program_dir(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Programs kept in a folder of the test's own."""
    from idemflow.engine.changes import parse_cache

    monkeypatch.setenv(parse_cache.CACHE_DIR_VARIABLE, str(tmp_path))
    folder = parse_cache.program_cache_dir()
    assert folder is not None and folder.is_relative_to(tmp_path)
    return folder


def _forget_programs_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """As a new process starts: nothing parsed in memory (what other tests parsed stays theirs)."""
    import collections

    from idemflow.engine.changes import parse_cache

    monkeypatch.setattr(parse_cache, "_program_cache", collections.OrderedDict())


def test_patched_a_program_kept_on_disk_serves_a_process_that_never_parsed_it(
    patched: None, sfn: Any, parse_calls: list[str], program_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    definition = _unique_pass_machine()
    arn = create_state_machine(sfn, definition)
    first = run(sfn, arn, {"n": 1})
    assert len(parse_calls) == 1 and len(list(program_dir.glob("*.pickle"))) == 1

    _forget_programs_in_memory(monkeypatch)
    before = patches.parse_cache_info()
    arn = create_state_machine(sfn, definition)
    second = run(sfn, arn, {"n": 1})

    assert len(parse_calls) == 1, "parsed again instead of loaded"
    after = patches.parse_cache_info()
    assert (after["loaded"] - before["loaded"], after["misses"] - before["misses"]) == (1, 1)
    assert json.loads(second["output"]) == json.loads(first["output"]) == {"n": 3}


def test_patched_a_kept_program_that_does_not_load_is_parsed_again_and_rewritten(
    patched: None, sfn: Any, parse_calls: list[str], program_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    definition = _unique_pass_machine()
    create_state_machine(sfn, definition)
    (kept,) = program_dir.glob("*.pickle")
    kept.write_bytes(kept.read_bytes()[:100])  # cut short, as by a full disk

    _forget_programs_in_memory(monkeypatch)
    arn = create_state_machine(sfn, definition)

    assert len(parse_calls) == 2
    assert json.loads(run(sfn, arn, {"n": 5})["output"]) == {"n": 7}
    _forget_programs_in_memory(monkeypatch)
    create_state_machine(sfn, definition)
    assert len(parse_calls) == 2, "the rewritten program did not load"


def test_patched_an_empty_cache_dir_variable_keeps_nothing_on_disk(
    patched: None, sfn: Any, parse_calls: list[str], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from idemflow.engine.changes import parse_cache

    monkeypatch.setenv(parse_cache.CACHE_DIR_VARIABLE, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    definition = _unique_pass_machine()
    create_state_machine(sfn, definition)
    _forget_programs_in_memory(monkeypatch)
    create_state_machine(sfn, definition)

    assert parse_cache.program_cache_dir() is None
    assert len(parse_calls) == 2 and not list(tmp_path.rglob("*.pickle"))


def test_patched_the_folder_keeps_only_the_newest_programs(
    patched: None, sfn: Any, program_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from idemflow.engine.changes import parse_cache

    monkeypatch.setattr(parse_cache, "MAX_KEPT_PROGRAMS", 2)
    names = []
    for n in range(4):
        definition = json.dumps(_unique_pass_machine())
        create_state_machine(sfn, json.loads(definition))
        names.append(parse_cache._program_file(definition).name)  # type: ignore[union-attr]
        os.utime(program_dir / names[-1], ns=(n * 10**9, n * 10**9))  # their order, whatever the clock's grain

    assert sorted(f.name for f in program_dir.glob("*")) == sorted(names[2:])


def test_patched_the_folder_keeps_the_programs_most_recently_used_not_written(
    patched: None, sfn: Any, program_dir: Any, parse_calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The project's definition is written once and loaded by every process after it; the definitions a run
    # makes of its own are written later. Kept by write time, it was the first pushed out.
    from idemflow.engine.changes import parse_cache

    monkeypatch.setattr(parse_cache, "MAX_KEPT_PROGRAMS", 2)
    used, other, new = (json.dumps(_unique_pass_machine()) for _ in range(3))
    for n, definition in enumerate((used, other)):
        create_state_machine(sfn, json.loads(definition))
        os.utime(parse_cache._program_file(definition), ns=(n * 10**9, n * 10**9))  # type: ignore[arg-type]

    _forget_programs_in_memory(monkeypatch)  # a later process loads `used` from the folder
    create_state_machine(sfn, json.loads(used))
    assert len(parse_calls) == 2, "loaded, not parsed"
    create_state_machine(sfn, json.loads(new))  # a third program: one of the first two goes

    kept = {f.name for f in program_dir.glob("*")}
    assert kept == {parse_cache._program_file(d).name for d in (used, new)}  # type: ignore[union-attr]


def test_patched_an_invalid_definition_is_refused_as_moto_refuses_it(patched: None, sfn: Any) -> None:
    with pytest.raises(ClientError) as refused:
        create_state_machine(sfn, {"StartAt": "Nowhere", "States": {"A": {"Type": "Unknown", "End": True}}})

    # What moto 5.2.5 answers without the change too (its InvalidDefinition, with an empty code): 400 and
    # the parser's message.
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert refused.value.response["Error"]["Message"].startswith("ASLParserException")


def test_patched_cached_program_is_safe_for_concurrent_executions(patched: None, sfn: Any) -> None:
    """One parsed program, many executions at once: Map, Parallel, Retry counters stay per execution."""
    definition = {
        "Comment": uuid.uuid4().hex,
        "StartAt": "Double",
        "States": {
            "Double": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "Iterator": {
                    "StartAt": "Inc",
                    "States": {"Inc": {"Type": "Pass", "Parameters": {"v.$": "States.MathAdd($, $)"}, "End": True}},
                },
                "ResultPath": "$.doubled",
                "Next": "Flaky",
            },
            **failing_parallel({"IntervalSeconds": 1, "BackoffRate": 3, "MaxAttempts": 2}, then="Done"),
            "Done": {"Type": "Pass", "End": True},
        },
    }
    arn = create_state_machine(sfn, definition)

    executions = {start(sfn, arn, {"items": list(range(i, i + 3))}): i for i in range(12)}

    for execution_arn, i in executions.items():
        assert patches.wait_for_execution(execution_arn, 20)
        described = sfn.describe_execution(executionArn=execution_arn)
        assert described["status"] == "SUCCEEDED"
        output = json.loads(described["output"])
        assert output["doubled"] == [{"v": 2 * v} for v in range(i, i + 3)]
        assert output["error"]["Error"] == "Boom"
        retries = [(d.state_name, d.requested_seconds) for d in patches.recorded_delays(execution_arn)]
        assert retries == [("Flaky", 1.0), ("Flaky", 3.0)]  # each execution its own attempt counter


# ---------------------------------------------------------------------------------------------
# wait-time-scale
# ---------------------------------------------------------------------------------------------

WAIT_THEN_RETRY: dict[str, Any] = {
    "StartAt": "Pause",
    "States": {
        "Pause": {"Type": "Wait", "Seconds": 30, "Next": "Flaky"},
        **failing_parallel({"IntervalSeconds": 10, "BackoffRate": 2, "MaxAttempts": 2}),
    },
}


def test_unpatched_moto_5_2_5_sleeps_real_time(unpatched: None, sfn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import moto.stepfunctions.parser.asl.component.common.retry.retrier_decl as retrier_decl

    state.update(wait_time_scale=0)  # has no effect without the patch
    # Retry: moto calls time.sleep(interval) with the full interval (uninterruptible, so a stopped
    # execution sleeps it out too). A fake clock records the calls instead of sleeping them.
    sleeps: list[float] = []
    monkeypatch.setattr(retrier_decl, "time", SimpleNamespace(sleep=sleeps.append))
    retry_only = {"StartAt": "Flaky", "States": failing_parallel(WAIT_THEN_RETRY["States"]["Flaky"]["Retry"][0])}
    assert run(sfn, create_state_machine(sfn, retry_only))["status"] == "FAILED"
    assert sleeps == [10.0, 20.0]

    # Wait: still waiting after 0.3 s of a 30 s Wait, whatever the scale.
    execution_arn = start(sfn, create_state_machine(sfn, WAIT_THEN_RETRY))
    wait_until(lambda: "WaitStateEntered" in history_types(sfn, execution_arn))
    assert not patches.wait_for_execution(execution_arn, 0.3)
    sfn.stop_execution(executionArn=execution_arn)
    assert patches.wait_for_execution(execution_arn, 5)
    assert patches.recorded_delays() == []


def test_patched_scale_zero_skips_waits_and_records_them(patched: None, sfn: Any) -> None:
    arn = create_state_machine(sfn, WAIT_THEN_RETRY)

    started = time.monotonic()
    described = run(sfn, arn)
    elapsed = time.monotonic() - started

    assert described["status"] == "FAILED"
    assert described["error"] == "Boom"
    assert elapsed < 1.0
    delays = patches.recorded_delays(described["executionArn"])
    assert [(d.kind, d.state_name, d.requested_seconds) for d in delays] == [
        ("wait", "Pause", 30.0),
        ("retry", "Flaky", 10.0),
        ("retry", "Flaky", 20.0),
    ]
    assert all(d.execution_arn == described["executionArn"] for d in delays)
    assert all(d.slept_seconds < 0.05 for d in delays)
    assert patches.recorded_delays("arn:aws:states:us-east-1:123456789012:execution:other:x") == []


def test_patched_retry_delay_includes_max_delay_and_jitter(patched: None, sfn: Any) -> None:
    capped = {"IntervalSeconds": 10, "BackoffRate": 3, "MaxDelaySeconds": 15, "MaxAttempts": 3}
    jittered = {"IntervalSeconds": 8, "BackoffRate": 2, "MaxAttempts": 3, "JitterStrategy": "FULL"}

    capped_run = run(sfn, create_state_machine(sfn, {"StartAt": "Flaky", "States": failing_parallel(capped)}))
    jitter_run = run(sfn, create_state_machine(sfn, {"StartAt": "Flaky", "States": failing_parallel(jittered)}))

    assert [d.requested_seconds for d in patches.recorded_delays(capped_run["executionArn"])] == [10, 15, 15]
    jitter = [d.requested_seconds for d in patches.recorded_delays(jitter_run["executionArn"])]
    assert len(jitter) == 3
    assert all(0 <= got <= cap for got, cap in zip(jitter, [8, 16, 32], strict=True))


def test_patched_scale_shortens_real_waits(patched: None, sfn: Any) -> None:
    state.update(wait_time_scale=0.02)
    definition = {"StartAt": "Pause", "States": {"Pause": {"Type": "Wait", "SecondsPath": "$.s", "End": True}}}

    described = run(sfn, create_state_machine(sfn, definition), {"s": 5})

    assert described["status"] == "SUCCEEDED"
    (delay,) = patches.recorded_delays(described["executionArn"])
    assert delay.requested_seconds == 5
    assert 0.09 <= delay.slept_seconds < 0.6


@pytest.mark.parametrize(
    ("definition", "entered"),
    [
        ({"StartAt": "Pause", "States": {"Pause": {"Type": "Wait", "Seconds": 30, "End": True}}}, "wait"),
        (
            {"StartAt": "Flaky", "States": failing_parallel({"IntervalSeconds": 30, "MaxAttempts": 1})},
            "retry",
        ),
    ],
)
def test_patched_stopped_execution_ends_promptly_at_full_scale(
    patched: None, sfn: Any, monkeypatch: pytest.MonkeyPatch, definition: dict[str, Any], entered: str
) -> None:
    state.update(wait_time_scale=1.0)
    in_delay = threading.Event()
    real_delay = clock._delay

    def spy(env: Any, kind: Any, requested: float) -> None:
        in_delay.set()
        real_delay(env, kind, requested)

    monkeypatch.setattr(clock, "_delay", spy)
    execution_arn = start(sfn, create_state_machine(sfn, definition))
    assert in_delay.wait(5)

    stopped_at = time.monotonic()
    sfn.stop_execution(executionArn=execution_arn)

    assert patches.wait_for_execution(execution_arn, 3)
    assert time.monotonic() - stopped_at < 1.0
    assert sfn.describe_execution(executionArn=execution_arn)["status"] == "ABORTED"
    (delay,) = patches.recorded_delays(execution_arn)
    assert (delay.kind, delay.requested_seconds) == (entered, 30)
    assert delay.slept_seconds < 1.0


@pytest.fixture
def tokyo_time() -> Iterator[None]:
    previous = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Tokyo"  # UTC+9, no daylight saving
    time.tzset()
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = previous
        time.tzset()


def _in_a_minute() -> str:
    return (datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%SZ")


TIMESTAMP_WAIT = {"StartAt": "Until", "States": {"Until": {"Type": "Wait", "TimestampPath": "$.until", "End": True}}}


def test_unpatched_moto_5_2_5_wait_timestamp_uses_local_time(unpatched: None, tokyo_time: None, sfn: Any) -> None:
    # The Wait should last 60 s; moto compares the UTC timestamp with local time (9 h ahead): none.
    started = time.monotonic()
    described = run(sfn, create_state_machine(sfn, TIMESTAMP_WAIT), {"until": _in_a_minute()}, timeout=5)
    assert described["status"] == "SUCCEEDED"
    assert time.monotonic() - started < 5


def test_patched_wait_timestamp_is_compared_with_utc(patched: None, tokyo_time: None, sfn: Any) -> None:
    described = run(sfn, create_state_machine(sfn, TIMESTAMP_WAIT), {"until": _in_a_minute()})

    assert described["status"] == "SUCCEEDED"
    (delay,) = patches.recorded_delays(described["executionArn"])
    assert (delay.kind, delay.state_name) == ("wait", "Until")
    assert 55 <= delay.requested_seconds <= 60


# ---------------------------------------------------------------------------------------------
# timestamps: like AWS's
# ---------------------------------------------------------------------------------------------

COMPARE_TIMES = {
    "StartAt": "Stamp",
    "States": {
        "Stamp": {
            "Type": "Pass",
            "Parameters": {"a.$": "$.a", "b.$": "$.b", "entered.$": "$$.State.EnteredTime"},
            "Next": "Compare",
        },
        "Compare": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.a", "TimestampLessThanPath": "$.b", "Next": "Earlier"}],
            "Default": "NotEarlier",
        },
        "Earlier": {"Type": "Pass", "Result": "earlier", "ResultPath": "$.verdict", "End": True},
        "NotEarlier": {"Type": "Pass", "Result": "not earlier", "ResultPath": "$.verdict", "End": True},
    },
}
# 08:00:00.250 UTC is earlier than 10:00 at UTC+1 (09:00 UTC): AWS takes the "Earlier" branch.
TIMES = {"a": "2026-11-23T08:00:00.250Z", "b": "2026-11-23T10:00:00+01:00"}


def test_unpatched_moto_5_2_5_timestamps_with_fractions_or_offsets_never_compare(unpatched: None, sfn: Any) -> None:
    output = json.loads(run(sfn, create_state_machine(sfn, COMPARE_TIMES), TIMES)["output"])

    assert output["verdict"] == "not earlier"
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$", output["entered"])


def test_patched_timestamps_compare_like_aws(patched: None, sfn: Any) -> None:
    output = json.loads(run(sfn, create_state_machine(sfn, COMPARE_TIMES), TIMES)["output"])

    assert output["verdict"] == "earlier"
    assert AWS_START_TIME.match(output["entered"]), output["entered"]


def test_parse_rfc3339() -> None:
    utc = datetime.UTC
    assert patches.parse_rfc3339("2026-11-23T08:00:00Z") == datetime.datetime(2026, 11, 23, 8, tzinfo=utc)
    assert patches.parse_rfc3339("2026-11-23T08:00:00.25Z") == datetime.datetime(
        2026, 11, 23, 8, 0, 0, 250000, tzinfo=utc
    )
    assert patches.parse_rfc3339("2026-11-23T08:00:00.123456789-02:30") == datetime.datetime(
        2026, 11, 23, 10, 30, 0, 123456, tzinfo=utc
    )
    for bad in ("2026-11-23 08:00:00Z", "2026-11-23T08:00:00", "2026-02-30T08:00:00Z", "yesterday", 5, None):
        assert patches.parse_rfc3339(bad) is None


# ---------------------------------------------------------------------------------------------
# thread-list: finished interpreter threads let go; worker-thread
# ---------------------------------------------------------------------------------------------
PASS_ONLY: dict[str, Any] = {"StartAt": "Only", "States": {"Only": {"Type": "Pass", "End": True}}}


def thread_list() -> list[Any]:
    from moto.stepfunctions.parser.asl.component.program import program

    threads: list[Any] = program.TMP_THREADS
    return threads


def test_unpatched_moto_5_2_5_keeps_every_interpreter_thread(unpatched: None, sfn: Any) -> None:
    machine = create_state_machine(sfn, PASS_ONLY)
    before = len(thread_list())

    for _ in range(20):
        run(sfn, machine)

    assert len(thread_list()) >= before + 20
    assert not any(t.is_alive() for t in thread_list()[before:])  # all finished, all kept


def test_patched_lets_finished_threads_go(patched: None, sfn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executions, "PRUNE_EVERY", 8)
    machine = create_state_machine(sfn, PASS_ONLY)

    for _ in range(40):
        run(sfn, machine)

    assert len(thread_list()) < 8 + 2  # what has finished since the last pass, and what still runs


def test_patched_thread_list_is_one_list_for_every_module(patched: None) -> None:
    from moto.stepfunctions.parser import utils
    from moto.stepfunctions.parser.asl.component.state.exec import execute_state
    from moto.stepfunctions.parser.backend import execution_worker

    assert utils.TMP_THREADS is thread_list() is execute_state.TMP_THREADS is execution_worker.TMP_THREADS


def test_patched_ended_execution_lets_its_thread_go(patched: None, sfn: Any) -> None:
    machine = create_state_machine(sfn, PASS_ONLY)
    done = run(sfn, machine)

    execution = executions.find_execution(done["executionArn"])
    assert patches.wait_for_execution(done["executionArn"], timeout=0)  # answered from the status
    # The thread drops itself as its last step, just after the status is final.
    wait_until(lambda: not hasattr(execution.exec_worker, executions.THREAD_ATTR))


PAUSE_30: dict[str, Any] = {"StartAt": "Pause", "States": {"Pause": {"Type": "Wait", "Seconds": 30, "End": True}}}


def test_unpatched_moto_5_2_5_keeps_no_thread_to_join(unpatched: None, sfn: Any) -> None:
    execution_arn = start(sfn, create_state_machine(sfn, PAUSE_30))

    wait_until(lambda: "WaitStateEntered" in history_types(sfn, execution_arn))
    execution = executions.find_execution(execution_arn)
    assert execution.status == "RUNNING"
    assert getattr(execution.exec_worker, executions.THREAD_ATTR, None) is None  # only its status to poll
    sfn.stop_execution(executionArn=execution_arn)
    assert patches.wait_for_execution(execution_arn, 5)


def test_patched_a_running_execution_has_a_thread_to_join(patched: None, sfn: Any) -> None:
    state.update(wait_time_scale=1.0)
    execution_arn = start(sfn, create_state_machine(sfn, PAUSE_30))

    wait_until(lambda: "WaitStateEntered" in history_types(sfn, execution_arn))
    thread = getattr(executions.find_execution(execution_arn).exec_worker, executions.THREAD_ATTR)
    assert thread.is_alive()
    sfn.stop_execution(executionArn=execution_arn)
    thread.join(5)
    assert not thread.is_alive()
    assert sfn.describe_execution(executionArn=execution_arn)["status"] == "ABORTED"


# ---------------------------------------------------------------------------------------------
# payload-size, dynamodb-task-failures
# ---------------------------------------------------------------------------------------------
# AWS: at most 262,144 bytes "as a UTF-8 encoded string" (service quotas page; API reference:
# "Maximum length of 262144"), checked on a state's output and, "after Parameters processing", on a
# state's input (concepts-error-handling, States.DataLimitExceeded).
def _output_of(n: int) -> dict[str, Any]:
    """A state machine whose Pass state outputs {"r": "é" * n}: 2n + 8 bytes of compact UTF-8 JSON."""
    return {
        "StartAt": "Make",
        "States": {"Make": {"Type": "Pass", "Result": "é" * n, "ResultPath": "$.r", "End": True}},
    }


def test_unpatched_moto_5_2_5_counts_escaped_ascii_not_utf8(unpatched: None, sfn: Any) -> None:
    # 262,128 bytes of UTF-8 (under the quota) are 786,000+ characters once "é" is escaped as \u00e9.
    described = run(sfn, create_state_machine(sfn, _output_of(131_060)))

    assert described["status"] == "FAILED" and described["error"] == "States.DataLimitExceeded"


@pytest.mark.parametrize(("n", "status"), [(131_068, "SUCCEEDED"), (131_069, "FAILED")])
def test_patched_output_size_is_utf8_bytes_up_to_the_quota_inclusive(
    patched: None, sfn: Any, n: int, status: str
) -> None:
    assert patches.payload_bytes({"r": "é" * n}) == 2 * n + 8  # 262,144 and 262,146

    described = run(sfn, create_state_machine(sfn, _output_of(n)))

    assert described["status"] == status, described.get("cause")


def _doubling_put(table: str) -> dict[str, Any]:
    """A putItem whose Parameters use the input's string twice: its input after Parameters is twice as big."""
    return {
        "StartAt": "Put",
        "States": {
            "Put": {
                "Type": "Task",
                "Resource": "arn:aws:states:::dynamodb:putItem",
                "Parameters": {
                    "TableName": table,
                    "Item": {"id": {"S": "k"}, "a": {"S.$": "$.s"}, "b": {"S.$": "$.s"}},
                },
                "Catch": [{"ErrorEquals": ["States.DataLimitExceeded"], "ResultPath": "$.error", "Next": "Caught"}],
                "ResultPath": None,
                "End": True,
            },
            "Caught": {"Type": "Pass", "Parameters": {"error.$": "$.error.Error"}, "End": True},
        },
    }


@pytest.fixture
def small_table(ddb: Any) -> str:
    ddb.create_table(
        TableName="sizes",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return "sizes"


def test_unpatched_moto_5_2_5_never_checks_a_tasks_input_after_parameters(
    unpatched: None, sfn: Any, ddb: Any, small_table: str
) -> None:
    described = run(sfn, create_state_machine(sfn, _doubling_put(small_table)), {"s": "x" * 140_000})

    assert described["status"] == "SUCCEEDED" and "error" not in json.loads(described["output"])
    assert "Item" in ddb.get_item(TableName=small_table, Key={"id": {"S": "k"}})


def test_patched_a_tasks_input_after_parameters_over_the_quota_fails_it_before_its_request(
    patched: None, sfn: Any, ddb: Any, small_table: str
) -> None:
    described = run(sfn, create_state_machine(sfn, _doubling_put(small_table)), {"s": "x" * 140_000})

    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == {"error": "States.DataLimitExceeded"}  # caught by name
    assert "Item" not in ddb.get_item(TableName=small_table, Key={"id": {"S": "k"}}), "the request was sent"


def test_unpatched_moto_5_2_5_names_a_dynamodb_tasks_own_failure_amazon_dynamodb_exception(
    sfn: Any, ddb: Any, small_table: str
) -> None:
    # Every change but dynamodb-task-failures: payload-size fails the task with its own failure event
    # (States.DataLimitExceeded, as AWS: docs, concepts-error-handling), which moto's DynamoDB task renames.
    registry.apply(without=["dynamodb-task-failures"])
    state.update(wait_time_scale=0)

    described = run(sfn, create_state_machine(sfn, _doubling_put(small_table)), {"s": "x" * 140_000})

    assert described["status"] == "FAILED"  # the Catch on States.DataLimitExceeded never matched
    assert described["error"] == "DynamoDB.AmazonDynamoDBException"
    assert "Item" not in ddb.get_item(TableName=small_table, Key={"id": {"S": "k"}})


# ---------------------------------------------------------------------------------------------
# sfn-task-casing, sync-child-end: a state machine starting another (.sync, .sync:2)
# ---------------------------------------------------------------------------------------------
def _starting(child_arn: str) -> dict[str, Any]:
    return {
        "StartAt": "Start",
        "States": {
            "Start": {
                "Type": "Task",
                "Resource": "arn:aws:states:::states:startExecution.sync:2",
                "Parameters": {"StateMachineArn": child_arn, "Input": {"n": 1}},
                "End": True,
            }
        },
    }


_CHILD = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}


def test_unpatched_moto_5_2_5_refuses_a_start_execution_tasks_state_machine_arn(unpatched: None, sfn: Any) -> None:
    child = create_state_machine(sfn, _CHILD)

    described = run(sfn, create_state_machine(sfn, _starting(child)))

    # botocore's StartExecution has stateMachineArn; moto hands it StateMachineArn as written.
    assert described["status"] == "FAILED"
    assert described["error"] == "States.Runtime"
    assert sfn.list_executions(stateMachineArn=child)["executions"] == []


def test_patched_a_start_execution_task_starts_the_child_and_answers_in_states_casing(patched: None, sfn: Any) -> None:
    child = create_state_machine(sfn, _CHILD)

    described = run(sfn, create_state_machine(sfn, _starting(child)))

    assert described["status"] == "SUCCEEDED", described.get("cause")
    output = json.loads(described["output"])
    assert (output["Status"], output["Output"], output["Input"]) == ("SUCCEEDED", {"n": 1}, {"n": 1})
    assert [e["executionArn"] for e in sfn.list_executions(stateMachineArn=child)["executions"]] == [
        output["ExecutionArn"]
    ]


def test_unpatched_moto_5_2_5_polls_a_sync_child_every_half_second(sfn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_callback

    registry.apply(without=["sync-child-end"])
    state.update(wait_time_scale=0)
    # The child waits (Wait state, released below) so that the parent's first look finds it running.
    gate = threading.Event()
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        gate.set()
        time.sleep(0.01)

    monkeypatch.setattr(state_task_service_callback, "time", SimpleNamespace(sleep=sleep))
    child = create_state_machine(
        sfn, {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 1, "End": True}}}
    )
    state.update(wait_time_scale=1.0)
    execution = start(sfn, create_state_machine(sfn, _starting(child)))
    assert gate.wait(5), "the parent never polled"
    state.update(wait_time_scale=0)
    assert patches.wait_for_execution(execution, 10)

    assert sleeps and set(sleeps) == {0.5}  # DescribeExecution, then 0.5 s of real time, again and again


def test_patched_a_sync_task_learns_its_childs_end_without_sleeping(
    patched: None, sfn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_callback

    sleeps: list[float] = []
    monkeypatch.setattr(state_task_service_callback, "time", SimpleNamespace(sleep=sleeps.append))
    hold = {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 3600, "End": True}}}
    child = create_state_machine(sfn, hold)
    state.update(wait_time_scale=1.0)  # the child holds until it is stopped, below
    execution = start(sfn, create_state_machine(sfn, _starting(child)))
    wait_until(lambda: "TaskSubmitted" in history_types(sfn, execution))
    (child_execution,) = sfn.list_executions(stateMachineArn=child)["executions"]
    wait_until(lambda: "WaitStateEntered" in history_types(sfn, child_execution["executionArn"]))
    sfn.stop_execution(executionArn=child_execution["executionArn"])

    assert patches.wait_for_execution(execution, 10)
    assert sfn.describe_execution(executionArn=execution)["error"] == "States.TaskFailed"  # ABORTED child
    assert sleeps == []  # the child was running when the parent first looked, and its end woke the parent
