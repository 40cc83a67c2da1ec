"""How the engine plugs into moto 5.2.5 (the version pinned in pyproject.toml).

``patches.py`` fixes moto's bugs; this module connects moto to the engine's own parts:

* Lambda ``Invoke`` goes to :class:`~idemflow.engine.lambda_runtime.LambdaRuntime` (moto without Docker
  only echoes the request body);
* an optimized DynamoDB task consults :class:`~idemflow.engine.faults.Faults` first, so a test can
  throttle the DynamoDB call of one named state;
* an installed :class:`Gate` sees every request the interpreter is about to send (and every
  Lambda response before the state reads it), so a deterministic scheduler can order the requests of
  concurrent executions (``idemflow/explore``);
* the end of an execution sets an event, so the engine waits for an execution without polling
  (tight polling of describe_execution starves the interpreter's threads through the GIL);
* the interpreter's boto3 clients are cached and dispatch in-process: moto builds a new client for
  every task call and sends it through HTTP to its own server, in the same process (together about
  half of the engine's CPU under load). Only the interpreter's clients are affected: every other
  client, a worker's or a test's, still goes through the HTTP endpoint;
* JSONPath expressions are parsed once: jsonpath_ng rebuilds its yacc parser on every ``parse()``;
* moto's HTTP dispatcher lists its own package directory (``os.listdir`` of ~150 folders) on every
  request to find a backend: the list is computed once;
* a failing state logs ``repr()`` of its whole program subtree, computed before the log level is
  checked: every duplicate's conditional put fails by design, so the repr is only built when moto's
  parser logger would actually emit it (the engine sets it to CRITICAL: expected failures are not errors).

Each hook has a test in ``tests/unit/test_hooks.py`` that fails without it.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol
from urllib.parse import quote

import boto3
import botocore.session
import moto.backend_index as backend_index
import moto.backends as moto_backends
from botocore import UNSIGNED, xform_name
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.response import StreamingBody
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.core.base_backend import BackendDict
from moto.core.botocore_stubber import MockRawResponse
from moto.core.exceptions import JsonRESTError
from moto.core.models import DEFAULT_ACCOUNT_ID, botocore_stubber
from moto.core.request import normalize_request
from moto.core.utils import get_equivalent_url_in_aws_domain
from moto.moto_api import recorder
from moto.stepfunctions.parser.asl.component import eval_component as sfn_eval_component
from moto.stepfunctions.parser.asl.component.common.path import result_path as sfn_result_path
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_dynamodb as sfn_dynamodb,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_lambda as sfn_lambda,
)
from moto.stepfunctions.parser.asl.utils import boto_client as sfn_boto_client
from moto.stepfunctions.parser.asl.utils import json_path as sfn_json_path
from moto.stepfunctions.parser.backend import execution as sfn_execution
from werkzeug.exceptions import HTTPException

from idemflow.engine.faults import Faults
from idemflow.engine.lambda_runtime import LambdaRuntime, LambdaServiceError

_lock = threading.Lock()
_originals: dict[str, Any] = {}
_runtime: LambdaRuntime | None = None
_faults: Faults | None = None
_done: dict[str, threading.Event] = {}
_gate: Gate | None = None


class Gate(Protocol):
    """Where the interpreter's requests wait for their turn (a scheduler's view of an execution).

    ``before`` is called just before a task sends its request (DynamoDB or Lambda), ``after`` once a
    Lambda invocation has returned and before the state sees its response. Both run in the
    execution's own thread and may block it; an exception they raise fails the task as a request error
    would.
    """

    def before(self, request: TaskRequest) -> None: ...

    def after(self, request: TaskRequest) -> None: ...

    def ended(self, execution_arn: str) -> None: ...


@dataclass(frozen=True)
class TaskRequest:
    execution_arn: str
    state: str
    service: str
    """``dynamodb`` or ``lambda``."""
    action: str
    """The DynamoDB action (``putItem``...) or, for Lambda, the function's name or ARN."""
    parameters: dict[str, Any]


def set_gate(gate: Gate | None) -> None:
    """Install (or, with None, remove) the gate every interpreter request passes."""
    global _gate
    _gate = gate


def _task_request(env: Any, service: str, action: str, parameters: dict[str, Any]) -> TaskRequest:
    try:
        arn = str(env.states.context_object.context_object_data["Execution"]["Id"])
    except (AttributeError, KeyError, TypeError):
        arn = ""
    return TaskRequest(arn, _state_name(env), service, action, parameters)


# Events of executions nobody waits for (started by another client, e.g. against `idemflow serve`)
# would pile up: only the most recent ones are kept.
MAX_DONE_EVENTS = 10_000
_clients: dict[tuple[str, str], Any] = {}
_clients_lock = threading.Lock()


class _LambdaServiceException(JsonRESTError):
    def __init__(self, error: LambdaServiceError):
        super().__init__(error.code, error.message)
        self.code = error.status


def _invoke(
    self: LambdaSimpleBackend,
    function_name: str,
    qualifier: str | None,
    body: Any,
    headers: Any,
    response_headers: Any,
) -> bytes | None:
    runtime = _runtime
    if runtime is None:
        result: bytes | None = _originals["invoke"](self, function_name, qualifier, body, headers, response_headers)
        return result
    try:
        outcome = runtime.invoke(function_name, body)
    except LambdaServiceError as exc:
        raise _LambdaServiceException(exc) from exc
    if outcome.function_error:
        response_headers["x-amz-function-error"] = outcome.function_error
    return outcome.payload


def _state_name(env: Any) -> str:
    try:
        return str(env.states.context_object.context_object_data["State"]["Name"])
    except (AttributeError, KeyError, TypeError):
        return ""


def _eval_dynamodb_task(
    self: Any, env: Any, resource_runtime_part: Any, normalised_parameters: dict[str, Any], state_credentials: Any
) -> None:
    gate = _gate
    if gate is not None:
        gate.before(_task_request(env, "dynamodb", self._get_boto_service_action(), normalised_parameters))
    faults = _faults
    if faults is None:
        _originals["eval_dynamodb"](self, env, resource_runtime_part, normalised_parameters, state_credentials)
        return
    state = _state_name(env)
    action = faults.take_before_dynamodb(state)
    if action is not None:
        action()
    error = faults.take_dynamodb(state)
    lost = error is None and faults.take_dynamodb_lost(state)
    if error is None:
        _originals["eval_dynamodb"](self, env, resource_runtime_part, normalised_parameters, state_credentials)
        if not lost:
            return
        env.stack.pop()  # the write happened; its response never arrives
        error = "InternalServerError"  # DynamoDB's code for a 500 (the task names it InternalServerErrorException)
    raise ClientError(
        {
            "Error": {"Code": error, "Message": f"injected {error}"},
            "ResponseMetadata": {"HTTPStatusCode": 500 if lost else 400, "RequestId": "injected"},
        },
        self._get_boto_service_action(),
    )


def _eval_lambda_task(
    self: Any, env: Any, resource_runtime_part: Any, normalised_parameters: dict[str, Any], state_credentials: Any
) -> None:
    gate = _gate
    if gate is None:
        _originals["eval_lambda"](self, env, resource_runtime_part, normalised_parameters, state_credentials)
        return
    request = _task_request(env, "lambda", str(normalised_parameters.get("FunctionName", "")), normalised_parameters)
    gate.before(request)
    try:
        _originals["eval_lambda"](self, env, resource_runtime_part, normalised_parameters, state_credentials)
    finally:
        gate.after(request)


def _terminated(self: Any) -> None:
    _originals["terminated"](self)
    gate = _gate
    if gate is not None:
        gate.ended(self.execution.exec_arn)
    with _lock:
        event = _done.setdefault(self.execution.exec_arn, threading.Event())
        while len(_done) > MAX_DONE_EVENTS:
            del _done[next(iter(_done))]  # dicts keep insertion order: the oldest goes first
    event.set()


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
    else:
        normalized = normalize_request(request)
        recorder._record_request(normalized)
        try:
            status, headers, body = handler(normalized, normalized.raw_url, normalized.headers)
        except HTTPException as exc:
            status, headers, body = int(exc.code or 500), dict(exc.get_headers()), exc.get_body()
    return AWSResponse(request.url, status, headers, MockRawResponse(body))  # type: ignore[arg-type]


#: Config of the in-process clients (the interpreter's and the engine's own). Unsigned: moto reads the
#: account from the access key in the signature, and without one uses its default account, the one
#: the engine deploys into; SigV4 signing was a tenth of each in-process call.
IN_PROCESS_CONFIG: Final = Config(
    # AWS_ENDPOINT_URL (as LocalStack users set it) must not send the engine's own calls elsewhere.
    ignore_configured_endpoint_urls=True,
    signature_version=UNSIGNED,
    parameter_validation=False,
    retries={"max_attempts": 0, "total_max_attempts": 1},
    max_pool_connections=64,
)


def _dispatch_task(request: AWSPreparedRequest) -> tuple[AWSResponse, int, dict[str, str], dict[str, Any]]:
    """A task client's request through moto's handler: the response, its status, its headers (lower-case
    names) and the ResponseMetadata botocore would build from them."""
    response = dispatch_in_process(request)
    assert response is not None  # moto serves DynamoDB and Lambda: never a passthrough
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
    after ``#``), the message, the HTTP status and the request id (``tests/unit/test_hooks.py``
    compares both clients call by call).
    """

    def __init__(self, region: str):
        self.url = f"https://dynamodb.{region}.amazonaws.com/"

    def __getattr__(self, action: str) -> Callable[..., dict[str, Any]]:
        operation = _dynamodb_operations().get(action)
        if operation is None:
            raise AttributeError(action)
        return functools.partial(self.call, operation)

    def call(self, operation: str, **params: Any) -> dict[str, Any]:
        request = AWSPreparedRequest(
            "POST",
            self.url,
            {"X-Amz-Target": f"DynamoDB_20120810.{operation}", "Content-Type": "application/x-amz-json-1.0"},
            json.dumps(params).encode(),
            False,
        )
        response, status, _, metadata = _dispatch_task(request)
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
    ``tests/unit/test_hooks.py`` compares both clients invocation by invocation.
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
        response, status, answer, metadata = _dispatch_task(AWSPreparedRequest("POST", url, headers, body, False))
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
    """put_item -> PutItem, as botocore names a client's methods."""
    model = botocore.session.get_session().get_service_model("dynamodb")
    return {xform_name(name): name for name in model.operation_names}


_TASK_CLIENTS: dict[str, Callable[[str], Any]] = {"dynamodb": DynamoDBTaskClient, "lambda": LambdaTaskClient}


def _cached_client(region: str, service: str, state_credentials: Any = None) -> Any:
    """What the interpreter gets for boto_client_for(): one client per service and region, built once
    (under a lock: 16 executions starting at once otherwise build 16 clients each, ~0.2 s apiece).
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
    client.meta.events.register("before-send", dispatch_in_process)
    return client


def _log_failure(self: Any, *args: Any, **kwargs: Any) -> None:
    if sfn_eval_component.LOG.isEnabledFor(logging.ERROR):
        _originals["log_failure"](self, *args, **kwargs)


def _log_exception(self: Any, *args: Any, **kwargs: Any) -> None:
    if sfn_eval_component.LOG.isEnabledFor(logging.ERROR):
        _originals["log_exception"](self, *args, **kwargs)


@functools.lru_cache(maxsize=1)
def _moto_modules() -> tuple[str, ...]:
    return tuple(_originals["list_of_moto_modules"]())


def _list_of_moto_modules() -> Any:
    return iter(_moto_modules())


@functools.lru_cache(maxsize=4096)
def _parse_json_path(path: str) -> Any:
    return _originals["json_path_parse"](path)


@functools.lru_cache(maxsize=4096)
def _parse_result_path(path: str) -> Any:
    return _originals["result_path_parse"](path)


_TARGETS: list[tuple[str, Any, str, Callable[..., Any]]] = [
    ("invoke", LambdaSimpleBackend, "invoke", _invoke),
    ("eval_dynamodb", sfn_dynamodb.StateTaskServiceDynamoDB, "_eval_service_task", _eval_dynamodb_task),
    ("eval_lambda", sfn_lambda.StateTaskServiceLambda, "_eval_service_task", _eval_lambda_task),
    ("terminated", sfn_execution.BaseExecutionWorkerCommunication, "terminated", _terminated),
    ("json_path_parse", sfn_json_path, "parse", _parse_json_path),
    ("result_path_parse", sfn_result_path, "parse", _parse_result_path),
    # moto.moto_server.werkzeug_app calls it as backends.list_of_moto_modules(): patch it there.
    ("list_of_moto_modules", moto_backends, "list_of_moto_modules", _list_of_moto_modules),
    ("log_failure", sfn_eval_component.EvalComponent, "_log_failure_event_exception", _log_failure),
    ("log_exception", sfn_eval_component.EvalComponent, "_log_exception", _log_exception),
]
_CLIENT_MODULES = [sfn_boto_client, sfn_dynamodb, lambda_eval_utils]


def install(runtime: LambdaRuntime | None, faults: Faults | None) -> None:
    """Route moto's Lambda and DynamoDB task calls to this runtime and these faults (idempotent)."""
    global _runtime, _faults
    with _lock:
        _runtime, _faults = runtime, faults
        if _originals:
            return
        # All or nothing: read every target before replacing any (a target moto renamed raises here
        # instead of leaving moto half patched and a later install() believing it is done).
        originals = {key: getattr(owner, attribute) for key, owner, attribute, _ in _TARGETS}
        originals["boto_client_for"] = sfn_boto_client.boto_client_for
        _originals.update(originals)
        for _, owner, attribute, replacement in _TARGETS:
            setattr(owner, attribute, replacement)
        for module in _CLIENT_MODULES:
            module.boto_client_for = _cached_client  # type: ignore[attr-defined]


def uninstall() -> None:
    """Put moto back as it was (tests use it to show what each hook is for)."""
    global _runtime, _faults
    with _lock:
        if not _originals:
            return
        for key, owner, attribute, _ in _TARGETS:
            setattr(owner, attribute, _originals[key])
        for module in _CLIENT_MODULES:
            module.boto_client_for = _originals["boto_client_for"]  # type: ignore[attr-defined]
        _originals.clear()
        _clients.clear()
        _routes.clear()
        _parse_json_path.cache_clear()
        _parse_result_path.cache_clear()
        _moto_modules.cache_clear()
        _runtime, _faults = None, None


def execution_done(execution_arn: str) -> threading.Event:
    """An event set when the execution ends (any status). Only executions started after install()."""
    with _lock:
        return _done.setdefault(execution_arn, threading.Event())


def forget_execution(execution_arn: str) -> None:
    with _lock:
        _done.pop(execution_arn, None)
