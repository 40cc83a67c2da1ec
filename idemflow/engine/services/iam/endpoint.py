"""A function's SDK calls, decided at the engine's endpoint under the function's execution role.

A function's worker signs with its own access key (:meth:`~idemflow.engine.services.iam.permissions.Permissions
.issue_key`); a request signed with it is decided before any service answers it, and a denied one is answered as
the service answers an ``AccessDeniedException`` (the API references' "Common Errors"): for the JSON protocols
(DynamoDB, Step Functions, EventBridge, Kinesis) HTTP 400 with ``{"__type": "...#AccessDeniedException", "Message":
...}``, the shape recorded for DynamoDB (``u'__type': u'com.amazon.coral.service#AccessDeniedException'`` with its
``Message``, cortexproject/cortex issue 120); for Lambda's REST API HTTP 403 and the ``x-amzn-ErrorType`` header
("Status Code: 403; Error Code: AccessDeniedException" in the records of Lambda denials).

SQS and SNS answer with their own codes, as recorded on AWS (what boto3 reports: "An error occurred (<code>) when
calling the <operation> operation: <message>"):

- SQS: ``AccessDenied``, HTTP 403, its message naming the action in lower case: "User: arn:aws:iam::...:user/test is
  not authorized to perform: sqs:sendmessage on resource: arn:aws:sqs:... because no identity-based policy allows the
  sqs:sendmessage action" (aws/serverless-application-model issue 3633; 403 with ``AccessDenied`` in the records of
  bbc/sqs-consumer issue 225 and aws/aws-sdk-php issue 188). Its JSON protocol says the code in the
  ``x-amzn-query-error`` header (``<code>;Sender``), which the SDKs read for the code (its query protocol, in the
  ``<Code>`` of an ``ErrorResponse``).
- SNS: ``AuthorizationError``, HTTP 403 ("Status Code: 403; Error Code: AuthorizationError",
  awslabs/aws-service-catalog-puppet issue 19), the action written ``SNS:Publish``: "User: arn:aws:sts::...:
  assumed-role/<role>/<session> is not authorized to perform: SNS:Publish on resource: arn:aws:sns:... because no
  identity-based policy allows the SNS:Publish action" (aws-ia/terraform-aws-control_tower_account_factory issue
  151); SNS's query protocol answers it in an ``ErrorResponse`` (Publish's "Errors" list AuthorizationError, 403).

What the request asks for is read from its protocol: the operation from ``X-Amz-Target`` and the parameters from its
JSON body, the ``Action`` and parameters of a query-protocol form (SNS's, and SQS's for an older SDK), or Lambda's
``Invoke`` from its path (``/2015-03-31/functions/<name>/invocations``). Of SNS, only ``Publish`` is decided (how
AWS authorizes PublishBatch is on no record here). A request of any other shape (S3's REST) is not decided yet: the
engine logs its service once.
"""

from __future__ import annotations

import html
import io
import json
import re
import uuid
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any, Final
from urllib.parse import parse_qs, unquote

from idemflow.engine.services.iam.permissions import Permissions
from idemflow.engine.services.iam.requests import action_name, resources, undecided

_CREDENTIAL: Final = re.compile(r"Credential=([A-Z0-9]+)/\d{8}/([a-z0-9-]+)/([a-z0-9-]+)/aws4_request")
_INVOKE: Final = re.compile(r"^/2015-03-31/functions/([^/]+)/invocations$")
#: The signing names whose calls are decided here (their denial's shape: module docstring).
DECIDED: Final = frozenset({"dynamodb", "lambda", "states", "events", "kinesis", "sqs", "sns"})
#: SNS's operations decided: the others answer as the service does, whatever the role.
SNS_DECIDED: Final = frozenset({"Publish"})
_FORM: Final = "application/x-www-form-urlencoded"
#: DynamoDB's operations on one table: their resource is read from the body's top-level TableName (and IndexName)
#: without parsing it. The pattern needs a string value: an attribute named TableName inside an item has a map.
_ONE_TABLE: Final = frozenset({"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan"})
_TABLE_NAME: Final = re.compile(rb'"TableName"\s*:\s*"([A-Za-z0-9_.:/-]+)"')
_INDEX_NAME: Final = re.compile(rb'"IndexName"\s*:\s*"([A-Za-z0-9_.-]+)"')


def _read_body(environ: dict[str, Any]) -> bytes:
    """The request's body, read once and put back for the service that answers."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body: bytes = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(body)
    return body


def _is_form(environ: dict[str, Any]) -> bool:
    """Whether the request comes in the query protocol (a form: SNS's, and SQS's for an older SDK)."""
    return str(environ.get("CONTENT_TYPE", "")).startswith(_FORM)


def _request(environ: dict[str, Any], service: str) -> tuple[str, dict[str, Any]] | None:
    """The operation and parameters of a signed request, read from its protocol; None for a shape not read here.
    The body is read once and put back for the service that answers."""
    target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
    if target:
        body = _read_body(environ)
        operation = target.rpartition(".")[2]
        if service == "dynamodb" and operation in _ONE_TABLE:
            tables = _TABLE_NAME.findall(body)
            if len(tables) == 1:
                index = _INDEX_NAME.findall(body) if operation in ("Query", "Scan") else []
                named: dict[str, Any] = {"TableName": tables[0].decode()}
                if len(index) == 1:
                    named["IndexName"] = index[0].decode()
                if len(index) <= 1:
                    return operation, named
        try:
            sent = json.loads(body) if body else {}
        except ValueError:
            return None  # the service answers a body it cannot read with its own error
        return target.rpartition(".")[2], sent if isinstance(sent, dict) else {}
    if _is_form(environ) and service in ("sqs", "sns"):
        form: dict[str, Any] = {k: v[0] for k, v in parse_qs(_read_body(environ).decode("utf-8", "replace")).items()}
        operation = form.pop("Action", None)
        return (operation, form) if operation else None
    if service == "lambda" and environ.get("REQUEST_METHOD") == "POST":
        match = _INVOKE.match(str(environ.get("PATH_INFO", "")))
        if match is not None:
            query = parse_qs(str(environ.get("QUERY_STRING", "")))
            params: dict[str, Any] = {"FunctionName": unquote(match.group(1))}
            if query.get("Qualifier"):
                params["Qualifier"] = query["Qualifier"][0]
            return "Invoke", params
    return None


def refusal(
    permissions: Permissions, account: str, environ: dict[str, Any], start_response: Callable[..., Any]
) -> Iterable[bytes] | None:
    """AWS's AccessDenied answer to a request a role's session may not make; None to let the services answer it
    (allowed, not signed by a role's session, or not decided here)."""
    found = _CREDENTIAL.search(str(environ.get("HTTP_AUTHORIZATION", "")))
    if found is None:
        return None
    key, region, service = found.groups()
    issued = permissions.role_for_key(key)
    if issued is None:
        return None
    role_arn, session = issued
    request = _request(environ, service) if service in DECIDED else None
    if request is not None and service == "sns" and request[0] not in SNS_DECIDED:
        request = None
    arns = None if request is None else resources(service, request[0], request[1], region, account)
    if request is None or arns is None:
        undecided(f"{service}:{request[0]} calls" if request is not None else f"{service} calls")
        return None
    action = action_name(service, request[0])
    for arn in arns:
        decision = permissions.decide(role_arn, action, arn, session=session)
        if decision is None or decision.allowed:
            continue
        message = _spoken(service, decision.message, action)
        status, headers, payload = access_denied(service, message, query=_is_form(environ))
        headers = {**headers, "x-amzn-RequestId": str(uuid.uuid4()), "Content-Length": str(len(payload))}
        start_response(f"{status.value} {status.phrase}", list(headers.items()))
        return [payload]
    return None


def _spoken(service: str, message: str, action: str) -> str:
    """The denial's message with the action written as the service writes it (module docstring)."""
    if service == "sqs":
        return message.replace(action, action.lower())
    if service == "sns":
        return message.replace(action, "SNS:" + action.split(":", 1)[1])
    return message


_QUERY_ERROR: Final = (
    '<?xml version="1.0"?><ErrorResponse xmlns="{namespace}"><Error><Type>Sender</Type><Code>{code}</Code>'
    "<Message>{message}</Message></Error><RequestId>{request}</RequestId></ErrorResponse>"
)
_QUERY: Final = {
    "sns": ("AuthorizationError", "http://sns.amazonaws.com/doc/2010-03-31/"),
    "sqs": ("AccessDenied", "http://queue.amazonaws.com/doc/2012-11-05/"),
}


def access_denied(service: str, message: str, *, query: bool = False) -> tuple[HTTPStatus, dict[str, str], bytes]:
    """The service's answer to a call IAM refused: its status, headers and body (module docstring). ``query``: the
    request came in the query protocol (a form)."""
    if service == "sns" or (service == "sqs" and query):
        code, namespace = _QUERY[service]
        text = _QUERY_ERROR.format(
            namespace=namespace, code=code, message=html.escape(message, quote=False), request=uuid.uuid4()
        )
        return HTTPStatus.FORBIDDEN, {"Content-Type": "text/xml"}, text.encode()
    if service == "sqs":
        body = {"__type": "com.amazon.coral.service#AccessDeniedException", "message": message}
        headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-query-error": "AccessDenied;Sender"}
        return HTTPStatus.FORBIDDEN, headers, json.dumps(body).encode()
    if service == "lambda":
        status, body = HTTPStatus.FORBIDDEN, {"Type": "User", "Message": message}
    else:
        status, body = HTTPStatus.BAD_REQUEST, {"__type": "com.amazon.coral.service#AccessDeniedException"}
        body["Message"] = message
    content_type = "application/json" if service == "lambda" else "application/x-amz-json-1.0"
    return (
        status,
        {"Content-Type": content_type, "x-amzn-ErrorType": "AccessDeniedException"},
        json.dumps(body).encode(),
    )
