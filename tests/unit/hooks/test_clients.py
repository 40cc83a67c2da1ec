"""``in-process-clients`` (a speedup): the interpreter's clients, cached, dispatched in-process; the engine server's
DynamoDB front. For each, what moto does without it and with it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.awsrequest import AWSPreparedRequest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto.core.request import normalize_request

from idemflow.engine.core import in_process_clients as clients
from idemflow.engine.core.in_process_clients import IN_PROCESS_CONFIG, dispatch_in_process
from idemflow.engine.server import EngineServer
from tests.unit.hooks.served import (
    FUNCTION_NAME,
    REGION,
    TABLE,
    Moto,
    free_port,
    leave_out,
    run,
    run_puts,
    task_failures,
)

pytestmark = pytest.mark.unit


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
    signed.meta.events.register("before-send", dispatch_in_process)

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


TASK_REQUESTS = [
    ("dynamodb", {"X-Amz-Target": "DynamoDB_20120810.GetItem", "Content-Type": "application/x-amz-json-1.0"}),
    ("dynamodb", {"X-Amz-Target": "DynamoDB_20120810.PutItem", "Content-Type": "application/x-amz-json-1.0"}),
    ("lambda/2015-03-31/functions/fn/invocations", {}),
    ("lambda/2015-03-31/functions/a%3Afn%20b/invocations?Qualifier=%24LATEST", {"X-Amz-Invocation-Type": "Event"}),
    ("lambda/2015-03-31/functions/fn/invocations", {"X-Amz-Log-Type": "Tail", "X-Amz-Client-Context": "eyJ9"}),
]
BODIES = [b"", b'{"TableName": "t"}', '{"k": "\u00e9\u4e2d\U0001f600"}'.encode(), b"x" * 70_000]


@pytest.mark.parametrize(("where", "headers"), TASK_REQUESTS)
def test_a_task_request_is_moto_s_request_environ_key_for_key(where: str, headers: dict[str, str]) -> None:
    # Each body twice: the second request of a method, URL and headers copies what the first made.
    service, _, path = where.partition("/")
    url = f"https://{service}.{REGION}.amazonaws.com/{path}"
    for body in BODIES * 2:
        fast, raw_url = clients.task_request("POST", url, headers, body)
        moto_s = normalize_request(AWSPreparedRequest("POST", url, headers, body, False))

        assert fast.get_data() == moto_s.get_data() == body  # each body read from its own stream
        theirs, ours = dict(moto_s.environ), dict(fast.environ)
        assert theirs.pop("wsgi.input") is not ours.pop("wsgi.input")
        assert (theirs.pop("werkzeug.request"), ours.pop("werkzeug.request")) == (moto_s, fast)  # each its own
        assert ours == theirs
        assert raw_url == moto_s.raw_url
        assert (fast.url, fast.path, fast.args, dict(fast.headers)) == (
            moto_s.url,
            moto_s.path,
            moto_s.args,
            dict(moto_s.headers),
        )


def test_dynamodb_task_client_answers_like_botocore(moto: Moto) -> None:
    botocore_client = boto3.session.Session().client(
        "dynamodb",
        region_name=REGION,
        aws_access_key_id="ak",
        aws_secret_access_key="sk",
        config=IN_PROCESS_CONFIG,
    )
    botocore_client.meta.events.register("before-send", dispatch_in_process)

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
    original = dispatch_in_process

    def counting(request: Any, **kwargs: Any) -> Any:
        fronted.append(request.url)
        return original(request, **kwargs)

    monkeypatch.setattr(clients, "dispatch_in_process", counting)
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
