"""The HTTP door's default authorization, AWS_IAM (HttpAuthorization): only SigV4-signed callers whose identity
policy allows ``execute-api:Invoke`` on the method run the workflow, each one's Idempotency-Key scoped to its
identity; every other request is refused as API Gateway refuses it, with the door's problem body, and nothing
starts. A real HTTP client (urllib, signed with botocore) against the engine's endpoint.

AWS's answers pinned here:
- "Gateway response types for API Gateway" (docs.aws.amazon.com/apigateway/latest/developerguide/
  supported-gateway-response-types.html): MISSING_AUTHENTICATION_TOKEN, INVALID_SIGNATURE, ACCESS_DENIED, 403 each;
- "How do I troubleshoot HTTP 403 errors from API Gateway?" (repost.aws/knowledge-center/
  api-gateway-troubleshoot-403-forbidden): the messages and ``x-amzn-ErrorType`` of an unsigned request
  (``Missing Authentication Token``, MissingAuthenticationTokenException) and of an unknown access key (``The
  security token included in the request is invalid.``, AccessDeniedException);
- "How do I troubleshoot signature mismatch errors when making SigV4 signed requests with IAM authentication to API
  Gateway?" (repost.aws/knowledge-center/api-gateway-iam-sigv4-mismatch): a wrong secret's ``The request signature
  we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.``,
  and a caller without the permission: ``User: arn:aws:iam::xxxxxxxxxxxx:user/username is not authorized to
  perform: execute-api:Invoke on resource: arn:aws:execute-api:<region>:xxxxxxxxxxxx:<api-id>/stage/method/path
  because no identity-based policy allows the execute-api:Invoke action.``, the account in the resource masked
  but for its last four digits as an AWS answer records it (``arn:aws:execute-api:us-west-2:********2543:...``,
  ASFHyP3/hyp3 issue 2283);
- the resource of ``execute-api:Invoke``, ``arn:aws:execute-api:<region>:<account>:<api-id>/<stage>/<METHOD>/<path>``
  ("Control access for invoking an API", API Gateway developer guide).
"""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from idemflow.client import sign_http_request
from idemflow.engine import Engine
from idemflow.engine.services.apigateway.service import ApiGateway
from idemflow.engine.services.iam.service import Iam

from .test_http_door import DOOR, PAYLOAD, PROBLEM_MEMBERS, post, scoped

pytestmark = pytest.mark.functional


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(parameter_overrides=DOOR, wait_time_scale=0) as running:
        yield running


@pytest.fixture(scope="module")
def url(engine: Engine) -> str:
    ((_, found),) = engine.service(ApiGateway).urls()
    return found


@pytest.fixture
def key() -> str:
    return f"order-{uuid.uuid4()}"


def invoke_policy(resource: str) -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "execute-api:Invoke", "Resource": resource}],
    }


def nothing_started(engine: Engine, before: tuple[int, dict[str, int]]) -> bool:
    return (len(engine.workflow.records()), dict(engine.service(ApiGateway).integration_calls)) == before


def state(engine: Engine) -> tuple[int, dict[str, int]]:
    return len(engine.workflow.records()), dict(engine.service(ApiGateway).integration_calls)


def refused(status: int, headers: dict[str, str], body: Any, title: str, message: str) -> None:
    assert status == 403, body
    assert headers["Content-Type"] == "application/problem+json"
    assert set(body) == PROBLEM_MEMBERS
    assert body["type"].endswith("#http-refused-by-api-gateway") and body["status"] == 403
    assert (body["title"], body["detail"]) == (title, message)


def test_an_unsigned_post_is_refused_and_starts_nothing(engine: Engine, url: str, key: str) -> None:
    before = state(engine)
    status, headers, body = post(url, key, signed=False)

    refused(status, headers, body, "Not signed, or no such resource or method", "Missing Authentication Token")
    assert headers["x-amzn-ErrorType"] == "MissingAuthenticationTokenException"
    assert nothing_started(engine, before)


def test_a_wrong_secret_or_a_body_changed_after_signing_is_an_invalid_signature(
    engine: Engine, url: str, key: str
) -> None:
    before = state(engine)
    wrong_secret = post(url, key, caller=("local", "not-the-secret"))
    request = urllib.request.Request(
        url,
        data=json.dumps(PAYLOAD).encode(),
        headers={"Content-Type": "application/json", "Idempotency-Key": key},
        method="POST",
    )
    sign_http_request(request)
    request.data = json.dumps({**PAYLOAD, "amount": 1}).encode()  # the signed body's hash no longer matches
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            changed: tuple[int, dict[str, str], Any] = (answer.status, dict(answer.headers), json.loads(answer.read()))
    except urllib.error.HTTPError as error:
        changed = (error.code, dict(error.headers), json.loads(error.read()))

    mismatch = (
        "The request signature we calculated does not match the signature you provided. "
        "Check your AWS Secret Access Key and signing method."
    )
    for status, headers, body in (wrong_secret, changed):
        refused(status, headers, body, "Invalid signature", mismatch)
        assert headers["x-amzn-ErrorType"] == "InvalidSignatureException"
    assert nothing_started(engine, before)


def test_an_unknown_access_key_is_refused(engine: Engine, url: str, key: str) -> None:
    before = state(engine)
    status, headers, body = post(url, key, caller=("AKIAUNKNOWNUNKNOWN00", "secret"))

    refused(status, headers, body, "Invalid signature", "The security token included in the request is invalid.")
    assert headers["x-amzn-ErrorType"] == "AccessDeniedException"
    assert nothing_started(engine, before)


def test_the_engines_own_user_runs_the_workflow(engine: Engine, url: str, key: str) -> None:
    status, _, body = post(url, key)

    assert status == 200 and body["idempotencyKey"] == scoped(engine, key)
    assert engine.workflow.side_effect_runs(scoped(engine, key)) == 1


def test_a_caller_whose_policy_does_not_allow_the_method_is_refused(engine: Engine, url: str, key: str) -> None:
    iam = engine.service(Iam)
    region, account = engine.region, iam.callers.account
    api_id, stage = url.split("/restapis/")[1].split("/")[:2]
    only_get = invoke_policy(f"arn:aws:execute-api:{region}:{account}:{api_id}/*/GET/*")
    caller = iam.add_caller("reader", only_get)
    before = state(engine)

    status, headers, body = post(url, key, caller=caller)

    masked = f"{'*' * 8}{account[-4:]}"
    message = (
        f"User: arn:aws:iam::{account}:user/reader is not authorized to perform: execute-api:Invoke on resource: "
        f"arn:aws:execute-api:{region}:{masked}:{api_id}/{stage}/POST/requests because no identity-based policy "
        "allows the execute-api:Invoke action"
    )
    refused(status, headers, body, "Forbidden", message)
    assert headers["x-amzn-ErrorType"] == "AccessDeniedException"
    assert nothing_started(engine, before)


def test_two_allowed_callers_with_the_same_key_get_an_execution_each(engine: Engine, url: str, key: str) -> None:
    iam = engine.service(Iam)
    region, account = engine.region, iam.callers.account
    api_id = url.split("/restapis/")[1].split("/")[0]
    policy = invoke_policy(f"arn:aws:execute-api:{region}:{account}:{api_id}/*/POST/requests")
    alice, bob = iam.add_caller("alice", policy), iam.add_caller("bob", policy)

    first_alice = post(url, key, caller=alice)
    first_bob = post(url, key, caller=bob)
    again_alice = post(url, key, caller=alice)

    assert first_alice[0] == first_bob[0] == again_alice[0] == 200
    assert first_alice[2]["result"] != first_bob[2]["result"]  # each caller's own side effect
    assert again_alice[1]["Idempotent-Replayed"] == "true" and again_alice[2]["result"] == first_alice[2]["result"]
    keys = [f"iam:arn:aws:iam::{account}:user/{name}|{key}" for name in ("alice", "bob")]
    assert [engine.workflow.side_effect_runs(k) for k in keys] == [1, 1]
    assert first_alice[2]["idempotencyKey"] == keys[0] and first_bob[2]["idempotencyKey"] == keys[1]


def test_a_functions_role_session_calls_under_its_role_which_does_not_allow_the_door(
    engine: Engine, url: str, key: str
) -> None:
    # A function's worker signs with its role's session key: the door decides execute-api:Invoke under that role
    # (the template grants the charge function none: least privilege), and names the session as AWS does.
    iam = engine.service(Iam)
    function = "idemflow-ChargeFunction"  # the session's name: the function's, as Lambda names it
    access_key = iam.access_key_of("", "ChargeFunction", function)
    assert access_key.startswith("ASIA")
    before = state(engine)

    status, headers, body = post(url, key, caller=(access_key, "local"))

    role = iam.role_arn_of("", "ChargeFunction").rsplit("/", 1)[1]
    assert status == 403 and headers["x-amzn-ErrorType"] == "AccessDeniedException"
    assert body["detail"].startswith(
        f"User: arn:aws:sts::{iam.callers.account}:assumed-role/{role}/{function} is not authorized to perform: "
        "execute-api:Invoke on resource: "
    )
    assert nothing_started(engine, before)
