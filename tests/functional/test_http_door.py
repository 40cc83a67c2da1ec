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
from collections.abc import Iterator
from typing import Any

import pytest

from idemflow.contract import WorkflowError, sample_payload
from idemflow.engine import Engine
from idemflow.engine.services.apigateway import ApiGateway
from tests.paths import TEMPLATE_PATH

pytestmark = pytest.mark.functional

DOOR = {"HttpFrontDoor": "true", "WorkflowType": "EXPRESS"}
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
    url: str, key: str | None, body: Any = PAYLOAD, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", **({} if key is None else {"Idempotency-Key": key}), **(headers or {})}
    request = urllib.request.Request(url, data=data, headers=sent, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            status, got, text = answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        status, got, text = error.code, dict(error.headers), error.read()
    return status, got, json.loads(text)


def records(engine: Engine) -> int:
    return len(engine.records())


def test_a_first_request_answers_the_side_effects_result(engine: Engine, url: str, key: str) -> None:
    status, headers, body = post(url, key)

    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert "Idempotent-Replayed" not in headers
    assert body["idempotencyKey"] == key and body["replayed"] is False
    assert body["result"]["amount"] == PAYLOAD["amount"]
    assert engine.side_effect_runs(key) == 1


def test_the_same_request_again_is_replayed_with_the_same_result(engine: Engine, url: str, key: str) -> None:
    first = post(url, key)
    again = post(url, key)

    assert again[0] == first[0] == 200
    assert again[1]["Idempotent-Replayed"] == "true"
    assert again[2]["result"] == first[2]["result"]
    assert engine.side_effect_runs(key) == 1


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
    assert records(engine) == before and engine.side_effect_runs(key) == 0


def test_a_body_over_the_quota_is_413_and_writes_nothing(engine: Engine, url: str, key: str) -> None:
    before = records(engine)
    status, _, body = post(url, key, {**PAYLOAD, "note": "x" * 20_000})

    assert status == 413 and body["type"].endswith("#http-payload-too-large")
    assert records(engine) == before and engine.side_effect_runs(key) == 0


def test_the_same_key_with_another_body_is_422(engine: Engine, url: str, key: str) -> None:
    post(url, key)
    status, headers, body = post(url, key, {**PAYLOAD, "amount": PAYLOAD["amount"] + 1})

    assert status == 422 and headers["Content-Type"] == "application/problem+json"
    assert body["error"] == WorkflowError.KEY_REUSED and body["type"].endswith("#http-idempotency-key-reused")
    assert engine.side_effect_runs(key) == 1


def test_the_side_effects_own_refusal_is_a_4xx_naming_its_error(engine: Engine, url: str, key: str) -> None:
    status, _, body = post(url, key, {**PAYLOAD, "amount": -1})

    assert status == 400
    assert body["type"].endswith("#http-side-effect-declined") and body["error"] == "PaymentValidationError"


def test_twenty_concurrent_identical_requests_run_the_side_effect_once(engine: Engine, url: str, key: str) -> None:
    answers: list[tuple[int, dict[str, str], Any]] = []
    lock = threading.Lock()

    def one() -> None:
        answer = post(url, key)
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=one) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert len(answers) == 20
    assert engine.side_effect_runs(key) == 1
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
    assert first[0] == 200 and engine.side_effect_runs(key) == 1
