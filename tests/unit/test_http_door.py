"""The HTTP front door of template.yaml: its resources, and its mapping templates rendered for every row of
the HTTP table of docs/doors.md (idemflow/engine/services/apigateway/vtl.py renders them; the features it relies on are
pinned, with their AWS sources, in tests/conformance/test_apigateway_vtl.py).

The templates are read from template.yaml (their ``Fn::Sub`` resolved for the stack), never copied; the
execution outputs are the definition's own terminal states'. StartSyncExecution answers HTTP 200 even
when the execution failed, with ``status``, ``output``, ``error`` and ``cause`` in the body
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartSyncExecution.html): the response
template turns each outcome into the status. A Standard workflow's door starts it with StartExecution, whose
answer is ``{"executionArn", "startDate"}``
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html), and reads it with
DescribeExecution, whose answer has the same ``status``, ``output``, ``error`` and ``cause``
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_DescribeExecution.html; recorded on AWS:
LocalStack's ``v2/base/test_base.snapshot.json::test_state_fail``, a FAILED execution's ``error`` and ``cause``).
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import airspeed.operators  # type: ignore[import-untyped]
import jsonschema
import pytest

from idemflow.contract import MAX_KEY_LENGTH, MAX_PAYLOAD_JSON_CHARS, STATE_MACHINE_LOGICAL_ID, WorkflowError
from idemflow.engine.services.apigateway.models import ApiResource, Method
from idemflow.engine.services.apigateway.vtl import (
    InvalidJsonBody,
    MethodRequest,
    Rendered,
    RequestContext,
    render_request,
    render_response,
)
from idemflow.engine.stack import resolve_stack
from idemflow.template import Stack, load_template
from tests.paths import DEFINITION_PATH, DOORS_DOC, TEMPLATE_PATH

pytestmark = pytest.mark.unit

ENABLED = {"HttpFrontDoor": "true", "WorkflowType": "EXPRESS"}
STANDARD = {"HttpFrontDoor": "true", "WorkflowType": "STANDARD"}
KEY = "order-2026-0001"
REQUEST_ID = "5e1f8a40-0000-4000-8000-00000000d00d"
PROBLEM = "application/problem+json"


@dataclass(frozen=True)
class Door:
    stack: Stack
    resources: dict[str, Any]
    methods: dict[str, Method]
    """The door's methods as the stack resolved them (their templates' ``Fn::Sub`` done), by logical id."""

    @property
    def problem_types(self) -> str:
        return self.stack.parameters["HttpProblemTypeBaseUrl"]

    @property
    def request_template(self) -> str:
        return self.methods["HttpRequestsPost"].integration.request_templates["application/json"]

    @property
    def response_template(self) -> str:
        (response,) = self.methods["HttpRequestsPost"].integration.responses
        return response.templates["application/json"]


@cache
def door(workflow_type: str = "EXPRESS") -> Door:
    stack = resolve_stack(parameter_overrides={"HttpFrontDoor": "true", "WorkflowType": workflow_type})
    return Door(stack=stack, resources=load_template()["Resources"], methods=stack.models(Method))


def post(body: Any, key: str = KEY, identity: dict[str, str] | None = None, **authorizer: str) -> Rendered:
    request = MethodRequest(body=json.dumps(body), headers={"Idempotency-Key": key})
    context = RequestContext(request_id=REQUEST_ID, identity=identity or {}, authorizer=authorizer)
    return render_request(door().request_template, request, context)


def answer(sent: Rendered, integration_body: dict[str, Any]) -> Rendered:
    request = MethodRequest(body="{}", headers={"Idempotency-Key": KEY})
    context = RequestContext(request_id=REQUEST_ID)
    return render_response(door().response_template, json.dumps(integration_body), request, context, after=sent)


def started(sent: Rendered) -> dict[str, Any]:
    """The StartSyncExecution request the door sends, with its input parsed."""
    call: dict[str, Any] = json.loads(sent.body)
    return {**call, "input": json.loads(call["input"])}


def problem(answered: Rendered, status: int, anchor: str) -> dict[str, Any]:
    """The RFC 9457 problem the door answered with (https://www.rfc-editor.org/rfc/rfc9457)."""
    assert answered.status == status
    assert answered.headers["Content-Type"] == PROBLEM
    body: dict[str, Any] = json.loads(answered.body)
    assert body["type"] == f"{door().problem_types}#{anchor}"
    assert body["status"] == status and body["title"] and body["detail"]
    assert body["requestId"] == REQUEST_ID
    return body


def failed(error: str, status: str = "FAILED") -> dict[str, Any]:
    return {"status": status, "error": error, "cause": f"{error}: details"}


# -- The resources -----------------------------------------------------------------------------------------


def test_the_door_exists_only_when_enabled() -> None:
    resources = load_template()["Resources"]
    door_ids = [lid for lid in resources if lid.startswith("Http")]
    assert {resources[lid]["Type"] for lid in door_ids} >= {
        "AWS::ApiGateway::RestApi",
        "AWS::ApiGateway::Method",
        "AWS::ApiGateway::Stage",
        "AWS::IAM::Role",
    }
    # every door resource exists only with the door (the usage plan only with API keys, the GET only on a
    # Standard workflow: narrower conditions)
    narrower = ("HttpDoorNeedsApiKey", "HttpDoorIsStandard")
    assert all(resources[lid]["Condition"] in ("CreateHttpFrontDoor", *narrower) for lid in door_ids)
    for condition in narrower:
        assert {"Condition": "CreateHttpFrontDoor"} in load_template()["Conditions"][condition]["Fn::And"]
    assert "HttpRequestsUrl" not in resolve_stack().outputs
    url = door().stack.outputs["HttpRequestsUrl"]
    assert url.startswith("https://") and url.endswith("/requests")


@pytest.mark.parametrize(
    ("workflow_type", "start", "methods"),
    [
        # StartSyncExecution "starts a Synchronous Express state machine execution" (API reference above).
        ("EXPRESS", "StartSyncExecution", {"HttpRequestsPost": ("POST", "/requests")}),
        # A Standard workflow is started, then read back by its execution's name.
        (
            "STANDARD",
            "StartExecution",
            {"HttpRequestsPost": ("POST", "/requests"), "HttpRequestGet": ("GET", "/requests/{id}")},
        ),
    ],
)
def test_each_workflow_type_has_its_start_and_its_methods(
    workflow_type: str, start: str, methods: dict[str, tuple[str, str]]
) -> None:
    found = door(workflow_type).methods
    by_id = {r.id: r for r in door(workflow_type).stack.models(ApiResource).values()}

    def path(resource_id: str) -> str:
        parts: list[str] = []
        while resource_id in by_id:  # up to the API's root resource
            parts.insert(0, by_id[resource_id].path_part)
            resource_id = by_id[resource_id].parent_id
        return "/" + "/".join(parts)

    assert {lid: (m.http_method, path(m.resource_id)) for lid, m in found.items()} == methods
    assert found["HttpRequestsPost"].integration.uri.endswith(f":states:action/{start}")


def test_a_template_nesting_the_workflow_can_open_the_door(tmp_path: Path) -> None:
    location = os.path.relpath(TEMPLATE_PATH, tmp_path)
    path = tmp_path / "template.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        Transform: AWS::Serverless-2016-10-31
        Resources:
          Workflow:
            Type: AWS::Serverless::Application
            Properties:
              Location: {location}
              Parameters: {{HttpFrontDoor: "true", WorkflowType: EXPRESS}}
        Outputs:
          Url:
            Value: !GetAtt Workflow.Outputs.HttpRequestsUrl
        """)
    )
    stack = resolve_stack(path, stack_name="user")
    assert stack.outputs["Url"] == stack.workflow().outputs["HttpRequestsUrl"]


@pytest.mark.parametrize("method", ["HttpRequestsPost", "HttpRequestGet"])
def test_the_door_calls_step_functions_as_a_role_that_may_run_only_this_state_machine(method: str) -> None:
    resources = door().resources
    integration = resources[method]["Properties"]["Integration"]
    assert integration["Type"] == "AWS" and integration["IntegrationHttpMethod"] == "POST"
    assert integration["Credentials"] == {"Fn::GetAtt": ["HttpApiRole", "Arn"]}
    # Only application/json has a template; PassthroughBehavior NEVER refuses any other media type.
    assert integration["PassthroughBehavior"] == "NEVER" and set(integration["RequestTemplates"]) == {
        "application/json"
    }
    role = resources["HttpApiRole"]["Properties"]
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "apigateway.amazonaws.com"} and trust["Action"] == "sts:AssumeRole"
    statements = [s for policy in role["Policies"] for s in policy["PolicyDocument"]["Statement"]]
    assert statements == [
        {
            "Sid": "Start",
            "Effect": "Allow",
            "Action": {"Fn::If": ["HttpDoorIsStandard", "states:StartExecution", "states:StartSyncExecution"]},
            "Resource": {"Ref": STATE_MACHINE_LOGICAL_ID},
        },
        # A Standard door's GET reads this state machine's executions, and no other's.
        {
            "Fn::If": [
                "HttpDoorIsStandard",
                {
                    "Sid": "DescribeExecution",
                    "Effect": "Allow",
                    "Action": "states:DescribeExecution",
                    "Resource": {
                        "Fn::Sub": "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:execution:"
                        "${IdempotentStateMachine.Name}:*"
                    },
                },
                {"Ref": "AWS::NoValue"},
            ]
        },
    ]
    assert started(post({"a": 1}))["stateMachineArn"] == door().stack.state_machines[STATE_MACHINE_LOGICAL_ID].arn


def test_a_missing_or_blank_key_or_a_body_that_is_not_json_is_refused_before_any_template() -> None:
    # "API Gateway ... verifies that the required request parameters in the URI, query string, and headers
    # of an incoming request are included and not blank ... [and] the applicable request payload adheres to
    # the configured JSON schema request of the method. ... If the validation fails, API Gateway immediately
    # fails the request, returns a 400 error response to the caller"
    # (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-method-request-validation.html).
    resources = door().resources
    method = resources["HttpRequestsPost"]["Properties"]
    assert method["RequestParameters"] == {"method.request.header.Idempotency-Key": True}
    assert method["RequestValidatorId"] == {"Ref": "HttpRequestValidator"}
    validator = resources["HttpRequestValidator"]["Properties"]
    assert validator["ValidateRequestParameters"] is True and validator["ValidateRequestBody"] is True
    assert method["RequestModels"] == {"application/json": {"Ref": "HttpPayloadModel"}}
    schema = resources["HttpPayloadModel"]["Properties"]["Schema"]
    for payload in ({}, {"amount": 4200}, [], "text", 0, False):
        jsonschema.Draft4Validator(schema).validate(payload)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(schema).validate(None)
    # Their refusals are problems too (gateway responses: not VTL, API Gateway substitutes $context only).
    refusals = {
        r["Properties"]["ResponseType"]: r["Properties"]
        for r in resources.values()
        if r["Type"].endswith("GatewayResponse")
    }
    # Every refusal this door can meet (no authorizer; IAM authorization's INVALID_SIGNATURE and EXPIRED_TOKEN
    # besides ACCESS_DENIED and MISSING_AUTHENTICATION_TOKEN) has its own problem body whose
    # status is the answer's: each type's default status ("Gateway response types for API Gateway",
    # supported-gateway-response-types), and DEFAULT_4XX / DEFAULT_5XX with their status set explicitly.
    default_status = {
        "BAD_REQUEST_PARAMETERS": 400,
        "BAD_REQUEST_BODY": 400,
        "ACCESS_DENIED": 403,
        "INVALID_API_KEY": 403,
        "INVALID_SIGNATURE": 403,
        "EXPIRED_TOKEN": 403,
        "MISSING_AUTHENTICATION_TOKEN": 403,
        "RESOURCE_NOT_FOUND": 404,
        "REQUEST_TOO_LARGE": 413,
        "UNSUPPORTED_MEDIA_TYPE": 415,
        "THROTTLED": 429,
        "QUOTA_EXCEEDED": 429,
        "INTEGRATION_FAILURE": 504,
        "INTEGRATION_TIMEOUT": 504,
    }
    assert set(refusals) == {*default_status, "DEFAULT_4XX", "DEFAULT_5XX"}
    for kind, refusal in refusals.items():
        assert refusal["ResponseParameters"] == {"gatewayresponse.header.Content-Type": f"'{PROBLEM}'"}
        status = int(refusal["StatusCode"]) if kind.startswith("DEFAULT_") else default_status[kind]
        assert "StatusCode" not in refusal or kind.startswith("DEFAULT_")
        body = refusal["ResponseTemplates"]["application/json"]["Fn::Sub"]
        assert f'"status": {status},' in body and '"type": ' in body and '"requestId": "$context.requestId"' in body
        assert '"title": "' in body and '"detail": ' in body and '""' not in body
    assert (refusals["DEFAULT_4XX"]["StatusCode"], refusals["DEFAULT_5XX"]["StatusCode"]) == ("400", "500")
    assert (
        "#http-idempotency-key-invalid"
        in refusals["BAD_REQUEST_PARAMETERS"]["ResponseTemplates"]["application/json"]["Fn::Sub"]
    )
    assert "#http-payload-invalid" in refusals["BAD_REQUEST_BODY"]["ResponseTemplates"]["application/json"]["Fn::Sub"]
    # Without the validator, the template itself would stop at a body that is not JSON: nothing is sent.
    with pytest.raises(InvalidJsonBody):
        render_request(
            door().request_template,
            MethodRequest(body="amount=4200", headers={"Idempotency-Key": KEY}),
            RequestContext(request_id=REQUEST_ID),
        )


# -- The request template ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        {"customerId": "cust-1", "amount": 4200, "currency": "EUR"},
        {"note": 'it\'s "quoted", a \\ backslash, a / slash,\nnew line, tab\t, é, 😀, </script>'},
        [1, "two", None, {"three": [3.5]}],
        "a bare string",
        0,
        {},
    ],
    ids=["charge", "escapes", "array", "string", "zero", "empty"],
)
def test_a_valid_request_starts_this_workflow_with_the_key_and_the_body(payload: Any) -> None:
    sent = post(payload)
    assert sent.status is None and sent.headers == {}
    call = started(sent)
    assert call["input"] == {"idempotencyKey": KEY, "payload": payload}
    assert call["name"] == REQUEST_ID  # the execution is found by the request's id


def test_the_request_template_is_parsed_once_and_each_concurrent_request_renders_its_own_body(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The door's template is parsed at its first request, then shared: by requests at once, on threads, too.
    parses: list[str] = []
    body_class = airspeed.operators.TemplateBody

    class Counted(body_class):  # type: ignore[misc]
        def __init__(self, filename: str, content: str) -> None:
            parses.append(content)
            super().__init__(filename, content)

    monkeypatch.setattr(airspeed.operators, "TemplateBody", Counted)
    template = door().request_template + "\n"  # a text no earlier test parsed
    keys = [f"order-{n}" for n in range(16)]

    def send(key: str) -> dict[str, Any]:
        request = MethodRequest(body=json.dumps({"n": key}), headers={"Idempotency-Key": key})
        return started(render_request(template, request, RequestContext(request_id=REQUEST_ID)))

    with ThreadPoolExecutor(8) as pool:
        calls = list(pool.map(send, keys))

    assert [c["input"] for c in calls] == [{"idempotencyKey": k, "payload": {"n": k}} for k in keys]
    assert parses == [template]


def test_a_key_with_quotes_and_backslashes_reaches_the_workflow_unchanged() -> None:
    key = "k'\"\\/ #$x{}"
    assert started(post({"a": 1}, key=key))["input"]["idempotencyKey"] == key


@pytest.mark.parametrize(
    ("header", "key"),
    [("  k-1 ", "k-1"), ("\tk-1\t", "k-1"), ('"k-1"', "k-1"), (' "k 1" ', "k 1"), ('"', '"'), ('"a"b"', None)],
)
def test_the_header_is_trimmed_then_unquoted_then_checked(header: str, key: str | None) -> None:
    # RFC 9110 5.5 (no leading or trailing whitespace in a field value), RFC 8941 3.3.3 (sf-string: "..."
    # without escapes here); a quoted value with a quote or backslash inside is refused, not read two ways.
    sent = post({"a": 1}, key=header)
    if key is None:
        assert sent.status == 400 and "stateMachineArn" not in json.loads(sent.body)
    else:
        assert started(sent)["input"]["idempotencyKey"] == key


@pytest.mark.parametrize("header", ["clé", "clÃ©", "k\x7f", '" k"', '"k "', "a\x00b"])
def test_a_header_outside_printable_ascii_or_with_spaces_inside_the_quotes_is_refused(header: str) -> None:
    sent = post({"a": 1}, key=header)
    assert sent.status == 400 and "stateMachineArn" not in json.loads(sent.body)


def test_keys_are_scoped_to_the_caller_the_api_identifies() -> None:
    # $context.identity.apiKeyId (methods that require an API key) and $context.authorizer.principalId
    # (a Lambda authorizer), developer guide's variables reference: a key belongs to its caller.
    def key_sent(identity: dict[str, str] | None = None, **authorizer: str) -> str:
        return str(started(post({"a": 1}, identity=identity, **authorizer))["input"]["idempotencyKey"])

    assert key_sent() == KEY
    assert key_sent({"apiKeyId": "k3y"}) == f"apiKey:k3y|{KEY}"
    assert key_sent(principalId="user-7") == f"principal:user-7|{KEY}"
    assert key_sent({"apiKeyId": "k3y"}, principalId="user-7") == f"apiKey:k3y|{KEY}"
    assert key_sent({"apiKeyId": "a"}) != key_sent({"apiKeyId": "b"})
    # AWS_IAM: $context.identity.userArn, "the effective user identified after authentication"; after an API key's
    user = "arn:aws:iam::123456789012:user/alice"
    assert key_sent({"userArn": user}) == f"iam:{user}|{KEY}"
    assert key_sent({"apiKeyId": "k3y", "userArn": user}) == f"apiKey:k3y|iam:{user}|{KEY}"


def test_a_scoped_key_is_at_most_the_workflows_255_characters() -> None:
    # The scope and the key make the workflow's key: a signed caller's key has 255 less its scope's length.
    user = "arn:aws:iam::123456789012:user/alice"
    room = MAX_KEY_LENGTH - len(f"iam:{user}|")
    fits = post({"a": 1}, key="k" * room, identity={"userArn": user})
    assert started(fits)["input"]["idempotencyKey"] == f"iam:{user}|" + "k" * room
    over = post({"a": 1}, key="k" * (room + 1), identity={"userArn": user})
    assert over.status == 400 and "stateMachineArn" not in json.loads(over.body)


def test_a_key_longer_than_the_contract_allows_is_refused_and_nothing_is_started() -> None:
    assert started(post({"a": 1}, key="k" * MAX_KEY_LENGTH))["input"]["idempotencyKey"] == "k" * MAX_KEY_LENGTH
    sent = post({"a": 1}, key="k" * (MAX_KEY_LENGTH + 1))
    assert sent.status == 400
    assert "stateMachineArn" not in json.loads(sent.body)  # Step Functions is told to start nothing
    body = problem(
        answer(sent, {"__type": "ValidationException", "message": "stateMachineArn"}),
        400,
        "http-idempotency-key-invalid",
    )
    assert str(MAX_KEY_LENGTH) in body["detail"]


def test_a_body_over_the_quota_is_refused_with_413_and_nothing_is_started() -> None:
    def payload(chars: int) -> dict[str, str]:
        filler = chars - len(json.dumps({"p": ""}, separators=(",", ":")))
        return {"p": "x" * filler}

    assert len(json.dumps(payload(MAX_PAYLOAD_JSON_CHARS), separators=(",", ":"))) == MAX_PAYLOAD_JSON_CHARS
    assert started(post(payload(MAX_PAYLOAD_JSON_CHARS)))["input"]["payload"] == payload(MAX_PAYLOAD_JSON_CHARS)
    sent = post(payload(MAX_PAYLOAD_JSON_CHARS + 1))
    assert sent.status == 413 and "stateMachineArn" not in json.loads(sent.body)
    body = problem(
        answer(sent, {"__type": "ValidationException", "message": "stateMachineArn"}), 413, "http-payload-too-large"
    )
    assert str(MAX_PAYLOAD_JSON_CHARS) in body["detail"]


# -- The response template ---------------------------------------------------------------------------------


def _outputs() -> dict[str, dict[str, Any]]:
    """The output of each terminal Pass state of the definition, for the key KEY and a result."""
    states = json.loads(DEFINITION_PATH.read_text())["States"]
    result = {"chargeId": KEY, "status": "CHARGED"}
    paths = {"idempotencyKey.$": KEY, "result.$": result}
    return {
        name: {
            field.removesuffix(".$"): paths[field] if field.endswith(".$") else value
            for field, value in state["Parameters"].items()
        }
        for name, state in states.items()
        if state["Type"] == "Pass" and state.get("End")
    }


@pytest.mark.parametrize("state", sorted(_outputs()))
def test_a_succeeded_execution_answers_200_with_its_output_and_a_replay_says_so(state: str) -> None:
    output = _outputs()[state]
    answered = answer(post({"a": 1}), {"status": "SUCCEEDED", "output": json.dumps(output, separators=(",", ":"))})
    assert answered.status is None  # the integration response's 200 stands
    # The output without its replayed member, in the output's own order; the header says replayed.
    assert json.loads(answered.body) == {k: v for k, v in output.items() if k != "replayed"}
    assert list(json.loads(answered.body)) == [k for k in output if k != "replayed"]
    replayed = {"Idempotent-Replayed": "true"} if output["replayed"] else {}
    assert answered.headers == replayed


def _compact(value: Any) -> str:
    # Step Functions' execution output as StartSyncExecution answers it: compact JSON (AWS-recorded, LocalStack
    # express/test_express_sync.py::test_base: "output": "{\"Arg1\":\"argument1\"}").
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize(
    ("first_state", "replay_state"), [("ReturnResult", "ReturnCached"), ("ReturnUnstoredResult", "ReturnWithoutResult")]
)
def test_a_replay_answers_the_first_responses_bytes_and_only_the_header_differs(
    first_state: str, replay_state: str
) -> None:
    # IETF draft-ietf-httpapi-idempotency-key-header: a request retried after the first completed SHOULD get
    # "the result of the previously completed operation"; Stripe answers the original response. Both outputs
    # hold the same result (the record's JSON text), so the bodies are the same bytes.
    outputs = _outputs()
    first = answer(post({"a": 1}), {"status": "SUCCEEDED", "output": _compact(outputs[first_state])})
    replay = answer(post({"a": 1}), {"status": "SUCCEEDED", "output": _compact(outputs[replay_state])})
    assert first.status == replay.status is None
    assert "Idempotent-Replayed" not in first.headers and replay.headers["Idempotent-Replayed"] == "true"
    assert first.body == replay.body and "replayed" not in json.loads(first.body)


# The HTTP table of docs/doors.md, row by row: every error the workflow fails with has its status.
WORKFLOW_ERRORS = {
    WorkflowError.KEY_INVALID: (400, "http-idempotency-key-invalid"),
    WorkflowError.PAYLOAD_INVALID: (400, "http-payload-invalid"),
    WorkflowError.KEY_REUSED: (422, "http-idempotency-key-reused"),
    WorkflowError.IN_PROGRESS: (409, "http-in-progress"),
    WorkflowError.RECORD_INVALID: (500, "http-internal-error"),
    WorkflowError.LOCK_LOST: (500, "http-internal-error"),
    WorkflowError.RESULT_NOT_SAVED: (503, "http-outcome-unknown"),
    WorkflowError.OUTCOME_UNKNOWN: (503, "http-outcome-unknown"),
}


def test_every_workflow_error_has_a_status() -> None:
    assert set(WORKFLOW_ERRORS) == set(WorkflowError)


@pytest.mark.parametrize("error", list(WorkflowError), ids=lambda e: e.value)
def test_a_failed_execution_answers_its_status_as_a_problem(error: WorkflowError) -> None:
    status, anchor = WORKFLOW_ERRORS[error]
    answered = answer(post({"a": 1}), failed(error.value))
    body = problem(answered, status, anchor)
    assert body["error"] == error.value
    retry_after = {
        409: door().stack.parameters["InProgressPollSeconds"],
        503: door().stack.parameters["LockLeaseSeconds"],
    }
    assert answered.headers.get("Retry-After") == retry_after.get(status)


def test_the_side_effects_own_error_is_a_400_that_names_it() -> None:
    body = problem(answer(post({"a": 1}), failed("PaymentValidationError")), 400, "http-side-effect-declined")
    assert body["error"] == "PaymentValidationError"


@pytest.mark.parametrize(
    "error",
    [door().stack.parameters["SideEffectTransientError"], "Lambda.TooManyRequestsException"],
)
def test_a_transient_failure_that_released_the_key_is_a_503(error: str) -> None:
    answered = answer(post({"a": 1}), failed(error))
    assert problem(answered, 503, "http-retry-later")["error"] == error
    assert "Retry-After" not in answered.headers


def test_a_timed_out_execution_may_have_run_the_side_effect() -> None:
    answered = answer(post({"a": 1}), failed("States.Timeout", status="TIMED_OUT"))
    problem(answered, 503, "http-outcome-unknown")
    assert answered.headers["Retry-After"] == door().stack.parameters["LockLeaseSeconds"]


@pytest.mark.parametrize("error", ["States.Runtime", "States.DataLimitExceeded", "DynamoDB.AmazonDynamoDBException"])
def test_an_error_of_the_machinery_is_a_500(error: str) -> None:
    assert problem(answer(post({"a": 1}), failed(error)), 500, "http-internal-error")["error"] == error


@pytest.mark.parametrize(
    ("refusal", "status", "anchor"),
    [
        ("ThrottlingException", 503, "http-retry-later"),
        ("ExecutionLimitExceeded", 503, "http-retry-later"),
        ("StateMachineDoesNotExist", 500, "http-internal-error"),
        ("StateMachineTypeNotSupported", 500, "http-internal-error"),
    ],
)
def test_step_functions_refusing_the_start_is_a_problem_too(refusal: str, status: int, anchor: str) -> None:
    # StartSyncExecution's errors (API reference above): no execution, so no status in the answer.
    problem(answer(post({"a": 1}), {"__type": refusal, "message": "refused"}), status, anchor)


def test_every_problem_type_is_an_anchor_of_the_http_section_of_docs_doors() -> None:
    anchors = set(re.findall(r"#(http-[a-z-]+)", TEMPLATE_PATH.read_text()))
    http = DOORS_DOC.read_text().split("\n## HTTP\n", 1)[1].split("\n## ", 1)[0]
    assert anchors >= {anchor for _, anchor in WORKFLOW_ERRORS.values()}
    assert [anchor for anchor in sorted(anchors) if f'<a id="{anchor}"></a>' not in http] == []


def test_the_default_problem_type_base_is_the_page_of_the_anchors() -> None:
    # The base URL is where docs/doors.md is published: its default names that page, not the README.
    base = load_template()["Parameters"]["HttpProblemTypeBaseUrl"]["Default"]
    assert base.endswith("/docs/doors.md") and door().problem_types == base


# -- A Standard workflow's door: POST answers 202 and a Location, GET answers the outcome -----------------


def standard_get(execution_id: str, apikey_id: str | None = None) -> Rendered:
    """The DescribeExecution request the GET of ``requests/<execution_id>`` sends."""
    request = MethodRequest(body="", headers={}, path={"id": execution_id})
    identity = {} if apikey_id is None else {"apiKeyId": apikey_id}
    context = RequestContext(
        request_id=REQUEST_ID, http_method="GET", resource_path="/requests/{id}", identity=identity
    )
    get = door("STANDARD").methods["HttpRequestGet"].integration.request_templates["application/json"]
    return render_request(get, request, context)


def standard_answer(sent: Rendered, integration_body: dict[str, Any], apikey_id: str | None = None) -> Rendered:
    (response,) = door("STANDARD").methods["HttpRequestGet"].integration.responses
    request = MethodRequest(body="", headers={})
    identity = {} if apikey_id is None else {"apiKeyId": apikey_id}
    context = RequestContext(request_id=REQUEST_ID, identity=identity)
    return render_response(
        response.templates["application/json"], json.dumps(integration_body), request, context, after=sent
    )


def execution_arn(name: str) -> str:
    machine = door("STANDARD").stack.state_machines[STATE_MACHINE_LOGICAL_ID].arn
    return machine.replace(":stateMachine:", ":execution:") + f":{name}"


def described(status: str, **fields: Any) -> dict[str, Any]:
    """DescribeExecution's answer (API reference above; the fields the recorded FAILED one has)."""
    started_with = {"idempotencyKey": KEY, "payload": {"a": 1}}
    return {
        "executionArn": execution_arn(REQUEST_ID),
        "stateMachineArn": door("STANDARD").stack.state_machines[STATE_MACHINE_LOGICAL_ID].arn,
        "name": REQUEST_ID,
        "status": status,
        "startDate": 1.79e9,
        "input": json.dumps(started_with),
        "inputDetails": {"included": True},
        "redriveCount": 0,
        **fields,
    }


def test_the_get_answers_with_the_posts_response_template_byte_for_byte() -> None:
    # One mapping of outcomes to statuses: the Express POST's and the Standard GET's answers never drift apart.
    resources = load_template()["Resources"]
    (post_response,) = resources["HttpRequestsPost"]["Properties"]["Integration"]["IntegrationResponses"]
    (get_response,) = resources["HttpRequestGet"]["Properties"]["Integration"]["IntegrationResponses"]
    assert get_response == post_response


def test_a_standard_post_starts_the_execution_named_by_the_request_and_answers_202_with_its_location() -> None:
    sent = post({"a": 1})
    assert started(sent)["name"] == REQUEST_ID  # the same request template for both types
    answered = answer(sent, {"executionArn": execution_arn(REQUEST_ID), "startDate": 1.79e9})

    assert answered.status == 202
    # Relative to the URL posted to (RFC 3986 5.2): <stage>/requests -> <stage>/requests/<id>.
    assert answered.headers["Location"] == f"requests/{REQUEST_ID}"
    assert answered.headers["Retry-After"] == door().stack.parameters["InProgressPollSeconds"]
    assert json.loads(answered.body) == {"status": "RUNNING", "id": REQUEST_ID}


def test_a_get_reads_the_execution_of_this_state_machine_with_that_name() -> None:
    sent = standard_get(REQUEST_ID)
    assert sent.status is None
    assert json.loads(sent.body) == {"executionArn": execution_arn(REQUEST_ID)}


@pytest.mark.parametrize("execution_id", ["a.b", "x" * 81, "%2e%2e", "a:b"])
def test_an_id_that_cannot_name_an_execution_is_404_and_reads_nothing(execution_id: str) -> None:
    sent = standard_get(execution_id)
    assert sent.status == 404 and json.loads(sent.body) == {}
    # Step Functions refuses the request that names no execution (ValidationException); the answer is the 404.
    refused = {"__type": "ValidationException", "message": "1 validation error detected"}
    problem(standard_answer(sent, refused), 404, "http-request-not-found")


@pytest.mark.parametrize("status", ["RUNNING", "PENDING_REDRIVE"])
def test_a_get_while_the_execution_runs_is_202_again(status: str) -> None:
    answered = standard_answer(standard_get(REQUEST_ID), described(status))
    assert answered.status == 202 and "Location" not in answered.headers
    assert answered.headers["Retry-After"] == door().stack.parameters["InProgressPollSeconds"]
    assert json.loads(answered.body) == {"status": "RUNNING", "id": REQUEST_ID}


def test_a_get_after_the_execution_answers_what_the_express_post_answers() -> None:
    output = _compact(_outputs()["ReturnCached"])
    express = answer(post({"a": 1}), {"status": "SUCCEEDED", "output": output, "executionArn": "arn"})
    standard = standard_answer(standard_get(REQUEST_ID), described("SUCCEEDED", output=output))
    assert (standard.status, standard.headers, standard.body) == (express.status, express.headers, express.body)
    reused = standard_answer(standard_get(REQUEST_ID), described("FAILED", error="IdempotencyKeyReused", cause="..."))
    assert problem(reused, 422, "http-idempotency-key-reused")["error"] == "IdempotencyKeyReused"


def test_an_aborted_execution_may_have_run_the_side_effect() -> None:
    # StopExecution, or a redrive's abort, may leave the key locked, as a timeout does.
    answered = standard_answer(standard_get(REQUEST_ID), described("ABORTED"))
    problem(answered, 503, "http-outcome-unknown")
    assert answered.headers["Retry-After"] == door().stack.parameters["LockLeaseSeconds"]


def test_an_execution_that_does_not_exist_is_404() -> None:
    # DescribeExecution's error for an unknown ARN (API reference above): ExecutionDoesNotExist, HTTP 400.
    gone = {"__type": "ExecutionDoesNotExist", "message": f"Execution Does Not Exist: '{execution_arn('x')}'"}
    problem(standard_answer(standard_get("x"), gone), 404, "http-request-not-found")


def test_an_execution_answers_only_the_caller_whose_key_started_it() -> None:
    mine = described("SUCCEEDED", output=_compact(_outputs()["ReturnResult"]))
    mine["input"] = json.dumps({"idempotencyKey": f"apiKey:key-a|{KEY}", "payload": {"a": 1}})
    assert standard_answer(standard_get(REQUEST_ID, "key-a"), mine, "key-a").status is None
    # Another caller who learnt the id gets what an unknown id gets.
    problem(standard_answer(standard_get(REQUEST_ID, "key-b"), mine, "key-b"), 404, "http-request-not-found")
