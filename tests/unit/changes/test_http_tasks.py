"""The HTTP Task (``http_tasks.py``): ``http-invoke``. moto 5.2.5 without the change refuses the definition; with
it, the task calls a server of this test's on 127.0.0.1 through an EventBridge connection, as AWS documents it
(https://docs.aws.amazon.com/step-functions/latest/dg/call-https-apis.html; the result's shape from
test-state-isolation.html, Example 3; the expected values are cited where they are asserted)."""

from __future__ import annotations

import base64
import json
import urllib.parse
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests import sessions
from tests.http_server import Answer, Seen, refused_url, serving
from tests.unit.changes.machines import REGION, create_state_machine, run

pytestmark = pytest.mark.unit


def _task(parameters: dict[str, Any], **state: Any) -> dict[str, Any]:
    call = {"Type": "Task", "Resource": "arn:aws:states:::http:invoke", "Parameters": parameters, **state}
    if "Next" not in state:
        call["End"] = True
    return {"StartAt": "Call", "States": {"Call": call}}


def _connection(auth_type: str, auth: dict[str, Any]) -> str:
    events = sessions.client("events", region_name=REGION)
    name = f"conn-{len(events.list_connections()['Connections'])}"
    arn: str = events.create_connection(Name=name, AuthorizationType=auth_type, AuthParameters=auth)["ConnectionArn"]
    return arn


def _api_key(**extra: Any) -> str:
    return _connection(
        "API_KEY", {"ApiKeyAuthParameters": {"ApiKeyName": "x-api-key", "ApiKeyValue": "s3cret"}, **extra}
    )


def _call(sfn: Any, parameters: dict[str, Any], payload: Any = None) -> dict[str, Any]:
    return run(sfn, create_state_machine(sfn, _task(parameters)), payload)


def _output(described: dict[str, Any]) -> Any:
    assert described["status"] == "SUCCEEDED", (described.get("error"), described.get("cause"))
    return json.loads(described["output"])


def test_unpatched_moto_5_2_5_refuses_a_definition_with_an_http_task(unpatched: None, sfn: Any) -> None:
    with pytest.raises(ClientError, match="Unknown service 'http'"):
        create_state_machine(sfn, _task({"ApiEndpoint": "http://127.0.0.1/", "Method": "GET"}))


def test_patched_a_json_answer_is_the_result_with_status_and_headers(patched: None, sfn: Any) -> None:
    arn = _api_key()
    with serving({"/items": lambda seen: Answer.json({"id": 7, "tags": ["a"]})}) as server:
        described = _call(
            sfn,
            {
                "ApiEndpoint": server.url + "/items",
                "Method": "GET",
                "Authentication": {"ConnectionArn": arn},
                "Headers": {"Request-Id": "r-1"},
                "QueryParameters": {"currency": "usd", "q.$": "$.q"},
            },
            {"q": "a b"},
        )
    output = _output(described)
    # test-state-isolation.html, Example 3: Headers (lower-case names, lists of values), ResponseBody parsed
    # as JSON, StatusCode a number, StatusText the reason.
    assert output["ResponseBody"] == {"id": 7, "tags": ["a"]}
    assert (output["StatusCode"], output["StatusText"]) == (200, "OK")
    assert output["Headers"]["content-type"] == ["application/json"]
    (seen,) = server.seen
    assert seen.method == "GET"
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(seen.path).query) == {"currency": ["usd"], "q": ["a b"]}
    # call-https-apis.html: the connection's API key header, the definition's headers, and the headers Step
    # Functions sets itself.
    assert seen.headers["x-api-key"] == "s3cret"
    assert seen.headers["request-id"] == "r-1"
    assert seen.headers["user-agent"] == f"Amazon|StepFunctions|HttpInvoke|{REGION}"
    assert seen.headers["range"] == "bytes=0-262144"


def test_patched_a_text_answer_is_the_result_as_text(patched: None, sfn: Any) -> None:
    arn = _api_key()
    text = Answer(200, b"plain words", content_type="text/plain; charset=utf-8")
    with serving({"/t": lambda seen: text}) as server:
        output = _output(
            _call(sfn, {"ApiEndpoint": server.url + "/t", "Method": "GET", "Authentication": {"ConnectionArn": arn}})
        )
    assert output["ResponseBody"] == "plain words"


def test_patched_the_body_is_json_and_the_connection_wins_a_merge(patched: None, sfn: Any) -> None:
    """call-https-apis.html, "Merging EventBridge connection and HTTP Task definition data": its example."""
    arn = _api_key(
        InvocationHttpParameters={
            "BodyParameters": [{"Key": "BodyParam", "Value": "connection_body_param"}],
            "HeaderParameters": [{"Key": "Header-Param", "Value": "connection_header_param"}],
            "QueryStringParameters": [{"Key": "QueryParam", "Value": "connection_query_param"}],
        }
    )
    with serving({"/path": lambda seen: Answer.json({})}) as server:
        _output(
            _call(
                sfn,
                {
                    "ApiEndpoint": server.url + "/path",
                    "Method": "POST",
                    "Authentication": {"ConnectionArn": arn},
                    "Headers": {"Request-Id": "my_request_id", "Header-Param": "state_machine_header_param"},
                    "RequestBody": {"Job": "Software Engineer", "Company": "AnyCompany", "BodyParam": "sm"},
                    "QueryParameters": {"QueryParam": "state_machine_query_param"},
                },
            )
        )
    (seen,) = server.seen
    assert seen.path == "/path?QueryParam=connection_query_param"
    assert seen.headers["header-param"] == "connection_header_param"
    assert seen.headers["request-id"] == "my_request_id"
    assert seen.headers["content-type"] == "application/json; charset=UTF-8"
    assert json.loads(seen.body) == {
        "Job": "Software Engineer",
        "Company": "AnyCompany",
        "BodyParam": "connection_body_param",
    }


@pytest.mark.parametrize(
    ("array_format", "expected"),
    [  # call-https-apis.html, "Applying URL-encoding on request body": {"array": ["a","b","c","d"]}
        ("INDICES", "array[0]=a&array[1]=b&array[2]=c&array[3]=d"),
        ("REPEAT", "array=a&array=b&array=c&array=d"),
        ("COMMAS", "array=a,b,c,d"),
        ("BRACKETS", "array[]=a&array[]=b&array[]=c&array[]=d"),
    ],
)
def test_patched_a_url_encoded_body_encodes_arrays_as_asked(
    patched: None, sfn: Any, array_format: str, expected: str
) -> None:
    arn = _api_key()
    with serving({"/form": lambda seen: Answer.json({})}) as server:
        _output(
            _call(
                sfn,
                {
                    "ApiEndpoint": server.url + "/form",
                    "Method": "POST",
                    "Authentication": {"ConnectionArn": arn},
                    "Headers": {"Content-Type": "application/x-www-form-urlencoded"},
                    "RequestBody": {"array": ["a", "b", "c", "d"]},
                    "Transform": {
                        "RequestBodyEncoding": "URL_ENCODED",
                        "RequestEncodingOptions": {"ArrayFormat": array_format},
                    },
                },
            )
        )
    (seen,) = server.seen
    assert urllib.parse.unquote(seen.body.decode()) == expected
    assert seen.headers["content-type"] == "application/x-www-form-urlencoded"


def test_patched_the_pages_invoice_example_is_encoded_as_the_page_shows(patched: None, sfn: Any) -> None:
    arn = _api_key()
    with serving({"/v1/invoices": lambda seen: Answer.json({})}) as server:
        _output(
            _call(
                sfn,
                {
                    "ApiEndpoint": server.url + "/v1/invoices",
                    "Method": "POST",
                    "Authentication": {"ConnectionArn": arn},
                    "Headers": {"Content-Type": "application/x-www-form-urlencoded"},
                    "RequestBody": {
                        "customer.$": "$.customer_id",
                        "description": "Monthly subscription",
                        "metadata": {"order_details": "monthly report data"},
                    },
                    "Transform": {
                        "RequestBodyEncoding": "URL_ENCODED",
                        "RequestEncodingOptions": {"ArrayFormat": "INDICES"},
                    },
                },
                {"customer_id": "1234567890"},
            )
        )
    (seen,) = server.seen
    # call-https-apis.html, "HTTP Task example" (its keys in the order the definition gives them here).
    assert seen.body.decode() == (
        "customer=1234567890&description=Monthly%20subscription&metadata%5Border_details%5D=monthly%20report%20data"
    )


def test_patched_basic_authorization_is_sent(patched: None, sfn: Any) -> None:
    arn = _connection("BASIC", {"BasicAuthParameters": {"Username": "myUsername", "Password": "myPassword"}})
    expected = "Basic " + base64.b64encode(b"myUsername:myPassword").decode()

    def guarded(seen: Seen) -> Answer:
        return Answer.json({"ok": True}) if seen.headers.get("authorization") == expected else Answer(401)

    with serving({"/me": guarded}) as server:
        output = _output(
            _call(sfn, {"ApiEndpoint": server.url + "/me", "Method": "GET", "Authentication": {"ConnectionArn": arn}})
        )
    assert output["ResponseBody"] == {"ok": True}


def test_patched_an_oauth_token_is_fetched_once_and_reused(patched: None, sfn: Any) -> None:
    def token(seen: Seen) -> Answer:
        client = "Basic " + base64.b64encode(b"my-client:my-secret").decode()
        if seen.headers.get("authorization") != client:
            return Answer(401)
        return Answer.json({"access_token": "tok-1", "token_type": "Bearer", "expires_in": 3600})

    def api(seen: Seen) -> Answer:
        return Answer.json({"ok": True}) if seen.headers.get("authorization") == "Bearer tok-1" else Answer(401)

    with serving({"/oauth/token": token, "/api": api}) as server:
        arn = _connection(
            "OAUTH_CLIENT_CREDENTIALS",
            {
                "OAuthParameters": {
                    "AuthorizationEndpoint": server.url + "/oauth/token",
                    "HttpMethod": "POST",
                    "ClientParameters": {"ClientID": "my-client", "ClientSecret": "my-secret"},
                    "OAuthHttpParameters": {"BodyParameters": [{"Key": "grant_type", "Value": "client_credentials"}]},
                }
            },
        )
        machine = create_state_machine(
            sfn, _task({"ApiEndpoint": server.url + "/api", "Method": "GET", "Authentication": {"ConnectionArn": arn}})
        )
        first, second = _output(run(sfn, machine)), _output(run(sfn, machine))
    assert first["ResponseBody"] == second["ResponseBody"] == {"ok": True}
    (fetched,) = server.paths("/oauth/token")
    assert fetched.method == "POST"
    assert urllib.parse.parse_qs(fetched.body.decode()) == {"grant_type": ["client_credentials"]}
    assert len(server.paths("/api")) == 2


def test_patched_a_404_fails_the_task_with_its_code_and_a_catch_takes_it(patched: None, sfn: Any) -> None:
    arn = _api_key()
    definition = _task(
        {"ApiEndpoint": "", "Method": "GET", "Authentication": {"ConnectionArn": arn}},
        Catch=[{"ErrorEquals": ["States.Http.StatusCode.404"], "ResultPath": "$.error", "Next": "Missing"}],
        Next="Found",
    )
    definition["States"]["Missing"] = {"Type": "Pass", "End": True}
    definition["States"]["Found"] = {"Type": "Succeed"}
    with serving({}) as server:
        definition["States"]["Call"]["Parameters"]["ApiEndpoint"] = server.url + "/absent"
        output = _output(run(sfn, create_state_machine(sfn, definition)))
    # concepts-error-handling.html / call-https-apis.html: a non-2xx answer fails States.Http.StatusCode.<code>.
    assert output["error"]["Error"] == "States.Http.StatusCode.404"
    assert json.loads(output["error"]["Cause"])["StatusCode"] == 404


def test_patched_a_refused_connection_fails_the_socket_error(patched: None, sfn: Any) -> None:
    arn = _api_key()
    described = _call(sfn, {"ApiEndpoint": refused_url(), "Method": "GET", "Authentication": {"ConnectionArn": arn}})
    assert described["status"] == "FAILED"
    assert described["error"] == "States.Http.Socket"


def test_patched_a_forbidden_header_fails_states_runtime(patched: None, sfn: Any) -> None:
    arn = _api_key()
    with serving({}) as server:
        described = _call(
            sfn,
            {
                "ApiEndpoint": server.url + "/x",
                "Method": "GET",
                "Authentication": {"ConnectionArn": arn},
                "Headers": {"Authorization": "Bearer mine"},
            },
        )
    # call-https-apis.html: a header of the forbidden list fails the task with States.Runtime; nothing is sent.
    assert (described["status"], described["error"]) == ("FAILED", "States.Runtime")
    assert server.seen == []


def test_patched_an_unknown_connection_fails_resource_not_found(patched: None, sfn: Any) -> None:
    missing = f"arn:aws:events:{REGION}:123456789012:connection/none/00000000-0000-0000-0000-000000000000"
    described = _call(
        sfn, {"ApiEndpoint": "http://127.0.0.1/", "Method": "GET", "Authentication": {"ConnectionArn": missing}}
    )
    assert described["error"] == "Events.ConnectionResource.ResourceNotFound"
