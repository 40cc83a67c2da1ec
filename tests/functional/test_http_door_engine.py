"""The HTTP door's mapping templates around the real workflow: the request template's StartSyncExecution
call is made on the embedded engine (the template deployed with WorkflowType EXPRESS and HttpFrontDoor
true), and the engine's answer goes through the response template, as API Gateway would pass it. Nothing
here serves HTTP yet (docs/doors.md, "HTTP"): it checks that what the templates send starts this workflow and
that real outcomes map to the statuses of that page.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from idemflow.contract import STATE_MACHINE_LOGICAL_ID
from idemflow.engine import Engine
from idemflow.engine.services.apigateway.vtl import (
    MethodRequest,
    Rendered,
    RequestContext,
    render_request,
    render_response,
)
from idemflow.template import load_template, substitute

from .side_effects import DEFAULT

pytestmark = pytest.mark.functional

DECLINED = "SideEffectDeclinedError"


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(wait_time_scale=0, parameter_overrides={"WorkflowType": "EXPRESS", "HttpFrontDoor": "true"}) as running:
        yield running


@pytest.fixture(scope="module")
def templates(engine: Engine) -> tuple[str, str]:
    values = {**engine.workflow.stack.parameters, STATE_MACHINE_LOGICAL_ID: engine.workflow.state_machine_arn}
    integration = load_template()["Resources"]["HttpRequestsPost"]["Properties"]["Integration"]
    (response,) = integration["IntegrationResponses"]
    return (
        substitute(integration["RequestTemplates"]["application/json"]["Fn::Sub"], values),
        substitute(response["ResponseTemplates"]["application/json"]["Fn::Sub"], values),
    )


def post(engine: Engine, templates: tuple[str, str], key: str, body: Any, **identity: str) -> Rendered:
    request_template, response_template = templates
    request = MethodRequest(body=json.dumps(body), headers={"Idempotency-Key": key})
    context = RequestContext(request_id=str(uuid.uuid4()), identity=identity)
    sent = render_request(request_template, request, context)
    assert sent.status is None, "refused requests are tests/unit/test_http_door.py's"
    answer = engine.client("stepfunctions").start_sync_execution(**json.loads(sent.body))
    answer.pop("ResponseMetadata", None)
    return render_response(response_template, json.dumps(answer, default=str), request, context, after=sent)


def test_the_first_request_runs_the_side_effect_and_a_retry_replays_it(
    engine: Engine, templates: tuple[str, str], key: str
) -> None:
    first = post(engine, templates, key, DEFAULT.payload)
    again = post(engine, templates, key, DEFAULT.payload)

    assert first.status is None and again.status is None  # 200
    assert "Idempotent-Replayed" not in first.headers and again.headers["Idempotent-Replayed"] == "true"
    first_output, again_output = json.loads(first.body), json.loads(again.body)
    assert first_output["idempotencyKey"] == key and again_output["result"] == first_output["result"]
    assert engine.workflow.side_effect_runs(key) == 1


def test_the_same_key_with_another_body_is_a_422(engine: Engine, templates: tuple[str, str], key: str) -> None:
    post(engine, templates, key, DEFAULT.payload)
    reused = post(engine, templates, key, {**DEFAULT.payload, "amount": 1})

    assert reused.status == 422 and reused.headers["Content-Type"] == "application/problem+json"
    assert json.loads(reused.body)["error"] == "IdempotencyKeyReused"
    assert engine.workflow.side_effect_runs(key) == 1


def test_a_declined_side_effect_is_a_400_and_frees_the_key(
    engine: Engine, templates: tuple[str, str], key: str
) -> None:
    engine.faults.fail_next(engine.workflow.side_effect_function, 1, DECLINED, "declined")
    declined = post(engine, templates, key, DEFAULT.payload)
    retried = post(engine, templates, key, DEFAULT.payload)

    assert declined.status == 400 and json.loads(declined.body)["error"] == DECLINED
    assert retried.status is None and engine.workflow.side_effect_runs(key) == 1


def test_a_transient_failure_after_every_retry_is_a_503(engine: Engine, templates: tuple[str, str], key: str) -> None:
    transient = engine.workflow.stack.parameters["SideEffectTransientError"]
    engine.faults.fail_next(engine.workflow.side_effect_function, 10, transient)
    answered = post(engine, templates, key, DEFAULT.payload)

    assert answered.status == 503 and json.loads(answered.body)["error"] == transient
    assert engine.workflow.side_effect_runs(key) == 0


def test_two_callers_with_the_same_key_do_not_share_a_result(
    engine: Engine, templates: tuple[str, str], key: str
) -> None:
    mine = post(engine, templates, key, DEFAULT.payload, apiKeyId="caller-a")
    theirs = post(engine, templates, key, DEFAULT.payload, apiKeyId="caller-b")

    assert mine.status is None and theirs.status is None
    assert "Idempotent-Replayed" not in theirs.headers
    assert (
        engine.workflow.side_effect_runs(f"apiKey:caller-a|{key}")
        == engine.workflow.side_effect_runs(f"apiKey:caller-b|{key}")
        == 1
    )
