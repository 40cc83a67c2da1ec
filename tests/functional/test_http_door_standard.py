"""The HTTP door of a Standard workflow served by the engine (HttpFrontDoor=true, WorkflowType=STANDARD): a plain
HTTP client POSTs, gets ``202 Accepted`` with a ``Location``, and GETs it until the outcome, which has the
statuses and bodies of the Express door's answers (docs/doors.md, "HTTP"). What each answer is made of is
pinned where it is made: the mapping templates in tests/unit/test_http_door.py."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from idemflow.client import sign_http_request
from idemflow.contract import STATE_MACHINE_LOGICAL_ID, WorkflowError
from idemflow.engine import Engine
from idemflow.engine.services.apigateway.service import ApiGateway
from idemflow.engine.services.iam.service import Iam
from tests.polling import wait_until

from .test_http_door import PAYLOAD, at_once, exchange, scoped

pytestmark = pytest.mark.functional

DOOR = {"HttpFrontDoor": "true", "WorkflowType": "STANDARD"}
Answer = tuple[int, dict[str, str], bytes]


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(parameter_overrides=DOOR, wait_time_scale=0) as running:
        yield running


@pytest.fixture(scope="module")
def url(engine: Engine) -> str:
    urls = dict(engine.service(ApiGateway).urls())
    assert urls["GET"] == urls["POST"] + "/{id}"
    return urls["POST"]


@pytest.fixture
def key() -> str:
    return f"order-{uuid.uuid4()}"


def get(url: str, headers: dict[str, str] | None = None, caller: tuple[str, str] = ("local", "local")) -> Answer:
    """A GET signed by ``caller`` (access key, secret; the engine's own user by default)."""
    request = urllib.request.Request(url, headers=headers or {}, method="GET")
    sign_http_request(request, access_key=caller[0], secret_key=caller[1])
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def accepted(url: str, key: str | None, body: Any = PAYLOAD) -> str:
    """POST, check the 202, and return the status URL: the Location resolved as a client resolves it."""
    status, headers, text = exchange(url, key, body)
    assert status == 202, text
    assert int(headers["Retry-After"]) > 0
    location = urllib.parse.urljoin(url, headers["Location"])  # RFC 3986 5.2, as every HTTP client does
    assert json.loads(text) == {"status": "RUNNING", "id": location.rsplit("/", 1)[1]}
    return location


def outcome(location: str, headers: dict[str, str] | None = None) -> Answer:
    """GET the status URL until it answers something other than 202 (what a polling client does)."""
    answers: list[Answer] = []

    def done() -> bool:
        answers.append(get(location, headers))
        return answers[-1][0] != 202

    wait_until(done, 30, what=f"{location} to answer its outcome", interval=0.05)
    return answers[-1]


def executions(engine: Engine) -> int:
    machine = engine.workflow.stack.state_machines[STATE_MACHINE_LOGICAL_ID].arn
    return len(engine.client("stepfunctions").list_executions(stateMachineArn=machine)["executions"])


def test_a_post_answers_202_and_its_location_answers_the_outcome(engine: Engine, url: str, key: str) -> None:
    location = accepted(url, key)
    status, headers, text = outcome(location)

    assert status == 200 and headers["Content-Type"] == "application/json"
    assert "Idempotent-Replayed" not in headers
    body = json.loads(text)
    assert body["idempotencyKey"] == scoped(engine, key) and body["result"]["amount"] == PAYLOAD["amount"]
    assert engine.workflow.side_effect_runs(scoped(engine, key)) == 1
    # The outcome stays: the same GET again is the same answer.
    assert get(location)[::2] == (status, text)


def test_a_get_while_the_execution_runs_is_202_with_retry_after(engine: Engine, url: str, key: str) -> None:
    # The execution is held just before it saves its result, until the test has asked.
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        held.set()
        release.wait(30)

    engine.faults.before_dynamodb("SaveResult", hold)
    try:
        location = accepted(url, key)
        assert held.wait(30)
        status, headers, text = get(location)
    finally:
        release.set()

    assert status == 202 and int(headers["Retry-After"]) > 0 and "Location" not in headers
    assert json.loads(text)["status"] == "RUNNING"
    assert outcome(location)[0] == 200 and engine.workflow.side_effect_runs(scoped(engine, key)) == 1


def test_a_retried_post_is_a_second_location_with_the_first_answer_replayed(engine: Engine, url: str, key: str) -> None:
    first = outcome(accepted(url, key))
    again = outcome(accepted(url, key))

    # Two executions, one side effect; the retry's answer is the first's bytes, and the header says replayed.
    assert first[0] == again[0] == 200 and first[2] == again[2]
    assert again[1]["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first[1]
    assert engine.workflow.side_effect_runs(scoped(engine, key)) == 1


def test_the_same_key_with_another_body_is_422_on_its_location(engine: Engine, url: str, key: str) -> None:
    assert outcome(accepted(url, key))[0] == 200
    status, headers, text = outcome(accepted(url, key, {**PAYLOAD, "amount": PAYLOAD["amount"] + 1}))

    assert (status, headers["Content-Type"]) == (422, "application/problem+json")
    assert json.loads(text)["error"] == WorkflowError.KEY_REUSED
    assert engine.workflow.side_effect_runs(scoped(engine, key)) == 1


def test_an_invalid_key_is_400_at_the_post_and_starts_nothing(engine: Engine, url: str) -> None:
    before = executions(engine)
    status, headers, text = exchange(url, "k" * 256)

    assert (status, headers["Content-Type"]) == (400, "application/problem+json")
    assert json.loads(text)["error"] == WorkflowError.KEY_INVALID and "Location" not in headers
    assert executions(engine) == before


@pytest.mark.parametrize("execution_id", ["3c3caf12-5128-4b16-9e54-8da57a2db2c1", "not.an.execution", "x" * 81])
def test_an_id_no_post_answered_is_404(url: str, execution_id: str) -> None:
    status, headers, text = get(f"{url}/{execution_id}")

    assert (status, headers["Content-Type"]) == (404, "application/problem+json")
    assert json.loads(text)["type"].endswith("#http-request-not-found")


def test_twenty_concurrent_identical_posts_run_the_side_effect_once(engine: Engine, url: str, key: str) -> None:
    locations = at_once(20, lambda: accepted(url, key))

    assert len(set(locations)) == 20  # each POST its own execution
    answers = [outcome(location) for location in locations]
    assert engine.workflow.side_effect_runs(scoped(engine, key)) == 1
    results = [text for status, _, text in answers if status == 200]
    conflicts = [json.loads(text) for status, _, text in answers if status == 409]
    assert len(results) + len(conflicts) == 20 and results
    assert len(set(results)) == 1  # every 200 is the one result's bytes
    assert all(c["error"] == WorkflowError.IN_PROGRESS for c in conflicts)
    # Once the first has completed, any retry is its answer.
    assert outcome(accepted(url, key))[2] == results[0]


def test_a_status_answers_only_the_signed_caller_that_started_it(engine: Engine, url: str, key: str) -> None:
    iam = engine.service(Iam)
    api_id = url.split("/restapis/")[1].split("/")[0]
    resource = f"arn:aws:execute-api:{engine.region}:{iam.callers.account}:{api_id}/*"
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "execute-api:Invoke", "Resource": resource}],
    }
    alice, bob = iam.add_caller("alice", policy), iam.add_caller("bob", policy)
    status, headers, _ = exchange(url, key, caller=alice)
    assert status == 202
    location = urllib.parse.urljoin(url, headers["Location"])

    def answered() -> Answer | None:
        got = get(location, caller=alice)
        return got if got[0] != 202 else None

    assert wait_until(answered, 30, what="alice's outcome", interval=0.05)[0] == 200
    # Bob, and the engine's own user, learnt the id: each gets what an unknown id gets (scoped by userArn).
    for other in (bob, ("local", "local")):
        status, _, text = get(location, caller=other)
        assert status == 404 and json.loads(text)["type"].endswith("#http-request-not-found")
