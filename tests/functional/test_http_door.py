"""The HTTP front door served by the engine: a real HTTP client (urllib) against the engine's endpoint, the
REST API and its mapping templates as template.yaml declares them (HttpFrontDoor=true), each row of the
HTTP table of docs/doors.md. What each answer is made of is pinned where it is made: the mapping templates in
tests/unit/test_http_door.py, API Gateway's own steps in tests/conformance/test_apigateway_door.py."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from idemflow.client import sign_http_request
from idemflow.contract import WorkflowError, sample_payload
from idemflow.engine import Engine
from idemflow.engine.services.apigateway.service import ApiGateway
from idemflow.engine.services.iam.callers import LOCAL_ACCESS_KEY, LOCAL_SECRET_KEY
from idemflow.engine.services.iam.service import Iam
from tests.paths import TEMPLATE_PATH

pytestmark = pytest.mark.functional

DOOR = {"HttpFrontDoor": "true", "WorkflowType": "EXPRESS"}
T = TypeVar("T")
PAYLOAD: dict[str, Any] = sample_payload(TEMPLATE_PATH)


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(parameter_overrides=DOOR, wait_time_scale=0) as running:
        yield running


@pytest.fixture(scope="module")
def url(engine: Engine) -> str:
    ((method, found),) = engine.service(ApiGateway).urls()
    assert method == "POST" and found.endswith("/requests")
    return found


@pytest.fixture
def key() -> str:
    return f"order-{uuid.uuid4()}"


def post(
    url: str,
    key: str | None,
    body: Any = PAYLOAD,
    headers: dict[str, str] | None = None,
    signed: bool = True,
    caller: tuple[str, str] = (LOCAL_ACCESS_KEY, LOCAL_SECRET_KEY),
) -> tuple[int, dict[str, str], Any]:
    status, got, text = exchange(url, key, body, headers, signed, caller)
    return status, got, json.loads(text)


def exchange(
    url: str,
    key: str | None,
    body: Any = PAYLOAD,
    headers: dict[str, str] | None = None,
    signed: bool = True,
    caller: tuple[str, str] = (LOCAL_ACCESS_KEY, LOCAL_SECRET_KEY),
) -> tuple[int, dict[str, str], bytes]:
    """A POST as a plain HTTP client sends it, signed by ``caller`` (access key, secret) unless ``signed`` is false:
    the status, headers and body bytes."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", **({} if key is None else {"Idempotency-Key": key}), **(headers or {})}
    request = urllib.request.Request(url, data=data, headers=sent, method="POST")
    if signed:  # the door's default authorization, AWS_IAM: by default the engine's own user, the ``local`` key
        sign_http_request(request, access_key=caller[0], secret_key=caller[1])
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            status, got, text = answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        status, got, text = error.code, dict(error.headers), error.read()
    return status, got, text


def scoped(engine: Engine, key: str) -> str:
    """The key the workflow sees for a request the engine's own user signed: the door scopes each caller's keys to
    its identity (``$context.identity.userArn``)."""
    caller = engine.service(Iam).caller(LOCAL_ACCESS_KEY)
    assert caller is not None
    return f"iam:{caller.arn}|{key}"


def records(engine: Engine) -> int:
    return len(engine.workflow.records())


def test_a_first_request_answers_the_side_effects_result(engine: Engine, url: str, key: str) -> None:
    status, headers, body = post(url, key)

    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert "Idempotent-Replayed" not in headers
    assert body["idempotencyKey"] == scoped(engine, key) and "replayed" not in body
    assert body["result"]["amount"] == PAYLOAD["amount"]
    assert engine.workflow.side_effect_runs(scoped(engine, key)) == 1


def test_the_same_request_again_is_replayed_with_the_same_result(engine: Engine, url: str, key: str) -> None:
    first = exchange(url, key)
    again = exchange(url, key)

    # The draft: a retry after the first completed gets "the result of the previously completed operation";
    # only the header says it is a replay.
    assert again[0] == first[0] == 200
    assert again[1]["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first[1]
    assert again[2] == first[2] and json.loads(first[2])["result"]["amount"] == PAYLOAD["amount"]
    assert engine.workflow.side_effect_runs(scoped(engine, key)) == 1


@pytest.mark.parametrize(
    "sent",
    [None, "", "k" * 256],
    ids=["no key", "empty key", "256 characters"],
)
def test_a_missing_empty_or_long_key_is_400_and_writes_nothing(engine: Engine, url: str, sent: str | None) -> None:
    before = records(engine)
    status, headers, body = post(url, sent)

    assert status == 400
    assert headers["Content-Type"] == "application/problem+json"
    assert body["type"].endswith("#http-idempotency-key-invalid") and body["status"] == 400
    assert records(engine) == before


def test_a_body_that_is_not_json_is_400_and_writes_nothing(engine: Engine, url: str, key: str) -> None:
    before = records(engine)
    status, headers, body = post(url, key, b"{not json")

    assert (status, headers["Content-Type"]) == (400, "application/problem+json")
    assert body["type"].endswith("#http-payload-invalid")
    assert records(engine) == before and engine.workflow.side_effect_runs(scoped(engine, key)) == 0


def test_a_body_over_the_quota_is_413_and_writes_nothing(engine: Engine, url: str, key: str) -> None:
    before = records(engine)
    status, _, body = post(url, key, {**PAYLOAD, "note": "x" * 20_000})

    assert status == 413 and body["type"].endswith("#http-payload-too-large")
    assert records(engine) == before and engine.workflow.side_effect_runs(scoped(engine, key)) == 0


def test_the_same_key_with_another_body_is_422(engine: Engine, url: str, key: str) -> None:
    post(url, key)
    status, headers, body = post(url, key, {**PAYLOAD, "amount": PAYLOAD["amount"] + 1})

    assert status == 422 and headers["Content-Type"] == "application/problem+json"
    assert body["error"] == WorkflowError.KEY_REUSED and body["type"].endswith("#http-idempotency-key-reused")
    assert engine.workflow.side_effect_runs(scoped(engine, key)) == 1


def test_the_side_effects_own_refusal_is_a_4xx_naming_its_error(engine: Engine, url: str, key: str) -> None:
    status, _, body = post(url, key, {**PAYLOAD, "amount": -1})

    assert status == 400
    assert body["type"].endswith("#http-side-effect-declined") and body["error"] == "PaymentValidationError"


def at_once(count: int, request: Callable[[], T]) -> list[T]:
    """``count`` calls of ``request``, each on its own thread, started together; their answers."""
    answers: list[T] = []
    lock = threading.Lock()

    def one() -> None:
        answer = request()
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=one) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return answers


def test_twenty_concurrent_identical_requests_run_the_side_effect_once(engine: Engine, url: str, key: str) -> None:
    answers = at_once(20, lambda: post(url, key))

    assert len(answers) == 20
    assert engine.workflow.side_effect_runs(scoped(engine, key)) == 1
    results = [body["result"] for status, _, body in answers if status == 200]
    conflicts = [(headers, body) for status, headers, body in answers if status == 409]
    assert len(results) + len(conflicts) == 20 and results
    assert all(result == results[0] for result in results)
    assert all(h["Retry-After"] and b["type"].endswith("#http-in-progress") for h, b in conflicts)


# -- API Gateway's own answers, as the door's gateway responses shape them ---------------------------------
# "Gateway response types for API Gateway" (developer guide, supported-gateway-response-types): the type of
# each refusal and its default status; the door's DEFAULT_4XX response makes each a problem+json body.


def test_a_content_type_without_a_template_is_415(engine: Engine, url: str, key: str) -> None:
    # PassthroughBehavior NEVER: "rejects ... with an HTTP 415 Unsupported Media Type response" when the
    # content type has no mapping template (developer guide, integration-passthrough-behaviors).
    before = records(engine)
    status, headers, body = post(url, key, b"hello", {"Content-Type": "text/plain"})

    assert (status, headers["Content-Type"]) == (415, "application/problem+json")
    assert body["detail"] == "Unsupported Media Type" and records(engine) == before


def test_a_path_the_api_does_not_have_is_403_missing_authentication_token(url: str, key: str) -> None:
    status, headers, body = post(url.removesuffix("/requests") + "/nowhere", key)

    assert (status, headers["Content-Type"]) == (403, "application/problem+json")
    assert body["detail"] == "Missing Authentication Token"


def test_the_same_key_while_the_first_still_runs_is_409_with_retry_after(engine: Engine, url: str, key: str) -> None:
    # The second request arrives while the first is about to save its result: the first holds the lock.
    second: list[tuple[int, dict[str, str], Any]] = []
    engine.faults.before_dynamodb("SaveResult", lambda: second.append(post(url, key)))

    first = post(url, key)

    ((status, headers, body),) = second
    assert (status, headers["Content-Type"]) == (409, "application/problem+json")
    assert body["error"] == WorkflowError.IN_PROGRESS and body["type"].endswith("#http-in-progress")
    assert int(headers["Retry-After"]) > 0
    assert first[0] == 200 and engine.workflow.side_effect_runs(scoped(engine, key)) == 1


def test_a_request_that_no_declared_service_takes_is_a_404_naming_what_is_served(engine: Engine, url: str) -> None:
    # A plain client posting off the door's path (the path alone, no stage prefix): moto's app would take it
    # for S3 (unsigned) and answer 500 with an HTML page. An unsigned request is no service's.
    status, headers, body = post(f"{engine.endpoint_url}/requests", "k")

    assert status == 404 and headers["Content-Type"] == "application/json"
    assert f"POST {url}" in body["message"] and body["doors"] == [f"POST {url}"]
    assert "states" in body["services"] and "ecs" not in body["services"]


def test_a_request_signed_for_a_service_the_engine_does_not_run_is_a_404(engine: Engine) -> None:
    import boto3
    from botocore.exceptions import ClientError

    ecs = boto3.client(
        "ecs",
        endpoint_url=engine.endpoint_url,
        region_name=engine.region,
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    with pytest.raises(ClientError) as raised:
        ecs.list_clusters()
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    # The services it runs still answer.
    assert engine.http_client("stepfunctions").list_state_machines()["stateMachines"]


PROBLEM_MEMBERS = {"type", "title", "status", "detail", "requestId"}


@pytest.mark.parametrize(
    ("how", "status", "error"),
    [
        ("no key", 400, "IdempotencyKeyInvalid"),
        ("key over 255 characters", 400, "IdempotencyKeyInvalid"),
        ("body not JSON", 400, "IdempotencyPayloadInvalid"),
        ("body over 10,000 characters", 413, "IdempotencyPayloadTooLarge"),
        ("text/plain", 415, None),
        ("no such path", 403, None),
        ("key reused", 422, "IdempotencyKeyReused"),
    ],
)
def test_every_error_answer_is_a_complete_problem(
    engine: Engine, url: str, key: str, how: str, status: int, error: str | None
) -> None:
    # RFC 9457 (problem details): type, title, status (the HTTP status), detail; the door adds requestId, and
    # error where the workflow or the door's own check named one. No member is empty, no blank line leads.
    sent: dict[str, Any] = {
        "no key": {"key": None},
        "key over 255 characters": {"key": "k" * 256},
        "body not JSON": {"body": b"amount=4200"},
        "body over 10,000 characters": {"body": {"note": "n" * 10_001}},
        "text/plain": {"body": b"hello", "headers": {"Content-Type": "text/plain"}},
        "no such path": {"url": url.removesuffix("/requests") + "/nowhere"},
        "key reused": {},
    }[how]
    if how == "key reused":
        assert post(url, key)[0] == 200
        sent = {"body": {**PAYLOAD, "amount": PAYLOAD["amount"] + 1}}
    got_status, headers, text = exchange(
        sent.get("url", url), sent.get("key", key), sent.get("body", PAYLOAD), sent.get("headers")
    )

    assert got_status == status and headers["Content-Type"] == "application/problem+json"
    assert text.startswith(b"{")
    body = json.loads(text)
    assert set(body) == PROBLEM_MEMBERS | ({"error"} if error else set())
    assert body["status"] == status and all(body[m] not in ("", None) for m in body)
    assert body.get("error") == error


# -- The key grammar through the door (docs/contract.md, "Keys") --------------------------------------------


def raw_post(url: str, key: bytes) -> tuple[int, Any]:
    """A POST whose Idempotency-Key is these bytes on the wire (a UTF-8 key, as curl sends one)."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.putrequest("POST", parts.path)
        body = json.dumps(PAYLOAD).encode()
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(len(body)))
        connection.putheader("Idempotency-Key", key)
        # signed without the key's header (SigV4 signs the headers SignedHeaders names, not every one)
        signed = sign_http_request(urllib.request.Request(url, data=body, method="POST"))
        for name in ("Authorization", "X-amz-date"):
            connection.putheader(name, str(signed.get_header(name)))
        connection.endheaders(body)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def test_a_non_ascii_key_is_refused_before_anything_runs(engine: Engine, url: str) -> None:
    # RFC 8941 (the draft's sf-string): printable ASCII only. How API Gateway decodes other header bytes is
    # not on record, so the door refuses them whatever the decoding, and no other key is ever made of them.
    before, runs = records(engine), len(engine.workflow.invocations())
    status, body = raw_post(url, "clé-été".encode())

    assert status == 400 and body["error"] == "IdempotencyKeyInvalid"
    assert "printable ASCII" in body["detail"]
    assert records(engine) == before and len(engine.workflow.invocations()) == runs


def test_surrounding_whitespace_and_the_quoted_form_name_the_same_key(engine: Engine, url: str, key: str) -> None:
    # RFC 9110 5.5: leading and trailing whitespace is not part of a field value; the draft's header is an
    # sf-string, "..." (RFC 8941 3.3.3): each names the key inside.
    answers = [exchange(url, sent) for sent in (key, f"   {key}   ", f'"{key}"', f'\t"{key}" ')]

    assert [a[0] for a in answers] == [200, 200, 200, 200]
    assert [a[1].get("Idempotent-Replayed") for a in answers] == [None, "true", "true", "true"]
    assert len({a[2] for a in answers}) == 1 and json.loads(answers[0][2])["idempotencyKey"] == scoped(engine, key)
    assert engine.workflow.side_effect_runs(scoped(engine, key)) == 1


@pytest.mark.parametrize(
    ("sent", "status"),
    [("k" * 255, 200), ("k" * 256, 400), ('"' + "k" * 255 + '"', 200), ('"a\\"b"', 400), ('" a"', 400)],
    ids=["255", "256", "255 quoted", "quoted with an escape", "quoted with a space at an end"],
)
def test_the_length_limit_and_the_quoted_forms(engine: Engine, url: str, sent: str, status: int) -> None:
    # The workflow's key is the caller's scope and the key, 255 characters at most (docs/doors.md, "HTTP"): a
    # signed caller's key has 255 less its scope's length. Shortened by that much, the limits are the same.
    scope = len(scoped(engine, ""))
    sent = sent.replace("k" * scope, "", 1) if sent.count("k") > scope else sent
    unique = sent.replace("k" * 8, uuid.uuid4().hex[:8], 1)  # a fresh key of the same length each run
    got, _, body = post(url, unique)
    assert got == status, body
    if status == 400:
        assert body["error"] == "IdempotencyKeyInvalid"
