"""The registry's hooks, and the speedups that need a server, against moto 5.2.5: for each, what moto
does without it and with it. Named by the registry's names.

Wired like ``Engine._start`` (``registry.apply``, config, a ThreadedMotoServer on a free port,
``MOTO_PORT``, a LambdaRuntime, the engine state), with tiny inline state machines: these test the
engine's changes to moto, not the product. A test shows moto's own behaviour by leaving one change out
(``registry.apply(without=[name], hooks_too=True)``); an autouse fixture installs every change again
before the next test. The module leaves global state as it found it: the registry, moto's config and
backends, ``MOTO_PORT``.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import jsonpath_ng.parser
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto.core.config import default_user_config
from moto.server import ThreadedMotoServer

from idemflow.engine import hooks, patches, registry, state
from idemflow.engine.changes import clients, execution_end
from idemflow.engine.faults import Faults
from idemflow.engine.lambda_runtime import Function, LambdaRuntime
from idemflow.engine.server import EngineServer

REGION = "us-east-1"
ACCOUNT = "123456789012"
FIXTURE_CODE = Path(__file__).parents[1] / "functional" / "fixtures" / "functions" / "basic"
FUNCTION_NAME = "hooks-basic"
TABLE = "hooks-table"
SERVICES = ("stepfunctions", "dynamodb", "lambda", "iam")


@dataclass
class Moto:
    endpoint: str
    port: int
    runtime: LambdaRuntime
    faults: Faults
    function_arn: str
    role_arn: str
    clients: dict[str, Any]
    machines: dict[str, str]

    def client(self, service: str) -> Any:
        if service not in self.clients:
            self.clients[service] = boto3.session.Session().client(
                service,
                endpoint_url=self.endpoint,
                region_name=REGION,
                aws_access_key_id="local",
                aws_secret_access_key="local",
                config=Config(retries={"max_attempts": 0}),
            )
        return self.clients[service]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def lambda_machine(function_arn: str) -> dict[str, Any]:
    return {
        "StartAt": "CallFunction",
        "States": {
            "CallFunction": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": function_arn, "Payload.$": "$"},
                "OutputPath": "$.Payload",
                "End": True,
            },
        },
    }


PUT_MACHINE: dict[str, Any] = {
    "StartAt": "PutRecord",
    "States": {
        "PutRecord": {
            "Type": "Task",
            "Resource": "arn:aws:states:::dynamodb:putItem",
            "Parameters": {
                "TableName": TABLE,
                "Item": {"id": {"S.$": "$.id"}, "by": {"S": "PutRecord"}},
                "ConditionExpression": "attribute_not_exists(id)",
            },
            "ResultPath": "$.put",
            "Next": "Done",
        },
        "Done": {"Type": "Pass", "Parameters": {"id.$": "$.id", "stored": True}, "End": True},
    },
}


@pytest.fixture(scope="module")
def moto() -> Iterator[Moto]:
    # What this module changes, to put back afterwards.
    saved_config = copy.deepcopy(default_user_config)
    saved_port = os.environ.get("MOTO_PORT")
    left_out = registry.left_out()
    saved_state = state.current()
    interpreter_logger = logging.getLogger("moto.stepfunctions.parser")
    saved_level = interpreter_logger.level

    # The order of Engine._start.
    registry.apply()
    state.update(wait_time_scale=0)
    default_user_config.setdefault("stepfunctions", {})["execute_state_machine"] = True
    default_user_config.setdefault("lambda", {})["use_docker"] = False
    interpreter_logger.setLevel(logging.CRITICAL)  # failing states are logged with their whole tree
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    runtime: LambdaRuntime | None = None
    try:
        port = server.get_host_and_port()[1]
        endpoint = f"http://127.0.0.1:{port}"
        os.environ["MOTO_PORT"] = str(port)
        faults = Faults()
        runtime = LambdaRuntime(endpoint, REGION, faults, timeout_scale=0.02)
        state.update(lambda_runtime=runtime, faults=faults)
        env = Moto(endpoint, port, runtime, faults, "", "", {}, {})

        env.role_arn = env.client("iam").create_role(
            RoleName="hooks-test",
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
        )["Role"]["Arn"]
        env.client("dynamodb").create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        env.function_arn = env.client("lambda").create_function(
            FunctionName=FUNCTION_NAME,
            Runtime="python3.11",
            Role=env.role_arn,
            Handler="app.handler",
            Code={"ZipFile": b"local"},
            Timeout=300,
            MemorySize=128,
        )["FunctionArn"]
        runtime.register(
            Function(
                logical_id="HooksFunction",
                name=FUNCTION_NAME,
                arn=env.function_arn,
                code_dir=FIXTURE_CODE,
                handler="app.handler",
                runtime="python3.11",
                timeout=300,
                memory_mb=128,
                environment={},
            ),
            warm=True,
        )
        for name, definition in (("lambda", lambda_machine(env.function_arn)), ("put", PUT_MACHINE)):
            env.machines[name] = env.client("stepfunctions").create_state_machine(
                name=f"hooks-{name}",
                definition=json.dumps(definition),
                roleArn=env.role_arn,
            )["stateMachineArn"]
        yield env
    finally:
        if runtime is not None:
            runtime.close()
        server.stop()
        from moto.backends import get_backend

        for service in SERVICES:
            get_backend(service).reset()  # type: ignore[call-overload]
        if saved_port is None:
            os.environ.pop("MOTO_PORT", None)
        else:
            os.environ["MOTO_PORT"] = saved_port
        default_user_config.clear()  # type: ignore[attr-defined]
        default_user_config.update(saved_config)  # type: ignore[typeddict-item]
        if left_out is None:
            registry.remove()
        else:
            registry.apply(without=left_out, hooks_too=True)
        state.install(saved_state)
        interpreter_logger.setLevel(saved_level)


@pytest.fixture(autouse=True)
def hooked(moto: Moto) -> Iterator[None]:
    """Every test starts with every change installed (a test may leave one out) and no pending fault."""
    registry.apply()
    state.update(lambda_runtime=moto.runtime, faults=moto.faults)
    yield
    registry.apply()
    state.update(lambda_runtime=moto.runtime, faults=moto.faults)
    moto.faults.clear()


def leave_out(name: str) -> None:
    registry.apply(without=[name], hooks_too=True)


def run(moto: Moto, machine: str, execution_input: Any) -> dict[str, Any]:
    """Start an execution, wait for it to end (by joining its thread: works with and without the hooks)."""
    sfn = moto.client("stepfunctions")
    arn = sfn.start_execution(
        stateMachineArn=moto.machines[machine], name=f"e-{uuid.uuid4().hex[:12]}", input=json.dumps(execution_input)
    )["executionArn"]
    assert patches.wait_for_execution(arn, timeout=20), "the execution did not end"
    hooks.forget_execution(arn)  # the hook keeps an event per execution until it is forgotten
    described: dict[str, Any] = sfn.describe_execution(executionArn=arn)
    return described


def history(moto: Moto, execution_arn: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = moto.client("stepfunctions").get_execution_history(executionArn=execution_arn)[
        "events"
    ]
    return events


def task_failures(moto: Moto, execution_arn: str) -> list[tuple[str, str]]:
    return [
        (e["taskFailedEventDetails"]["error"], e["taskFailedEventDetails"].get("cause", ""))
        for e in history(moto, execution_arn)
        if e["type"] == "TaskFailed"
    ]


def stored(moto: Moto, item_id: str) -> dict[str, Any] | None:
    item: dict[str, Any] | None = (
        moto.client("dynamodb").get_item(TableName=TABLE, Key={"id": {"S": item_id}}, ConsistentRead=True).get("Item")
    )
    return item


# -- lambda-invoke: Lambda Invoke goes to the local runtime ------------------------------------------
def test_lambda_task_reaches_the_local_runtime(moto: Moto) -> None:
    done = run(moto, "lambda", {"hello": "world"})

    assert done["status"] == "SUCCEEDED", done
    output = json.loads(done["output"])
    assert output["mark"] == "basic"  # the handler's return value
    assert output["event"] == {"hello": "world"}
    assert output["function_name"] == FUNCTION_NAME
    assert output["pid"] != os.getpid()
    assert moto.runtime.invocations(FUNCTION_NAME)[-1].event == {"hello": "world"}


def test_without_the_hook_moto_only_echoes_the_request(moto: Moto) -> None:
    before = len(moto.runtime.invocations(FUNCTION_NAME))
    leave_out("lambda-invoke")

    done = run(moto, "lambda", {"hello": "world"})

    assert done["status"] == "SUCCEEDED", done
    assert json.loads(done["output"]) == {"hello": "world"}
    assert len(moto.runtime.invocations(FUNCTION_NAME)) == before


def test_handler_exception_is_the_states_error(moto: Moto) -> None:
    done = run(moto, "lambda", {"action": "raise", "message": "no such customer"})

    assert done["status"] == "FAILED"
    assert done["error"] == "ValueError"  # the errorType, through X-Amz-Function-Error: Unhandled
    assert json.loads(done["cause"])["errorMessage"] == "no such customer"


@pytest.mark.parametrize("error", ["Lambda.TooManyRequestsException", "Lambda.ServiceException"])
def test_lambda_service_error_is_the_states_error(moto: Moto, error: str) -> None:
    moto.faults.fail_next(FUNCTION_NAME, error=error, message="injected")

    done = run(moto, "lambda", {})

    assert done["status"] == "FAILED"
    assert done["error"] == error
    assert moto.runtime.invocations(FUNCTION_NAME)[-1].outcome == "injected"


# -- dynamodb-task: DynamoDB task faults per state name ---------------------------------------------
def test_throttle_next_fails_that_states_dynamodb_call(moto: Moto) -> None:
    moto.faults.throttle_next("PutRecord")
    item_id = f"throttled-{uuid.uuid4()}"

    done = run(moto, "put", {"id": item_id})

    assert done["status"] == "FAILED"
    assert done["error"] == "DynamoDB.ProvisionedThroughputExceededException"
    failures = task_failures(moto, done["executionArn"])
    assert [error for error, _ in failures] == ["DynamoDB.ProvisionedThroughputExceededException"]
    assert "Service: AmazonDynamoDBv2; Status Code: 400" in failures[0][1]
    assert stored(moto, item_id) is None
    assert moto.faults.pending() == {}
    assert run(moto, "put", {"id": item_id})["status"] == "SUCCEEDED", "the fault was not used up"


def test_without_the_hook_the_dynamodb_call_is_not_throttled(moto: Moto) -> None:
    leave_out("dynamodb-task")
    moto.faults.throttle_next("PutRecord")
    item_id = f"unthrottled-{uuid.uuid4()}"

    done = run(moto, "put", {"id": item_id})

    assert done["status"] == "SUCCEEDED", done
    assert stored(moto, item_id) is not None
    assert moto.faults.pending() == {"dynamodb:PutRecord": 1}


def test_throttle_is_per_state_name(moto: Moto) -> None:
    moto.faults.throttle_next("SomeOtherState")

    assert run(moto, "put", {"id": f"other-{uuid.uuid4()}"})["status"] == "SUCCEEDED"
    assert moto.faults.pending() == {"dynamodb:SomeOtherState": 1}


def test_lost_dynamodb_response_after_the_write(moto: Moto) -> None:
    moto.faults.lose_dynamodb_response_next("PutRecord")
    item_id = f"lost-{uuid.uuid4()}"

    done = run(moto, "put", {"id": item_id})

    assert done["status"] == "FAILED"
    assert done["error"] == "DynamoDB.InternalServerErrorException"
    assert "Status Code: 500" in task_failures(moto, done["executionArn"])[0][1]
    assert stored(moto, item_id) is not None, "the write should have happened before the response was lost"


def test_before_dynamodb_runs_just_before_the_call(moto: Moto) -> None:
    item_id = f"raced-{uuid.uuid4()}"

    def another_writer() -> None:
        moto.client("dynamodb").put_item(TableName=TABLE, Item={"id": {"S": item_id}, "by": {"S": "another"}})

    moto.faults.before_dynamodb("PutRecord", another_writer)

    done = run(moto, "put", {"id": item_id})

    assert done["status"] == "FAILED"
    assert done["error"] == "DynamoDB.ConditionalCheckFailedException"
    assert stored(moto, item_id) == {"id": {"S": item_id}, "by": {"S": "another"}}


# -- execution-end: the end of an execution sets an event --------------------------------------------
@pytest.mark.parametrize(
    ("machine", "execution_input", "status"), [("lambda", {}, "SUCCEEDED"), ("lambda", {"action": "raise"}, "FAILED")]
)
def test_execution_done_is_set_when_the_execution_ends(
    moto: Moto, machine: str, execution_input: Any, status: str
) -> None:
    sfn = moto.client("stepfunctions")
    arn = sfn.start_execution(
        stateMachineArn=moto.machines[machine], name=f"e-{uuid.uuid4().hex[:12]}", input=json.dumps(execution_input)
    )["executionArn"]

    assert hooks.execution_done(arn).wait(timeout=20)
    assert sfn.describe_execution(executionArn=arn)["status"] == status
    hooks.forget_execution(arn)


def test_without_the_hook_execution_done_is_never_set(moto: Moto) -> None:
    leave_out("execution-end")
    done = run(moto, "lambda", {})

    assert done["status"] == "SUCCEEDED"
    assert not hooks.execution_done(done["executionArn"]).is_set()
    hooks.forget_execution(done["executionArn"])


def test_execution_done_before_the_end_is_not_set(moto: Moto, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    sfn = moto.client("stepfunctions")
    sleepy = {"action": "sleep", "seconds": 0.3, "ready": str(ready)}
    arn = sfn.start_execution(
        stateMachineArn=moto.machines["lambda"], name=f"e-{uuid.uuid4().hex[:12]}", input=json.dumps(sleepy)
    )["executionArn"]
    event = hooks.execution_done(arn)
    deadline = time.monotonic() + 10
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.01)

    assert ready.exists() and not event.is_set(), "set while the execution was still running"
    assert event.wait(timeout=20)
    hooks.forget_execution(arn)


# -- in-process-clients (a speedup): the interpreter's clients, cached, dispatched in-process ---------
@pytest.fixture
def client_constructions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    made: list[str] = []
    original = botocore.session.Session.create_client

    def counting(self: Any, service_name: str, *args: Any, **kwargs: Any) -> Any:
        made.append(service_name)
        return original(self, service_name, *args, **kwargs)

    monkeypatch.setattr(botocore.session.Session, "create_client", counting)
    return made


def run_puts(moto: Moto, count: int) -> None:
    for _ in range(count):
        assert run(moto, "put", {"id": f"cached-{uuid.uuid4()}"})["status"] == "SUCCEEDED"


def test_interpreter_clients_are_cached(moto: Moto, client_constructions: list[str]) -> None:
    run_puts(moto, 1)  # may build the cached client
    built = len(client_constructions)

    run_puts(moto, 6)

    assert built <= 1
    assert len(client_constructions) == built, client_constructions


def test_without_the_speedup_each_task_builds_a_client(moto: Moto, client_constructions: list[str]) -> None:
    leave_out("in-process-clients")

    run_puts(moto, 6)

    assert client_constructions.count("dynamodb") >= 6


def test_interpreter_clients_do_not_go_through_http(moto: Moto, monkeypatch: pytest.MonkeyPatch) -> None:
    # Nothing listens on MOTO_PORT: only a client dispatched in-process can reach moto.
    monkeypatch.setenv("MOTO_PORT", str(free_port()))

    put = run(moto, "put", {"id": f"in-process-{uuid.uuid4()}"})
    invoked = run(moto, "lambda", {"in": "process"})

    assert put["status"] == "SUCCEEDED", put
    assert invoked["status"] == "SUCCEEDED", invoked
    assert json.loads(invoked["output"])["event"] == {"in": "process"}


def test_without_the_speedup_interpreter_clients_call_moto_port(moto: Moto, monkeypatch: pytest.MonkeyPatch) -> None:
    leave_out("in-process-clients")
    monkeypatch.setenv("MOTO_PORT", str(free_port()))

    done = run(moto, "put", {"id": f"http-{uuid.uuid4()}"})

    assert done["status"] == "FAILED"
    assert "Could not connect to the endpoint URL" in (done.get("cause") or ""), done


@pytest.fixture
def url_pattern_matches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every service URL pattern moto's stubber tries against a request URL."""
    import moto.backend_index as backend_index

    tried: list[str] = []

    class Counting:
        def __init__(self, service: str, pattern: Any):
            self.service, self.pattern = service, pattern

        def match(self, url: str) -> Any:
            tried.append(self.service)
            return self.pattern.match(url)

    counted = [(service, Counting(service, pattern)) for service, pattern in backend_index.backend_url_patterns]
    monkeypatch.setattr(backend_index, "backend_url_patterns", counted)
    clients._routes.clear()
    return tried


def test_in_process_requests_find_their_handler_once_per_url(moto: Moto, url_pattern_matches: list[str]) -> None:
    run_puts(moto, 1)
    first = len(url_pattern_matches)

    run_puts(moto, 5)

    assert first > 0  # the first request of each URL looks it up
    assert len(url_pattern_matches) == first, "later requests looked their URL up again"


def test_moto_stubber_tries_the_url_patterns_on_every_request(moto: Moto, url_pattern_matches: list[str]) -> None:
    # What dispatch_in_process did before its cache: hand each request to moto's stubber.
    from botocore.awsrequest import AWSResponse
    from moto.core.botocore_stubber import MockRawResponse
    from moto.core.models import botocore_stubber

    def moto_stubber(request: Any, **_: Any) -> Any:
        status, headers, body = botocore_stubber.process_request(request)
        return AWSResponse(request.url, status, headers, MockRawResponse(body))

    client = boto3.session.Session().client(
        "dynamodb", region_name=REGION, aws_access_key_id="ak", aws_secret_access_key="sk"
    )
    client.meta.events.register("before-send", moto_stubber)

    for _ in range(5):
        client.list_tables()

    # dynamodb comes ~30 services into moto's list, and the walk starts over on every request.
    assert len(url_pattern_matches) >= 5 * 20


@pytest.fixture
def in_process_headers(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    seen: list[dict[str, str]] = []
    original = clients._route

    def recording(url: str) -> Any:
        handler = original(url)
        if handler is None:
            return None

        def handle(request: Any, full_url: str, headers: Any) -> Any:
            seen.append(dict(headers))
            return handler(request, full_url, headers)

        return handle

    monkeypatch.setattr(clients, "_route", recording)
    return seen


def test_in_process_requests_are_unsigned_and_land_in_the_default_account(
    moto: Moto, in_process_headers: list[dict[str, str]]
) -> None:
    invoked = run(moto, "lambda", {"unsigned": True})

    assert invoked["status"] == "SUCCEEDED", invoked
    assert in_process_headers, "no in-process request seen"
    assert all("Authorization" not in h for h in in_process_headers), in_process_headers
    # Found by its ARN, which names moto's default account: unsigned requests land in that account.
    assert json.loads(invoked["output"])["function_name"] == FUNCTION_NAME


def test_signed_in_process_requests_carry_a_signature(moto: Moto, in_process_headers: list[dict[str, str]]) -> None:
    client = clients._cached_client(REGION, "dynamodb")
    signed = boto3.session.Session().client(
        "dynamodb", region_name=REGION, aws_access_key_id="ak", aws_secret_access_key="sk"
    )
    signed.meta.events.register("before-send", hooks.dispatch_in_process)

    signed.list_tables()
    client.list_tables()

    assert [("Authorization" in h) for h in in_process_headers] == [True, False]


def task_client_answers(client: Any, key: str) -> list[Any]:
    """The same DynamoDB calls a definition's tasks make, with what each returned or raised."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("put_item", {"Item": {"id": {"S": key}, "n": {"N": "1"}, "m": {"M": {"a": {"L": [{"S": "x"}]}}}}}),
        ("put_item", {"Item": {"id": {"S": key}}, "ConditionExpression": "attribute_not_exists(id)"}),
        (
            "put_item",
            {
                "Item": {"id": {"S": key}},
                "ConditionExpression": "attribute_not_exists(id)",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            },
        ),
        ("get_item", {"Key": {"id": {"S": key}}, "ConsistentRead": True}),
        ("get_item", {"Key": {"id": {"S": f"{key}-none"}}}),
        (
            "update_item",
            {
                "Key": {"id": {"S": key}},
                "UpdateExpression": "SET n = n + :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
                "ReturnValues": "ALL_NEW",
            },
        ),
        ("update_item", {"Key": {"id": {"S": key}}, "UpdateExpression": "SET = oops"}),
        (
            "delete_item",
            {
                "Key": {"id": {"S": key}},
                "ConditionExpression": "n = :two",
                "ExpressionAttributeValues": {":two": {"N": "3"}},
            },
        ),
        ("delete_item", {"Key": {"id": {"S": key}}, "ReturnValues": "ALL_OLD"}),
        ("get_item", {"TableName": "no-such-table", "Key": {"id": {"S": key}}}),
    ]
    answers: list[Any] = []
    for action, params in calls:
        try:
            response = getattr(client, action)(**{"TableName": TABLE, **params})
        except ClientError as exc:
            metadata = exc.response["ResponseMetadata"]
            assert metadata["RequestId"], "the interpreter puts the request id in the cause"
            answers.append(("error", exc.response["Error"], metadata["HTTPStatusCode"], exc.operation_name))
        else:
            assert response.pop("ResponseMetadata")["HTTPStatusCode"] == 200
            answers.append(("ok", response))
    return answers


def test_dynamodb_task_client_answers_like_botocore(moto: Moto) -> None:
    botocore_client = boto3.session.Session().client(
        "dynamodb",
        region_name=REGION,
        aws_access_key_id="ak",
        aws_secret_access_key="sk",
        config=hooks.IN_PROCESS_CONFIG,
    )
    botocore_client.meta.events.register("before-send", hooks.dispatch_in_process)

    key = f"task-client-{uuid.uuid4()}"  # the calls end by deleting it: both start from no item

    expected = task_client_answers(botocore_client, key)
    answers = task_client_answers(clients.DynamoDBTaskClient(REGION), key)

    assert answers == expected
    assert [a[0] for a in answers] == ["ok", "error", "error", "ok", "ok", "ok", "error", "error", "ok", "error"]


def test_interpreter_uses_the_dynamodb_task_client(moto: Moto, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = clients.DynamoDBTaskClient.call

    def recording(self: Any, operation: str, **params: Any) -> Any:
        calls.append(operation)
        return original(self, operation, **params)

    monkeypatch.setattr(clients.DynamoDBTaskClient, "call", recording)
    key = f"task-client-{uuid.uuid4()}"

    first, second = run(moto, "put", {"id": key}), run(moto, "put", {"id": key})

    assert calls == ["PutItem", "PutItem"]
    assert first["status"] == "SUCCEEDED"
    assert second["status"] == "FAILED"
    assert task_failures(moto, second["executionArn"])[0][0] == "DynamoDB.ConditionalCheckFailedException"


@pytest.fixture
def engine_server() -> Iterator[str]:
    """An EngineServer (moto's app behind DynamoDBFront) on its own port, sharing moto's backends."""
    server = EngineServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{server.get_host_and_port()[1]}"
    finally:
        server.stop()


def http_client(endpoint: str, service: str) -> Any:
    return boto3.session.Session().client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(retries={"max_attempts": 0}),
    )


def test_dynamodb_front_answers_like_moto_s_server(
    moto: Moto, engine_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fronted: list[str] = []
    original = hooks.dispatch_in_process

    def counting(request: Any, **kwargs: Any) -> Any:
        fronted.append(request.url)
        return original(request, **kwargs)

    monkeypatch.setattr(hooks, "dispatch_in_process", counting)
    key = f"front-{uuid.uuid4()}"  # the calls end by deleting it: both start from no item

    expected = task_client_answers(moto.client("dynamodb"), key)  # moto's own server
    assert fronted == []
    answers = task_client_answers(http_client(engine_server, "dynamodb"), key)

    assert answers == expected
    assert len(fronted) == len(answers)  # every DynamoDB call was served by the front


def test_dynamodb_front_passes_other_services_to_moto(engine_server: str) -> None:
    sfn = http_client(engine_server, "stepfunctions")
    lam = http_client(engine_server, "lambda")

    assert isinstance(sfn.list_state_machines()["stateMachines"], list)
    assert FUNCTION_NAME in [f["FunctionName"] for f in lam.list_functions()["Functions"]]


def lambda_answers(moto: Moto, client: Any) -> list[Any]:
    """The interpreter's kinds of invoke, with what each returned or raised (volatile fields left out)."""
    arn = moto.function_arn
    calls: list[tuple[dict[str, Any], Callable[[], None] | None]] = [
        ({"FunctionName": arn, "Payload": json.dumps({"n": 1}).encode()}, None),
        ({"FunctionName": FUNCTION_NAME, "Payload": "{}", "InvocationType": "RequestResponse"}, None),
        (
            {"FunctionName": arn, "Payload": json.dumps({"action": "raise", "message": "no such customer"}).encode()},
            None,
        ),
        ({"FunctionName": f"{arn}-missing", "Payload": b"{}"}, None),
        (
            {"FunctionName": arn, "Payload": b"{}"},
            lambda: moto.faults.fail_next(FUNCTION_NAME, error="Lambda.TooManyRequestsException", message="slow down"),
        ),
    ]
    answers: list[Any] = []
    for params, before in calls:
        if before is not None:
            before()
        try:
            response = client.invoke(**params)
        except ClientError as exc:
            error = exc.response["Error"]
            answers.append(
                ("error", error["Code"], error["Message"], exc.response["ResponseMetadata"]["HTTPStatusCode"])
            )
            continue
        payload = json.loads(response["Payload"].read())
        if isinstance(payload, dict):
            for volatile in ("pid", "calls", "request_id", "remaining_ms"):
                payload.pop(volatile, None)
        fields = {k: response.get(k) for k in ("StatusCode", "FunctionError", "LogResult", "ExecutedVersion")}
        answers.append(("ok", fields, payload))
    return answers


def test_lambda_task_client_answers_like_botocore(moto: Moto) -> None:
    botocore_client = clients._new_botocore_client(REGION, "lambda")

    expected = lambda_answers(moto, botocore_client)
    answers = lambda_answers(moto, clients.LambdaTaskClient(REGION))

    assert answers == expected
    assert [a[0] for a in answers] == ["ok", "ok", "ok", "error", "error"]
    assert answers[2][1]["FunctionError"] == "Unhandled"


# -- jsonpath-cache (a speedup) -----------------------------------------------------------------------
@pytest.fixture
def jsonpath_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parsed: list[str] = []
    original = jsonpath_ng.parser.JsonPathParser.parse

    def counting(self: Any, string: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(string)
        return original(self, string, *args, **kwargs)

    monkeypatch.setattr(jsonpath_ng.parser.JsonPathParser, "parse", counting)
    return parsed


@pytest.mark.parametrize("module_name", ["json_path", "result_path"])
def test_jsonpath_is_parsed_once(module_name: str, jsonpath_parses: list[str]) -> None:
    module = _path_module(module_name)
    field = f"k{uuid.uuid4().hex}"  # a path no earlier test parsed
    expression = f"$.{field}.b"

    first = module.parse(expression)
    again = [module.parse(expression) for _ in range(3)]

    assert jsonpath_parses.count(expression) == 1
    assert all(same is first for same in again)
    assert [match.value for match in first.find({field: {"b": 1}})] == [1]


@pytest.mark.parametrize("module_name", ["json_path", "result_path"])
def test_without_the_speedup_jsonpath_is_parsed_every_time(module_name: str, jsonpath_parses: list[str]) -> None:
    leave_out("jsonpath-cache")
    module = _path_module(module_name)
    expression = f"$.uncached_{uuid.uuid4().hex}"

    for _ in range(3):
        module.parse(expression)

    assert jsonpath_parses.count(expression) == 3


def test_executions_reuse_parsed_jsonpaths(moto: Moto, jsonpath_parses: list[str]) -> None:
    run_puts(moto, 1)
    before = len(jsonpath_parses)

    run_puts(moto, 3)

    assert len(jsonpath_parses) == before


def _path_module(name: str) -> Any:
    from moto.stepfunctions.parser.asl.component.common.path import result_path
    from moto.stepfunctions.parser.asl.utils import json_path

    return {"json_path": json_path, "result_path": result_path}[name]


# -- module-list-cache (a speedup): the dispatcher lists moto's package once ---------------------------
@pytest.fixture
def moto_dir_listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import moto as moto_package

    moto_dir = os.path.dirname(moto_package.__file__)
    listed: list[str] = []
    original: Callable[..., list[str]] = os.listdir

    def counting(path: Any = ".") -> list[str]:
        if os.fspath(path) == moto_dir:
            listed.append(os.fspath(path))
        return original(path)

    monkeypatch.setattr(os, "listdir", counting)
    return listed


def test_server_lists_its_modules_once(moto: Moto, moto_dir_listings: list[str]) -> None:
    ddb = moto.client("dynamodb")
    ddb.list_tables()
    before = len(moto_dir_listings)

    for _ in range(5):
        ddb.list_tables()

    assert before <= 1
    assert len(moto_dir_listings) == before


def test_without_the_speedup_the_server_lists_its_modules_per_request(moto: Moto, moto_dir_listings: list[str]) -> None:
    leave_out("module-list-cache")
    ddb = moto.client("dynamodb")

    for _ in range(5):
        ddb.list_tables()

    assert len(moto_dir_listings) >= 5


# -- lazy-failure-logs (a speedup): no repr nobody logs ----------------------------------------------
@pytest.fixture
def reprs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from moto.stepfunctions.parser.asl.component.component import Component

    built: list[str] = []
    original: Callable[[Any], str] = Component.__repr__

    def counting(self: Any) -> str:
        built.append(type(self).__name__)
        return original(self)

    monkeypatch.setattr(Component, "__repr__", counting)
    return built


def failing_put(moto: Moto, reprs: list[str]) -> None:
    """An execution whose state fails (a conditional put of an existing item); ``reprs`` counts only it."""
    item_id = f"logged-{uuid.uuid4()}"
    moto.client("dynamodb").put_item(TableName=TABLE, Item={"id": {"S": item_id}})
    reprs.clear()
    done = run(moto, "put", {"id": item_id})
    assert done.get("error") == "DynamoDB.ConditionalCheckFailedException", done


def test_failing_state_builds_no_repr_when_errors_are_not_logged(moto: Moto, reprs: list[str]) -> None:
    assert not logging.getLogger("moto.stepfunctions.parser").isEnabledFor(logging.ERROR)  # set by the fixture

    failing_put(moto, reprs)

    assert reprs == []


def test_without_the_speedup_a_failing_state_builds_reprs_for_nothing(moto: Moto, reprs: list[str]) -> None:
    leave_out("lazy-failure-logs")

    failing_put(moto, reprs)

    assert reprs, "moto no longer builds the repr of a failing state: the hook may be obsolete"


def test_failing_state_is_still_logged_when_errors_are_enabled(
    moto: Moto, reprs: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="moto.stepfunctions.parser"):
        failing_put(moto, reprs)

    assert any("ConditionalCheckFailedException" in r.getMessage() for r in caplog.records)


# -- attaching and detaching the engine's parts ------------------------------------------------------
def test_the_registry_neither_reads_nor_writes_the_engine_state(moto: Moto) -> None:
    # The engine alone attaches its parts (its start and stop): installing and removing changes keeps them.
    attached = state.current()
    assert (attached.lambda_runtime, attached.faults) == (moto.runtime, moto.faults)

    registry.apply(without=["parse-cache"])
    registry.remove()

    assert state.current() is attached
    assert clients._clients == {}  # the cached clients name backends about to be reset


def test_install_without_a_runtime_falls_back_to_moto(moto: Moto) -> None:
    # What Engine.stop() does: the hooks stay, and route nothing.
    state.update(lambda_runtime=None, faults=None)
    moto.faults.throttle_next("PutRecord")

    echoed = run(moto, "lambda", {"plain": "moto"})
    put = run(moto, "put", {"id": f"fallback-{uuid.uuid4()}"})

    assert json.loads(echoed["output"]) == {"plain": "moto"}
    assert put["status"] == "SUCCEEDED"


def test_execution_done_events_are_capped_oldest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    # Executions nobody waits for (started by another client against `idemflow serve`) must not pile up.
    monkeypatch.setattr(execution_end, "MAX_DONE_EVENTS", 3)
    monkeypatch.setattr(execution_end, "_done", {})
    for i in range(5):
        execution_end.ended(f"arn:{i}")

    assert list(execution_end._done) == ["arn:2", "arn:3", "arn:4"]
    assert all(event.is_set() for event in execution_end._done.values())


# -- lambda-task: a gate sees each Lambda request and its response ------------------------------------
class _RecordingGate:
    """A gate that lets every request through and remembers what it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def before(self, request: hooks.TaskRequest) -> None:
        self.seen.append(("before", request.service))

    def after(self, request: hooks.TaskRequest) -> None:
        self.seen.append(("after", request.service))

    def ended(self, execution_arn: str) -> None:
        pass


def _lambda_requests_a_gate_sees(moto: Moto) -> list[tuple[str, str]]:
    gate = _RecordingGate()
    state.update(gate=gate)
    try:
        done = run(moto, "lambda", {"hello": "world"})
    finally:
        state.update(gate=None)
    assert done["status"] == "SUCCEEDED", done
    return [seen for seen in gate.seen if seen[1] == "lambda"]


def test_a_gate_sees_each_lambda_request_and_its_response(moto: Moto) -> None:
    assert _lambda_requests_a_gate_sees(moto) == [("before", "lambda"), ("after", "lambda")]


def test_without_the_hook_a_gate_never_sees_a_lambda_request(moto: Moto) -> None:
    leave_out("lambda-task")
    assert _lambda_requests_a_gate_sees(moto) == []


# -- events-targets ------------------------------------------------------------------------------------------


def put_order_event(moto: Moto, bus: str, target_arn: str) -> dict[str, Any]:
    events = moto.client("events")
    events.create_event_bus(Name=bus)
    events.put_rule(Name=f"{bus}-rule", EventBusName=bus, EventPattern=json.dumps({"source": ["shop"]}))
    events.put_targets(Rule=f"{bus}-rule", EventBusName=bus, Targets=[{"Id": "t", "Arn": target_arn}])
    entry = {"EventBusName": bus, "Source": "shop", "DetailType": "OrderPlaced", "Detail": json.dumps({"id": 1})}
    answer: dict[str, Any] = events.put_events(Entries=[entry])
    return answer


def test_a_state_machine_target_is_handed_to_the_attached_receiver(moto: Moto) -> None:
    received: list[tuple[str, Any]] = []
    state.update(event_receiver=lambda rule, event: received.append((rule, event)))
    try:
        answer = put_order_event(moto, f"bus-{uuid.uuid4().hex[:8]}", moto.machines["lambda"])
    finally:
        state.update(event_receiver=None)

    assert answer["FailedEntryCount"] == 0
    ((rule, event),) = received
    assert rule.endswith("-rule") and event["detail"] == {"id": 1} and event["source"] == "shop"


def test_without_the_hook_a_state_machine_target_fails_put_events(moto: Moto) -> None:
    leave_out("events-targets")

    with pytest.raises(ClientError) as refused:
        put_order_event(moto, f"bus-{uuid.uuid4().hex[:8]}", moto.machines["lambda"])
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500  # moto's NotImplementedError
