"""The HTTP Task, ``arn:aws:states:::http:invoke`` (``http-invoke``).

moto 5.2.5's interpreter knows no ``http`` service: ``CreateStateMachine`` refuses a definition with an HTTP
Task ("Unknown service 'http'"), and an ``ErrorEquals`` naming ``States.Http.StatusCode.404`` is refused too
(a custom error name may not start with ``States.``). This module adds the task as AWS documents it:

* the developer guide, "Call HTTPS APIs in Step Functions workflows"
  (https://docs.aws.amazon.com/step-functions/latest/dg/call-https-apis.html, formerly
  connect-third-party-apis.html): ``Parameters`` holds ``ApiEndpoint``, ``Method`` (GET, POST, PUT, DELETE,
  PATCH, OPTIONS, HEAD), the connection's ARN in ``Authentication`` or ``InvocationConfig``, and optional
  ``Headers``, ``QueryParameters``, ``RequestBody`` and ``Transform`` (``RequestBodyEncoding`` NONE, the
  default, or URL_ENCODED; ``RequestEncodingOptions.ArrayFormat`` INDICES, the default, REPEAT, COMMAS or
  BRACKETS, each with the page's example); the connection's ``InvocationHttpParameters`` are merged into the
  headers, query and body, the connection's value winning a conflict, and a string body with connection body
  parameters fails ``States.Runtime``; a header of the page's forbidden list fails ``States.Runtime``; Step
  Functions sets ``User-Agent: Amazon|StepFunctions|HttpInvoke|<region>`` and ``Range: bytes=0-262144``, and
  sends the body as JSON with ``Content-Type: application/json; charset=UTF-8`` (the page's merged request);
  a request times out after 60 seconds; a response whose content type is binary (octet-stream, image, video,
  audio) fails ``States.Runtime``; connection problems fail ``Events.ConnectionResource.<reason>``
  (``ResourceNotFound`` for a connection that does not exist);
* the developer guide, "Using TestState" (test-state-isolation.html, Example 3, recorded on AWS): the task's
  result is ``{"Headers": {<lower-case name>: [<value>, ...]}, "ResponseBody": <JSON when the body is JSON,
  else its text>, "StatusCode": 200, "StatusText": "OK"}``;
* the developer guide, "Error handling" (concepts-error-handling.html): an answer that is not 2xx fails
  ``States.Http.StatusCode.<code>`` (the page's own example retries 429, 502, 503, 504 and catches 400, 401,
  404, 409, 500), and ``States.Http.Socket`` is the HTTP Task's socket error (its timeout after 60 seconds);
  here a refused connection or an unknown host fails it too.

The connection is EventBridge's (AWS::Events::Connection, ``CreateConnection``), kept by moto's events backend
with its ``AuthParameters``: ``API_KEY`` sends ``ApiKeyName: ApiKeyValue``; ``BASIC`` sends ``Authorization:
Basic``; ``OAUTH_CLIENT_CREDENTIALS`` asks the ``AuthorizationEndpoint`` for a token (``HttpMethod``, the client
id and secret as Basic authorization, the ``OAuthHttpParameters``, the body form-encoded as RFC 6749 4.4 asks)
and sends ``Authorization: Bearer <access_token>``; the token is kept on the connection and reused until its
``expires_in`` passes (EventBridge user guide, eb-target-connection-auth: it refreshes the token when it
expires). Not pinned by a record here: the ``Cause`` of a ``States.Http.StatusCode`` failure (here the task's
result as JSON text: the status, headers and body) and how EventBridge encodes the token request's body.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Final, cast

from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.error_name import ErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import StatesErrorNameType
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import (
    StateTaskService,
)

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

REQUEST_TIMEOUT_SECONDS: Final = 60.0
"""call-https-apis.html, "Timeouts for connections": HTTP task requests time out after 60 seconds."""

PARAMETERS: Final = frozenset(
    {
        "ApiEndpoint",
        "Method",
        "Authentication",
        "InvocationConfig",
        "Headers",
        "QueryParameters",
        "RequestBody",
        "Transform",
    }
)
METHODS: Final = frozenset({"GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"})

#: call-https-apis.html: headers an HTTP Task may not set (it fails States.Runtime); and the prefixes.
FORBIDDEN_HEADERS: Final = frozenset(
    h.lower()
    for h in [
        "A-IM",
        "Accept-Charset",
        "Accept-Datetime",
        "Accept-Encoding",
        "Authorization",
        "Cache-Control",
        "Connection",
        "Content-Encoding",
        "Content-MD5",
        "Date",
        "Expect",
        "Forwarded",
        "From",
        "Host",
        "HTTP2-Settings",
        "If-Match",
        "If-Modified-Since",
        "If-None-Match",
        "If-Range",
        "If-Unmodified-Since",
        "Max-Forwards",
        "Origin",
        "Pragma",
        "Proxy-Authorization",
        "Referer",
        "Server",
        "TE",
        "Trailer",
        "Transfer-Encoding",
        "Upgrade",
        "Via",
        "Warning",
    ]
)
FORBIDDEN_PREFIXES: Final = ("x-forwarded-", "x-amz-", "x-amzn-")
BINARY_TYPES: Final = ("application/octet-stream", "image/", "video/", "audio/")


class _HttpTaskError(Exception):
    """A failure of the HTTP Task, with the error name Step Functions reports and its cause."""

    def __init__(self, error: str, cause: str) -> None:
        super().__init__(cause)
        self.error = error
        self.cause = cause


def _runtime(cause: str) -> _HttpTaskError:
    return _HttpTaskError("States.Runtime", cause)


# -- the request ----------------------------------------------------------------------------------------


def _pairs(given: Any, where: str) -> list[tuple[str, str]]:
    """Headers or query parameters as (name, value) pairs: an object (a list value repeats the name), an
    array of objects, or a string (query text)."""
    if given is None:
        return []
    if isinstance(given, str):
        return urllib.parse.parse_qsl(given, keep_blank_values=True)
    items: list[tuple[str, Any]] = []
    if isinstance(given, dict):
        items = list(given.items())
    elif isinstance(given, list):
        for entry in given:
            if not isinstance(entry, dict):
                raise _runtime(f"{where}: expected objects, got {entry!r}")
            items.extend(entry.items())
    else:
        raise _runtime(f"{where}: expected an object, got {given!r}")
    pairs: list[tuple[str, str]] = []
    for name, value in items:
        for one in value if isinstance(value, list) else [value]:
            pairs.append((str(name), one if isinstance(one, str) else json.dumps(one)))
    return pairs


def _merged(task: list[tuple[str, str]], connection: list[tuple[str, str]], fold: bool) -> list[tuple[str, str]]:
    """The task's pairs, less those whose name the connection gives, then the connection's (call-https-apis:
    the connection's value is used for a key in both). Header names are compared without case."""

    def key(name: str) -> str:
        return name.lower() if fold else name

    given = {key(n) for n, _ in connection}
    return [(n, v) for n, v in task if key(n) not in given] + connection


def _connection_pairs(parameters: dict[str, Any], kind: str) -> list[tuple[str, str]]:
    return [(str(p.get("Key")), str(p.get("Value", ""))) for p in parameters.get(kind) or []]


def url_encoded(body: dict[str, Any], array_format: str = "INDICES") -> str:
    """``body`` as form data (call-https-apis.html, "Applying URL-encoding on request body": ``{"array":
    ["a","b"]}`` is ``array[0]=a&array[1]=b`` (INDICES), ``array=a&array=b`` (REPEAT), ``array=a,b``
    (COMMAS), ``array[]=a&array[]=b`` (BRACKETS); a nested object's keys in brackets, as the page's
    ``metadata[order_details]``); spaces as ``%20``, as in the page's request."""
    pairs: list[tuple[str, str]] = []

    def scalar(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if value is None:
            return ""
        return value if isinstance(value, str) else json.dumps(value)

    def add(name: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                add(f"{name}[{k}]", v)
        elif isinstance(value, list):
            if array_format == "COMMAS":
                pairs.append((name, ",".join(scalar(v) for v in value)))
            for i, v in enumerate(value):
                if array_format == "REPEAT":
                    add(name, v)
                elif array_format == "BRACKETS":
                    add(f"{name}[]", v)
                elif array_format != "COMMAS":
                    add(f"{name}[{i}]", v)
        else:
            pairs.append((name, scalar(value)))

    for name, value in body.items():
        add(str(name), value)
    return "&".join(f"{urllib.parse.quote(k, safe=',')}={urllib.parse.quote(v, safe=',')}" for k, v in pairs)


# -- the connection ---------------------------------------------------------------------------------------

_tokens_lock = threading.Lock()


def find_connection(arn: str) -> Any:
    """moto's EventBridge connection of this ARN (``arn:aws:events:<region>:<account>:connection/<name>/<id>``)."""
    from moto.events.models import events_backends

    parts = arn.split(":", 5)
    if len(parts) != 6 or parts[2] != "events" or not parts[5].startswith("connection/"):
        raise _HttpTaskError("Events.ConnectionResource.ResourceNotFound", f"Not a connection ARN: {arn}")
    name = parts[5].split("/")[1]
    backend = events_backends[parts[4]][parts[3]]
    connection = backend.connections.get(name)
    if connection is None or connection.arn != arn:
        raise _HttpTaskError("Events.ConnectionResource.ResourceNotFound", f"Connection {arn} does not exist.")
    if connection.state not in ("AUTHORIZED", "ACTIVE"):
        raise _HttpTaskError(
            "Events.ConnectionResource.InvalidConnectionState", f"Connection {arn} is {connection.state}."
        )
    return connection


def _token(connection: Any, oauth: dict[str, Any]) -> str:
    """The connection's OAuth token: fetched from its ``AuthorizationEndpoint`` once, kept on moto's
    connection (forgotten with it) until ``expires_in`` passes."""
    with _tokens_lock:
        kept = getattr(connection, "idemflow_oauth_token", None)
        if kept is not None and (kept[1] is None or time.monotonic() < kept[1]):
            return str(kept[0])
        client = oauth.get("ClientParameters") or {}
        extra = oauth.get("OAuthHttpParameters") or {}
        credentials = f"{client.get('ClientID', '')}:{client.get('ClientSecret', '')}"
        headers = dict(_connection_pairs(extra, "HeaderParameters"))
        headers["Authorization"] = "Basic " + base64.b64encode(credentials.encode()).decode()
        url = str(oauth.get("AuthorizationEndpoint", ""))
        query = _connection_pairs(extra, "QueryStringParameters")
        if query:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(query)
        body = _connection_pairs(extra, "BodyParameters")
        data = urllib.parse.urlencode(body).encode() if body else None
        if data is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        request = urllib.request.Request(url, data=data, headers=headers, method=str(oauth.get("HttpMethod", "POST")))
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_SECONDS) as answer:
                granted = json.loads(answer.read() or b"{}")
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise _HttpTaskError(
                "Events.ConnectionResource.InvalidConnectionState", f"Could not authorize the connection: {exc}"
            ) from exc
        token = granted.get("access_token") if isinstance(granted, dict) else None
        if not isinstance(token, str):
            raise _HttpTaskError(
                "Events.ConnectionResource.InvalidConnectionState", "The authorization endpoint sent no access_token."
            )
        expires = granted.get("expires_in")
        until = time.monotonic() + float(expires) if isinstance(expires, int | float) else None
        connection.idemflow_oauth_token = (token, until)
        return token


def _authorization(connection: Any) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """The headers the connection's authorization adds, and its InvocationHttpParameters."""
    params: dict[str, Any] = connection.auth_parameters or {}
    kind = connection.authorization_type
    if kind == "API_KEY":
        key = params.get("ApiKeyAuthParameters") or {}
        headers = [(str(key.get("ApiKeyName")), str(key.get("ApiKeyValue", "")))]
    elif kind == "BASIC":
        basic = params.get("BasicAuthParameters") or {}
        pair = f"{basic.get('Username', '')}:{basic.get('Password', '')}"
        headers = [("Authorization", "Basic " + base64.b64encode(pair.encode()).decode())]
    elif kind == "OAUTH_CLIENT_CREDENTIALS":
        headers = [("Authorization", "Bearer " + _token(connection, params.get("OAuthParameters") or {}))]
    else:
        headers = []
    return headers, params.get("InvocationHttpParameters") or {}


# -- the call ---------------------------------------------------------------------------------------------


def invoke(parameters: dict[str, Any], region: str) -> dict[str, Any]:
    """Send the request an HTTP Task's ``Parameters`` describe; its result, or :class:`_HttpTaskError`."""
    endpoint = parameters.get("ApiEndpoint")
    method = parameters.get("Method")
    config = parameters.get("InvocationConfig") or parameters.get("Authentication") or {}
    arn = config.get("ConnectionArn") if isinstance(config, dict) else None
    if not isinstance(endpoint, str) or not isinstance(method, str) or not isinstance(arn, str):
        raise _runtime("An HTTP Task needs ApiEndpoint, Method and a ConnectionArn (Authentication).")
    method = method.upper()
    if method not in METHODS:
        raise _runtime(f"Method {method} is not one of {', '.join(sorted(METHODS))}.")
    headers = _pairs(parameters.get("Headers"), "Headers")
    for name, _ in headers:
        low = name.lower()
        if low in FORBIDDEN_HEADERS or low.startswith(FORBIDDEN_PREFIXES):
            raise _runtime(f"The header {name} is not allowed in an HTTP Task.")
    auth_headers, extra = _authorization(find_connection(arn))
    headers = _merged(headers, _connection_pairs(extra, "HeaderParameters"), fold=True)
    headers = _merged(headers, auth_headers, fold=True)
    query = _merged(
        _pairs(parameters.get("QueryParameters"), "QueryParameters"),
        _connection_pairs(extra, "QueryStringParameters"),
        fold=False,
    )
    body_pairs = _connection_pairs(extra, "BodyParameters")
    body = parameters.get("RequestBody")
    if isinstance(body, str) and body_pairs:
        raise _runtime("The request body is a string and the connection has body parameters: they cannot be merged.")
    if body_pairs:
        body = {**(body if isinstance(body, dict) else {}), **dict(body_pairs)}
    transform = parameters.get("Transform") or {}
    data: bytes | None = None
    if body is not None:
        if transform.get("RequestBodyEncoding") == "URL_ENCODED" and isinstance(body, dict):
            form = (transform.get("RequestEncodingOptions") or {}).get("ArrayFormat", "INDICES")
            data = url_encoded(body, str(form)).encode()
        else:
            data = (body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))).encode()
    url = endpoint
    if query:
        url += ("&" if "?" in url else "?") + urllib.parse.urlencode(query)
    sent = {n: v for n, v in headers}
    if data is not None and not any(n.lower() == "content-type" for n in sent):
        sent["Content-Type"] = "application/json; charset=UTF-8"
    sent["User-Agent"] = f"Amazon|StepFunctions|HttpInvoke|{region}"
    sent["Range"] = "bytes=0-262144"
    request = urllib.request.Request(url, data=data, headers=sent, method=method)
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=REQUEST_TIMEOUT_SECONDS) as answer:
            return _result(answer.status, answer.headers, answer.read())
    except urllib.error.HTTPError as failed:
        result = _result(failed.code, failed.headers, failed.read())
        raise _HttpTaskError(f"States.Http.StatusCode.{failed.code}", json.dumps(result)) from failed
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise _HttpTaskError("States.Http.Socket", f"{type(reason).__name__}: {reason}") from exc


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx answer is the task's answer (not 2xx: it fails with its code), not followed."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _result(status: int, headers: Any, raw: bytes) -> dict[str, Any]:
    content_type = str(headers.get("Content-Type", "")).lower()
    if content_type.startswith(BINARY_TYPES):
        raise _runtime(f"The response's content type {content_type} is not supported by the HTTP Task.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _runtime("The response cannot be read as a string.") from exc
    body: Any = text
    if text and "json" in content_type:
        try:
            body = json.loads(text)
        except ValueError:
            body = text
    grouped: dict[str, list[str]] = {}
    for name, value in headers.items():
        grouped.setdefault(name.lower(), []).append(value)
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    return {"Headers": grouped, "ResponseBody": body, "StatusCode": status, "StatusText": reason}


# -- the interpreter's task service -----------------------------------------------------------------------
# Module-level classes: the parse cache (``parse-cache``) pickles the parsed program, these included.


class HttpErrorName(CustomErrorName):  # type: ignore[misc]
    """A custom error name, or one of the HTTP Task's ``States.Http.*`` names (which the grammar does not know,
    and moto's CustomErrorName refuses for their prefix)."""

    def __init__(self, error_name: str | None) -> None:
        if error_name is not None and error_name.startswith("States.Http."):
            ErrorName.__init__(self, error_name=error_name)
        else:
            super().__init__(error_name=error_name)


class StateTaskServiceHttp(StateTaskService):  # type: ignore[misc]
    """moto's task service for ``http``: the request :func:`invoke` sends, its failures named as AWS names them."""

    def _get_supported_parameters(self) -> set[str] | None:
        return set(PARAMETERS) if self.resource.api_action.lower() == "invoke" else None

    def _eval_service_task(
        self, env: Any, resource_runtime_part: Any, normalised_parameters: dict[str, Any], state_credentials: Any
    ) -> None:
        env.stack.append(invoke(normalised_parameters, resource_runtime_part.region))

    def _from_error(self, env: Any, ex: Exception) -> Any:
        if not isinstance(ex, _HttpTaskError):
            return super()._from_error(env=env, ex=ex)
        name: ErrorName
        if ex.error == "States.Runtime":
            name = StatesErrorName(typ=StatesErrorNameType.StatesRuntime)
        else:
            name = HttpErrorName(ex.error)
        return FailureEvent(
            env=env,
            error_name=name,
            event_type=HistoryEventType.TaskFailed,
            event_details=cast(
                Any,
                {
                    "taskFailedEventDetails": TaskFailedEventDetails(
                        error=ex.error,
                        cause=ex.cause,
                        resource=self._get_sfn_resource(),
                        resourceType=self._get_sfn_resource_type(),
                    )
                },
            ),
        )


def install_http_invoke(patch: Patch) -> None:
    """``arn:aws:states:::http:invoke`` runs :class:`StateTaskServiceHttp`; ``ErrorEquals`` accepts the
    ``States.Http.*`` names."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import state_task_factory
    from moto.stepfunctions.parser.asl.parse import preprocessor

    service_for = state_task_factory.state_task_service_for  # type: ignore[attr-defined]

    def state_task_service_for(service_name: str) -> Any:
        if service_name == "http":
            return StateTaskServiceHttp()  # type: ignore[no-untyped-call]
        return service_for(service_name)

    patch.set(state_task_factory, "state_task_service_for", state_task_service_for)
    patch.set(preprocessor, "CustomErrorName", HttpErrorName)
