"""The shapes of a denied call (``idemflow/engine/services/iam/endpoint.py``'s docstring cites each one's record),
read back by botocore's own parser for the service's protocol: the code and message an SDK user sees."""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
from botocore.parsers import create_parser

from idemflow.engine.services.iam.endpoint import access_denied

MESSAGE = "User: arn:aws:sts::123456789012:assumed-role/r/s is not authorized to perform: x:Y on resource: a <&> b"


def parsed(service: str, operation: str, protocol: str, *, query: bool = False) -> tuple[int, dict[str, Any]]:
    status, headers, body = access_denied(service, MESSAGE, query=query)
    model = botocore.session.get_session().get_service_model(service).operation_model(operation)
    response = {"status_code": status.value, "headers": headers, "body": body}
    return status.value, create_parser(protocol).parse(response, model.output_shape)["Error"]


@pytest.mark.parametrize(
    ("service", "operation", "protocol", "query", "code"),
    [
        ("sqs", "SendMessage", "json", False, "AccessDenied"),
        ("sqs", "SendMessage", "query", True, "AccessDenied"),
        ("sns", "Publish", "query", True, "AuthorizationError"),
        ("dynamodb", "GetItem", "json", False, "AccessDeniedException"),
    ],
)
def test_each_service_answers_a_denial_with_its_code_and_the_message(
    service: str, operation: str, protocol: str, query: bool, code: str
) -> None:
    status, error = parsed(service, operation, protocol, query=query)
    assert (error["Code"], error["Message"]) == (code, MESSAGE)
    assert status == (400 if service == "dynamodb" else 403)
