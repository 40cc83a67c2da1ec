"""The in-process dispatch of AWS requests to moto, and the interpreter's clients on it (``in-process-clients``).

:func:`dispatch_in_process` is what moto's own mock does with a botocore request, without its global
on/off switch and with the handler lookup cached: the request never leaves the process. The engine's
in-process clients (``Engine.client``) and its HTTP server's DynamoDB front (``server.py``) use it
whatever the registry installs.

``in-process-clients`` (a speedup): moto's interpreter builds a new boto3 client for every task call
(``boto_client_for``) and sends it through HTTP to its own server, in the same process (together about
half of the engine's CPU under load). With the change, the interpreter gets one cached client per
service and region, dispatched in-process: :class:`DynamoDBTaskClient` and :class:`LambdaTaskClient`
send a task's JSON straight to moto's handlers, any other service a botocore client. Only the
interpreter's clients are affected: every other client, a worker's or a test's, still goes through the
HTTP endpoint. Left out, the interpreter calls ``http://localhost:$MOTO_PORT`` as moto does (the engine
sets ``MOTO_PORT`` to its server's port).

``request-environ`` (a speedup): :func:`dispatch_in_process` (the functions' DynamoDB calls through the endpoint's
front, the engine's in-process botocore clients) hands moto a botocore request, which moto's ``normalize_request``
turns into its request by building a whole WSGI environ with werkzeug's ``EnvironBuilder`` (the URL parsed, the
headers copied twice, the body measured through a stream). Requests of one method and URL with the same header
names (and content type, and a body or none) differ only in the header values and the body: the environ of the
first is kept as a template, checked to give that request's environ again, and each later request's environ is the
template with its own header values, body, length and error stream, key for key and in the same order as moto's.
Anything else (a body that is not bytes, a header value that is not text, two headers for one environ key) goes to
moto's.
"""

from __future__ import annotations

import functools
import io
import json
import re
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

import boto3
import moto.backend_index as backend_index
import moto.backends as moto_backends
from botocore import UNSIGNED, xform_name
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.response import StreamingBody
from moto.core.base_backend import BackendDict
from moto.core.botocore_stubber import MockRawResponse
from moto.core.models import DEFAULT_ACCOUNT_ID, botocore_stubber
from moto.core.request import Request, normalize_request
from moto.core.utils import get_equivalent_url_in_aws_domain, get_service_model
from moto.moto_api import recorder
from werkzeug.exceptions import HTTPException

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

_clients: dict[tuple[str, str], Any] = {}
_clients_lock = threading.Lock()


# moto's stubber finds a request's handler by trying every service's URL patterns in turn, then every
# URL of the backend, on each request: resolved once per URL (the interpreter uses a handful).
_routes: dict[str, Callable[..., Any]] = {}
MAX_ROUTES: Final = 1024


def _route(url: str) -> Callable[..., Any] | None:
    parsed, _ = get_equivalent_url_in_aws_domain(url)
    clean_url = f"{parsed.scheme}://{parsed.netloc}{parsed.path}"
    handler = _routes.get(clean_url)
    if handler is not None:
        return handler
    for service, pattern in backend_index.backend_url_patterns:
        if not pattern.match(clean_url):
            continue
        backend_dict: Any = moto_backends.get_backend(service)  # type: ignore[call-overload]
        if isinstance(backend_dict, BackendDict):
            regions = backend_dict[DEFAULT_ACCOUNT_ID]
            backend = regions["us-east-1"] if "us-east-1" in regions else regions["aws"]
        else:
            backend = backend_dict["global"]
        for url_pattern, candidate in backend.urls.items():
            if re.compile(url_pattern).match(clean_url):
                if len(_routes) < MAX_ROUTES:  # REST paths name resources: a bound, not one entry per object
                    _routes[clean_url] = candidate
                return candidate  # type: ignore[no-any-return]
        return None
    return None


def dispatch_in_process(request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
    # What moto's own mock does with a request (botocore_stubber.process_request), without its global
    # on/off switch and with the handler lookup cached: the request never leaves the process.
    handler = _route(request.url)
    if handler is None:
        response = botocore_stubber.process_request(request)  # passthrough and error cases, as moto does
        if response is None:
            return None
        status, headers, body = response
        return AWSResponse(request.url, status, headers, MockRawResponse(body))  # type: ignore[arg-type]
    normalized = normalize_request(request)
    return _handled(request.url, handler, normalized, normalized.raw_url)


def _handled(url: str, handler: Callable[..., Any], normalized: Request, raw_url: str) -> AWSResponse:
    recorder._record_request(normalized)
    try:
        status, headers, body = handler(normalized, raw_url, normalized.headers)
    except HTTPException as exc:
        status, headers, body = int(exc.code or 500), dict(exc.get_headers()), exc.get_body()
    return AWSResponse(url, status, headers, MockRawResponse(body))  # type: ignore[arg-type]


# A task client's requests differ from one another only in their body for a given method, URL and headers
# (an operation's target, a function's invocation URL): what werkzeug's EnvironBuilder makes of the rest is
# made once and copied. moto's normalize_request builds the whole environ through it for every request (the
# URL parsed, each header copied twice), which was the largest part of setting a task's request up.
_environs: dict[tuple[str, str, tuple[tuple[str, str], ...]], tuple[dict[str, Any], str]] = {}
MAX_ENVIRONS: Final = 1024
_PER_REQUEST: Final = ("wsgi.input", "wsgi.errors", "CONTENT_LENGTH", "werkzeug.request")
"""The environ's keys set for each request: its body, its length, the error stream, the request itself."""


def task_request(method: str, url: str, headers: dict[str, str], body: bytes) -> tuple[Request, str]:
    """moto's request for a task client's request, and its raw URL: what ``normalize_request`` makes of the
    same AWSPreparedRequest, environ key for key (the body's stream, its length and the error stream set per
    request, as werkzeug and moto set them; the request sets itself in it). Headers that change per request (a
    length, a date, a signature) would make an environ each: the task clients send none."""
    key = (method, url, tuple(headers.items()))
    made = _environs.get(key)
    if made is None:
        request = Request.from_primitives(method, url, headers, b"")
        made = ({k: v for k, v in request.environ.items() if k not in _PER_REQUEST}, request.raw_url)
        if len(_environs) < MAX_ENVIRONS:  # a function name in the URL: a bound, not one entry per function
            _environs[key] = made
    environ, raw_url = made
    environ = {
        **environ,
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,  # EnvironBuilder's default, the stream of the moment
        "CONTENT_LENGTH": str(len(body)),  # werkzeug's for a body, moto's "0" without one
    }
    return Request(environ), raw_url


#: Config of the in-process clients (the interpreter's and the engine's own). Unsigned: moto reads the
#: account from the access key in the signature, and without one uses its default account, the one
#: the engine deploys into, so signing would be work for nothing.
IN_PROCESS_CONFIG: Final = Config(
    # AWS_ENDPOINT_URL (as LocalStack users set it) must not send the engine's own calls elsewhere.
    ignore_configured_endpoint_urls=True,
    signature_version=UNSIGNED,
    parameter_validation=False,
    retries={"max_attempts": 0, "total_max_attempts": 1},
    max_pool_connections=64,
)


def _dispatch_task(
    method: str, url: str, sent: dict[str, str], body: bytes
) -> tuple[AWSResponse, int, dict[str, str], dict[str, Any]]:
    """A task client's request (its method, URL, headers and body) through moto's handler: the response, its
    status, its headers (lower-case names) and the ResponseMetadata botocore would build from them."""
    handler = _route(url)
    assert handler is not None  # moto serves DynamoDB and Lambda: never a passthrough
    response = _handled(url, handler, *task_request(method, url, sent, body))
    headers = {name.lower(): value for name, value in response.headers.items()}
    metadata = {
        "RequestId": headers.get("x-amzn-requestid", ""),
        "HTTPStatusCode": response.status_code,
        "HTTPHeaders": headers,
        "RetryAttempts": 0,
    }
    return response, response.status_code, headers, metadata


class DynamoDBTaskClient:
    """The interpreter's DynamoDB client: the task's parameters as JSON to moto's DynamoDB handler, its
    JSON answer back, without botocore's shape-driven serializer and parser on either side.

    For the JSON protocol those two passes turn JSON into the same JSON (the state data is JSON
    already, and no task sends binary values through them), at about a millisecond per call. Errors
    are raised as botocore raises them, with the fields the interpreter reads: the code (``__type``
    after ``#``), the message, the HTTP status and the request id (a unit test compares
    both clients call by call).
    """

    def __init__(self, region: str):
        self.url = f"https://dynamodb.{region}.amazonaws.com/"

    def __getattr__(self, action: str) -> Callable[..., dict[str, Any]]:
        operation = _dynamodb_operations().get(action)
        if operation is None:
            raise AttributeError(action)
        return functools.partial(self.call, operation)

    def call(self, operation: str, **params: Any) -> dict[str, Any]:
        response, status, _, metadata = _dispatch_task(
            "POST",
            self.url,
            {"X-Amz-Target": f"DynamoDB_20120810.{operation}", "Content-Type": "application/x-amz-json-1.0"},
            json.dumps(params).encode(),
        )
        data: dict[str, Any] = json.loads(response.content) if response.content else {}
        if status >= 300:
            error = {
                "Code": str(data.pop("__type", "")).rpartition("#")[2],
                "Message": str(data.pop("message", data.pop("Message", ""))),
            }
            raise ClientError({**data, "Error": error, "ResponseMetadata": metadata}, operation)  # type: ignore[arg-type]
        data["ResponseMetadata"] = metadata
        return data


class LambdaTaskClient:
    """The interpreter's Lambda client: ``invoke`` as the REST request moto's Lambda handler serves, the
    response headers and payload back as botocore returns them (StatusCode, FunctionError, LogResult,
    ExecutedVersion, a readable Payload), without botocore's serializer and parser.
    A unit test compares both clients invocation by invocation.
    """

    def __init__(self, region: str):
        self.region = region
        self.base = f"https://lambda.{region}.amazonaws.com/2015-03-31/functions/"

    def __getattr__(self, action: str) -> Any:
        # Anything but invoke (the interpreter uses no other): a botocore client, dispatched in-process.
        return getattr(_botocore_client(self.region, "lambda"), action)

    def invoke(
        self,
        FunctionName: str,
        Payload: bytes | str | None = None,
        InvocationType: str | None = None,
        LogType: str | None = None,
        ClientContext: str | None = None,
        Qualifier: str | None = None,
    ) -> dict[str, Any]:
        url = f"{self.base}{quote(FunctionName, safe='')}/invocations"
        if Qualifier:
            url += f"?Qualifier={quote(Qualifier, safe='')}"
        headers = {
            name: value
            for name, value in (
                ("X-Amz-Invocation-Type", InvocationType),
                ("X-Amz-Log-Type", LogType),
                ("X-Amz-Client-Context", ClientContext),
            )
            if value is not None
        }
        body = Payload.encode() if isinstance(Payload, str) else (Payload or b"")
        response, status, answer, metadata = _dispatch_task("POST", url, headers, body)
        if status >= 300:
            data = json.loads(response.content) if response.content else {}
            code = answer.get("x-amzn-errortype", "").split(":")[0] or str(data.get("__type", data.get("Type", "")))
            error = {"Code": code or str(status), "Message": str(data.get("message", data.get("Message", "")))}
            raise ClientError({"Error": error, "ResponseMetadata": metadata}, "Invoke")  # type: ignore[typeddict-item]
        result: dict[str, Any] = {"ResponseMetadata": metadata, "StatusCode": status}
        for header, key in (
            ("x-amz-function-error", "FunctionError"),
            ("x-amz-log-result", "LogResult"),
            ("x-amz-executed-version", "ExecutedVersion"),
        ):
            if header in answer:
                result[key] = answer[header]
        result["Payload"] = StreamingBody(io.BytesIO(response.content), len(response.content))
        return result


@functools.cache
def _dynamodb_operations() -> dict[str, str]:
    """put_item -> PutItem, as botocore names a client's methods. From moto's own copy of DynamoDB's model
    (kept once per process, read by its handler for every request): a botocore session of our own parsed the
    model's JSON again in every process that ran a DynamoDB task."""
    return {xform_name(name): name for name in get_service_model("dynamodb").operation_names}


_TASK_CLIENTS: dict[str, Callable[[str], Any]] = {"dynamodb": DynamoDBTaskClient, "lambda": LambdaTaskClient}


def _cached_client(region: str, service: str, state_credentials: Any = None) -> Any:
    """What the interpreter gets for boto_client_for(): one client per service and region, built once
    (under a lock: executions starting at once would otherwise each build their own).
    The interpreter always builds them with the same settings (fixed fake credentials, no retries, no
    parameter validation), so the state's credentials change nothing. DynamoDB and Lambda get the
    task clients above; any other service a botocore client dispatched in-process."""
    client = _clients.get((service, region))
    if client is not None:
        return client
    with _clients_lock:
        client = _clients.get((service, region))
        if client is None:
            make = _TASK_CLIENTS.get(service)
            client = make(region) if make is not None else _new_botocore_client(region, service)
            _clients[(service, region)] = client
    return client


def _botocore_client(region: str, service: str) -> Any:
    with _clients_lock:
        key = (f"botocore:{service}", region)
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = _new_botocore_client(region, service)
    return client


def _new_botocore_client(region: str, service: str) -> Any:
    client = boto3.session.Session().client(
        service_name=service,
        region_name=region,
        aws_access_key_id="ak",
        aws_secret_access_key="sk",
        config=IN_PROCESS_CONFIG,
    )
    client.meta.events.register("before-send", _dispatch_unless_mocked)
    return client


def _dispatch_unless_mocked(request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
    # botocore runs every before-send handler and keeps the first answer: under moto's own mock
    # (mock_aws), its stubber, which every client has, answers too, and the request would run twice.
    if botocore_stubber.enabled:
        return None
    return dispatch_in_process(request)


_CLIENT_MODULES: Final = (
    "moto.stepfunctions.parser.asl.utils.boto_client",
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_dynamodb",
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils",
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn",
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sqs",
)


def reset() -> None:
    """Forget the cached clients and routes (moto's backends are about to be reset: the routes name them)."""
    with _clients_lock:
        _clients.clear()
    _routes.clear()


def install_in_process_clients(patch: Patch) -> None:
    import importlib

    # Each module imported boto_client_for by name: every module's name is changed.
    for name in _CLIENT_MODULES:
        patch.set(importlib.import_module(name), "boto_client_for", _cached_client)
    patch.on_undo(reset)


# -- request-environ -----------------------------------------------------------------------------------------

_MOTO_NORMALIZE: Final = normalize_request
"""moto's normalize_request, whatever this module's name holds."""
MAX_TEMPLATES: Final = 1024
_Template = tuple[dict[str, Any], tuple[tuple[int, str], ...]] | None
_templates: dict[tuple[str, str, tuple[str, ...], str | None, bool], _Template] = {}
"""(method, URL, header names, content type, whether a body) -> (the environ of the first such request, and for each
header that becomes an HTTP_ key its position and key), or None: such requests are built by moto's normalize_request."""


def _environ(template: dict[str, Any], slots: tuple[tuple[int, str], ...], items: list[Any], body: bytes) -> Any:
    from moto.core.request import PRESERVED_HEADER_NAMES_ENVIRON_KEY

    environ = dict(template)
    for index, key in slots:
        environ[key] = items[index][1]
    environ["wsgi.input"] = io.BytesIO(body)
    environ["wsgi.errors"] = sys.stderr  # EnvironBuilder's default, the stream of the moment
    environ["CONTENT_LENGTH"] = str(len(body))
    environ[PRESERVED_HEADER_NAMES_ENVIRON_KEY] = dict(template[PRESERVED_HEADER_NAMES_ENVIRON_KEY])
    return environ


def _comparable(environ: dict[str, Any]) -> list[tuple[str, Any]]:
    """An environ's keys in order with their values, the body's stream read as its bytes, the request left out."""
    return [(k, v.getvalue() if k == "wsgi.input" else v) for k, v in environ.items() if k != "werkzeug.request"]


def request_from_prepared(request: Any) -> Request:
    """moto's ``normalize_request`` of a botocore request: the same Request, its environ made from a template."""
    body = b"" if request.body is None else request.body
    if not isinstance(request, AWSPreparedRequest) or type(body) is not bytes:  # moto's other kinds of request
        return _MOTO_NORMALIZE(request)
    items = [(k, v) for k, v in request.headers.items() if k.lower() != "transfer-encoding"]  # as moto drops it
    if any(type(v) is not str or type(k) is not str for k, v in items):
        return _MOTO_NORMALIZE(request)
    content_type = next((v for k, v in items if k.lower() == "content-type"), None)
    # Without a body, EnvironBuilder sets no length and moto adds "0" last: another order of keys.
    key = (request.method, request.url, tuple(k for k, _ in items), content_type, not body)
    if key in _templates:
        made = _templates[key]
        if made is None:
            return _MOTO_NORMALIZE(request)
        return Request(_environ(made[0], made[1], items, body))
    built = _MOTO_NORMALIZE(request)
    environ = dict(built.environ)  # before moto handles it (its handler may add to it)
    slots = tuple(
        (i, f"HTTP_{k.upper().replace('-', '_')}")
        for i, (k, _) in enumerate(items)
        if k.lower() not in ("content-type", "content-length")
    )
    template: _Template = (environ, slots)
    if len({slot for _, slot in slots}) != len(slots) or _comparable(_environ(environ, slots, items, body)) != (
        _comparable(environ)
    ):
        template = None  # two headers for one key, or anything else the template would not give again
    else:  # each request sets its own: nothing of this one kept
        environ["wsgi.input"] = environ["werkzeug.request"] = None
    if len(_templates) < MAX_TEMPLATES:  # a name in a URL: a bound, not one entry per object
        _templates[key] = template
    return built


def install_request_environ(patch: Patch) -> None:
    # dispatch_in_process calls the name it imported: changed here, in this module only.
    patch.set(sys.modules[__name__], "normalize_request", request_from_prepared)
    patch.on_undo(_templates.clear)
