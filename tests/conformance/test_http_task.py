"""The HTTP Task, ``arn:aws:states:::http:invoke``, through the template's EventBridge connection.

Sources: the developer guide's "Call HTTPS APIs in Step Functions workflows"
(https://docs.aws.amazon.com/step-functions/latest/dg/call-https-apis.html: ``Parameters`` ``ApiEndpoint``,
``Method``, ``Authentication.ConnectionArn``, ``Headers``, ``QueryParameters``; the connection's API key header;
the ``User-Agent`` and ``Range`` headers Step Functions sets; the example's ``Catch`` on
``States.Http.StatusCode.404``), "Using TestState" (test-state-isolation.html, Example 3, a result recorded on
AWS: ``Headers`` with lower-case names and lists of values, ``ResponseBody`` parsed from JSON, ``StatusCode``
200, ``StatusText`` "OK") and "Error handling" (concepts-error-handling.html: ``States.Http.Socket``).

The server is this test's, on 127.0.0.1: a target in AWS cannot reach it, so the tests run on the embedded
engine and on a local endpoint only.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest

from tests.conformance.harness import Target
from tests.http_server import Answer, Seen, refused_url, serving


def _reachable(target: Target) -> None:
    """A plain call, not a fixture: test_fixes_are_needed.py calls these tests with a target only."""
    if target.kind == "aws":
        pytest.skip("the HTTP Task's server listens on 127.0.0.1, which AWS cannot reach")


def _call(target: Target, parameters: dict[str, Any], **state: Any) -> dict[str, Any]:
    call = {"Type": "Task", "Resource": "arn:aws:states:::http:invoke", "Parameters": parameters, **state}
    if "Next" not in state:
        call["End"] = True
    return {"StartAt": "Call", "States": {"Call": call}}


def test_an_http_task_answers_the_json_response_with_its_status_and_headers(target: Target) -> None:
    _reachable(target)

    def items(seen: Seen) -> Answer:
        if seen.headers.get("x-api-key") != "conformance-key":
            return Answer(401)
        return Answer.json({"items": [1, 2]})

    with serving({"/items": items}) as server:
        run = target.run(
            _call(
                target,
                {
                    "ApiEndpoint": server.url + "/items",
                    "Method": "GET",
                    "Authentication": {"ConnectionArn": target.resources["ApiKeyConnectionArn"]},
                    "Headers": {"definitionHeader": "h1"},
                    "QueryParameters": {"queryParam": "q1"},
                },
            )
        )

    assert run.status == "SUCCEEDED", (run.error, run.cause)
    assert run.output["ResponseBody"] == {"items": [1, 2]}
    assert (run.output["StatusCode"], run.output["StatusText"]) == (200, "OK")
    assert run.output["Headers"]["content-type"] == ["application/json"]
    (seen,) = server.seen
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(seen.path).query) == {"queryParam": ["q1"]}
    assert seen.headers["definitionheader"] == "h1"
    assert seen.headers["user-agent"].startswith("Amazon|StepFunctions|HttpInvoke|")
    assert seen.headers["range"] == "bytes=0-262144"


def test_a_404_fails_states_http_status_code_404_and_a_catch_takes_it(target: Target) -> None:
    _reachable(target)
    with serving({}) as server:
        definition = _call(
            target,
            {
                "ApiEndpoint": server.url + "/missing",
                "Method": "GET",
                "Authentication": {"ConnectionArn": target.resources["ApiKeyConnectionArn"]},
            },
            Catch=[{"ErrorEquals": ["States.Http.StatusCode.404"], "ResultPath": "$.error", "Next": "NotFound"}],
            Next="Found",
        )
        definition["States"]["NotFound"] = {"Type": "Pass", "End": True}
        definition["States"]["Found"] = {"Type": "Succeed"}
        run = target.run(definition, {})

    assert run.status == "SUCCEEDED", (run.error, run.cause)
    assert run.entered() == ["Call", "NotFound"]
    assert run.output["error"]["Error"] == "States.Http.StatusCode.404"
    assert run.failure("TaskFailed")[0] == "States.Http.StatusCode.404"


def test_a_refused_connection_fails_states_http_socket_and_is_retried(target: Target) -> None:
    _reachable(target)
    run = target.run(
        _call(
            target,
            {
                "ApiEndpoint": refused_url(),
                "Method": "GET",
                "Authentication": {"ConnectionArn": target.resources["ApiKeyConnectionArn"]},
            },
            Retry=[{"ErrorEquals": ["States.Http.Socket"], "IntervalSeconds": 1, "MaxAttempts": 1}],
        )
    )

    assert run.status == "FAILED"
    assert run.error == "States.Http.Socket"
    assert len(run.of_type("TaskFailed")) == 2  # the first attempt and its one retry
