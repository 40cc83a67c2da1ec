"""API Gateway REST APIs: the template's APIs served on the engine's endpoint, with AWS service integrations.

A stage is served at ``<endpoint>/restapis/<api id>/<stage>/_user_request_/<path>`` (the path form
LocalStack uses too: moto's own ``/restapis/...`` routes are API Gateway's control plane, and these never
collide with them). What a request goes through, in API Gateway's order (developer guide, "API Gateway
REST API request flow", and each step's page cited where it is applied):

1. the API key, when the method requires one (``x-api-key``; ``INVALID_API_KEY`` 403 otherwise);
2. the request validator's required parameters (``BAD_REQUEST_PARAMETERS`` 400);
3. the integration request: the request template for the request's content type, rendered with the
   template's own VTL (``$input``, ``$util``, ``$context``, ``$stageVariables``);
4. the integration: an ``AWS`` integration's action (``arn:aws:apigateway:<region>:<service>:action/<Action>``)
   sent to the engine's own service, in-process, as the JSON the action takes;
5. the integration response whose ``SelectionPattern`` matches the backend's HTTP status code (for AWS and
   HTTP back ends the status code is matched: API reference, IntegrationResponse), else the default one;
   its response template, its ``ResponseParameters``, and ``$context.responseOverride`` from the template.

Errors API Gateway answers itself use the API's ``AWS::ApiGateway::GatewayResponse`` resources, else the
defaults of "Gateway response types for API Gateway".
"""

from __future__ import annotations

import json
import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

from idemflow.engine.services.base import Service
from idemflow.template import Resolver, ResourceType, Stack, TemplateError, boolean, cfn_string, mapping, physical_id

PREFIX = "/restapis/"
USER_REQUEST = "_user_request_"


@dataclass(frozen=True)
class RestApi:
    logical_id: str
    id: str
    name: str
    root_id: str


@dataclass(frozen=True)
class ApiResource:
    logical_id: str
    id: str
    api_id: str
    parent_id: str
    path_part: str


@dataclass(frozen=True)
class IntegrationResponse:
    status_code: str
    selection_pattern: str | None
    templates: dict[str, str]
    parameters: dict[str, str]


@dataclass(frozen=True)
class Integration:
    type: str
    uri: str
    request_templates: dict[str, str]
    passthrough: str
    responses: tuple[IntegrationResponse, ...]


@dataclass(frozen=True)
class Method:
    logical_id: str
    api_id: str
    resource_id: str
    http_method: str
    api_key_required: bool
    required_parameters: tuple[str, ...]
    """``method.request.header.X`` (and querystring, path) marked required, checked when a validator says so."""
    validator_id: str | None
    models: dict[str, str]
    """``RequestModels``: a model name per content type, checked when a validator says so."""
    integration: Integration


@dataclass(frozen=True)
class Validator:
    logical_id: str
    id: str
    api_id: str
    parameters: bool
    body: bool


@dataclass(frozen=True)
class Model:
    logical_id: str
    name: str
    api_id: str
    schema: dict[str, Any]


@dataclass(frozen=True)
class Stage:
    logical_id: str
    api_id: str
    name: str
    variables: dict[str, str]


@dataclass(frozen=True)
class ApiKey:
    logical_id: str
    id: str
    value: str
    enabled: bool


@dataclass(frozen=True)
class GatewayResponse:
    api_id: str
    type: str
    status_code: str | None
    templates: dict[str, str]
    parameters: dict[str, str]


# -- reading the template ------------------------------------------------------------------------------
def _strings(value: Any, where: str) -> dict[str, str]:
    return {str(k): cfn_string(v, f"{where}.{k}") for k, v in mapping(value, where).items()}


def read_api(r: Resolver, lid: str, props: dict[str, Any], where: str) -> RestApi:
    name = r.name(lid)
    return RestApi(
        lid, physical_id(name), cfn_string(r.setting(props, "Name", where, name), f"{where}.Name"), _root(name)
    )


def _root(name: str) -> str:
    return physical_id(f"{name}/")


def read_resource(r: Resolver, lid: str, props: dict[str, Any], where: str) -> ApiResource:
    return ApiResource(
        lid,
        physical_id(r.name(lid)),
        cfn_string(r.setting(props, "RestApiId", where), f"{where}.RestApiId"),
        cfn_string(r.setting(props, "ParentId", where), f"{where}.ParentId"),
        cfn_string(r.setting(props, "PathPart", where), f"{where}.PathPart"),
    )


def read_method(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Method:
    given = mapping(r.setting(props, "Integration", where), f"{where}.Integration")
    iw = f"{where}.Integration"
    responses = []
    for i, item in enumerate(given.get("IntegrationResponses") or []):
        rw = f"{iw}.IntegrationResponses[{i}]"
        item = mapping(item, rw)
        pattern = item.get("SelectionPattern")
        responses.append(
            IntegrationResponse(
                cfn_string(item.get("StatusCode"), f"{rw}.StatusCode"),
                None if pattern in (None, "") else cfn_string(pattern, f"{rw}.SelectionPattern"),
                _strings(item.get("ResponseTemplates") or {}, f"{rw}.ResponseTemplates"),
                _strings(item.get("ResponseParameters") or {}, f"{rw}.ResponseParameters"),
            )
        )
    kind = cfn_string(given.get("Type", ""), f"{iw}.Type")
    if kind not in ("AWS", "MOCK"):
        raise TemplateError(f"{iw}.Type: {kind} integrations are not served locally (AWS and MOCK are)")
    integration = Integration(
        kind,
        cfn_string(given.get("Uri", ""), f"{iw}.Uri"),
        _strings(given.get("RequestTemplates") or {}, f"{iw}.RequestTemplates"),
        cfn_string(given.get("PassthroughBehavior", "WHEN_NO_MATCH"), f"{iw}.PassthroughBehavior"),
        tuple(responses),
    )
    parameters = mapping(r.setting(props, "RequestParameters", where, {}), f"{where}.RequestParameters")
    required = tuple(k for k, v in parameters.items() if boolean(v, f"{where}.RequestParameters.{k}"))
    validator = r.setting(props, "RequestValidatorId", where, None)
    return Method(
        lid,
        cfn_string(r.setting(props, "RestApiId", where), f"{where}.RestApiId"),
        cfn_string(r.setting(props, "ResourceId", where), f"{where}.ResourceId"),
        cfn_string(r.setting(props, "HttpMethod", where), f"{where}.HttpMethod").upper(),
        boolean(r.setting(props, "ApiKeyRequired", where, False), f"{where}.ApiKeyRequired"),
        required,
        None if validator is None else cfn_string(validator, f"{where}.RequestValidatorId"),
        _strings(r.setting(props, "RequestModels", where, {}), f"{where}.RequestModels"),
        integration,
    )


def read_validator(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Validator:
    return Validator(
        lid,
        physical_id(r.name(lid)),
        cfn_string(r.setting(props, "RestApiId", where), f"{where}.RestApiId"),
        boolean(r.setting(props, "ValidateRequestParameters", where, False), f"{where}.ValidateRequestParameters"),
        boolean(r.setting(props, "ValidateRequestBody", where, False), f"{where}.ValidateRequestBody"),
    )


def read_model(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Model:
    schema = r.setting(props, "Schema", where, {})
    if isinstance(schema, str):
        schema = json.loads(schema)
    return Model(
        lid,
        r.name(lid),
        cfn_string(r.setting(props, "RestApiId", where), f"{where}.RestApiId"),
        mapping(schema, f"{where}.Schema"),
    )


def read_stage(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Stage:
    return Stage(
        lid,
        cfn_string(r.setting(props, "RestApiId", where), f"{where}.RestApiId"),
        cfn_string(r.setting(props, "StageName", where), f"{where}.StageName"),
        _strings(r.setting(props, "Variables", where, {}), f"{where}.Variables"),
    )


@dataclass(frozen=True)
class Deployment:
    logical_id: str
    api_id: str


def read_deployment(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Stage | Deployment:
    # A deployment with a StageName creates that stage (AWS::ApiGateway::Deployment, StageName); without
    # one, a Stage resource names the deployment. Locally a stage always serves the API as the template is.
    api = cfn_string(r.setting(props, "RestApiId", where), f"{where}.RestApiId")
    name = r.setting(props, "StageName", where, None)
    if name is None:
        return Deployment(lid, api)
    return Stage(lid, api, cfn_string(name, f"{where}.StageName"), {})


def read_api_key(r: Resolver, lid: str, props: dict[str, Any], where: str) -> ApiKey:
    key_id = physical_id(r.name(lid))
    value = r.setting(props, "Value", where, None)
    return ApiKey(
        lid,
        key_id,
        # Without a Value, API Gateway generates one; locally it is derived from the key's name.
        cfn_string(value, f"{where}.Value") if value is not None else physical_id(f"{r.name(lid)}#value") * 3,
        boolean(r.setting(props, "Enabled", where, False), f"{where}.Enabled"),
    )


def read_gateway_response(r: Resolver, lid: str, props: dict[str, Any], where: str) -> GatewayResponse:
    status = r.setting(props, "StatusCode", where, None)
    return GatewayResponse(
        cfn_string(r.setting(props, "RestApiId", where), f"{where}.RestApiId"),
        cfn_string(r.setting(props, "ResponseType", where), f"{where}.ResponseType"),
        None if status is None else cfn_string(status, f"{where}.StatusCode"),
        _strings(r.setting(props, "ResponseTemplates", where, {}), f"{where}.ResponseTemplates"),
        _strings(r.setting(props, "ResponseParameters", where, {}), f"{where}.ResponseParameters"),
    )


# "Gateway response types for API Gateway": the default status of each type this service answers with.
DEFAULT_STATUS = {
    "INVALID_API_KEY": 403,
    "MISSING_AUTHENTICATION_TOKEN": 403,
    "BAD_REQUEST_PARAMETERS": 400,
    "BAD_REQUEST_BODY": 400,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "INTEGRATION_FAILURE": 504,
    "API_CONFIGURATION_ERROR": 500,
    "REQUEST_TOO_LARGE": 413,
}
# The default message of each (the body API Gateway sends without a customized gateway response).
DEFAULT_MESSAGE = {
    "INVALID_API_KEY": "Forbidden",
    "MISSING_AUTHENTICATION_TOKEN": "Missing Authentication Token",
    "UNSUPPORTED_MEDIA_TYPE": "Unsupported Media Type",
    "INTEGRATION_FAILURE": "Internal server error",
    "API_CONFIGURATION_ERROR": "Internal server error",
    "REQUEST_TOO_LARGE": "Request Too Long",
}
# API Gateway's payload quota for REST APIs: 10 MB ("Amazon API Gateway quotas", REST APIs).
MAX_PAYLOAD = 10 * 1024 * 1024
# The botocore service of each service prefix an AWS integration's Uri names.
_SERVICES = {"states": "stepfunctions", "dynamodb": "dynamodb"}
_URI = re.compile(r"arn:aws:apigateway:(?P<region>[a-z0-9-]+):(?P<service>[a-z0-9-]+):action/(?P<action>\w+)")


@dataclass
class Reply:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    """Header names as the client sent them."""
    query: dict[str, list[str]]
    body: bytes
    source_ip: str

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


class ApiGateway(Service):
    name = "apigateway"
    moto_backends = ("apigateway",)
    resource_types = (
        # "Return values" of each type: Ref is the generated id (a stage's is its name).
        ResourceType("AWS::ApiGateway::RestApi", read_api, ref="id", attributes={"RootResourceId": _root}),
        ResourceType("AWS::ApiGateway::Resource", read_resource, ref="id"),
        ResourceType("AWS::ApiGateway::Method", read_method, ref="id"),
        ResourceType("AWS::ApiGateway::RequestValidator", read_validator, ref="id"),
        ResourceType("AWS::ApiGateway::Model", read_model, name_property="Name"),
        ResourceType("AWS::ApiGateway::Stage", read_stage, name_property="StageName"),
        ResourceType("AWS::ApiGateway::Deployment", read_deployment, ref="id"),
        ResourceType("AWS::ApiGateway::ApiKey", read_api_key, ref="id"),
        ResourceType("AWS::ApiGateway::GatewayResponse", read_gateway_response, ref="id"),
        ResourceType(
            "AWS::ApiGateway::UsagePlan",
            ref="id",
            why_not_served="throttling and quotas are not applied locally; its API keys are",
        ),
        ResourceType("AWS::ApiGateway::UsagePlanKey", ref="id", why_not_served="every enabled API key is accepted"),
    )

    def open(self) -> None:
        self.apis: dict[str, RestApi] = {}
        self.resources: dict[str, ApiResource] = {}
        self.methods: list[Method] = []
        self.validators: dict[str, Validator] = {}
        self.models: dict[tuple[str, str], Model] = {}
        self.stages: dict[tuple[str, str], Stage] = {}
        self.keys: list[ApiKey] = []
        self.gateway_responses: dict[tuple[str, str], GatewayResponse] = {}
        self._lock = threading.Lock()
        self.requests = 0
        """Requests to the APIs' stages (what API Gateway bills)."""
        self.integration_calls: dict[str, int] = {}
        """Backend calls by action (``states:StartSyncExecution``: the executions the door started)."""

    def deploy(self, stack: Stack) -> None:
        for _, s in stack.stacks():
            for model in (r.model for r in s.resources.values() if r.model is not None):
                if isinstance(model, RestApi):
                    self.apis[model.id] = model
                elif isinstance(model, ApiResource):
                    self.resources[model.id] = model
                elif isinstance(model, Method):
                    self.methods.append(model)
                elif isinstance(model, Validator):
                    self.validators[model.id] = model
                elif isinstance(model, Model):
                    self.models[(model.api_id, model.name)] = model
                elif isinstance(model, Stage):
                    self.stages[(model.api_id, model.name)] = model
                elif isinstance(model, ApiKey):
                    self.keys.append(model)
                elif isinstance(model, GatewayResponse):
                    self.gateway_responses[(model.api_id, model.type)] = model

    # -- what serve prints ----------------------------------------------------------------------------
    def endpoints(self) -> list[tuple[str, str]]:
        return self.urls()

    def urls(self) -> list[tuple[str, str]]:
        """``(method, url)`` of every method of every stage, for the serve banner."""
        found = []
        for (api_id, stage), _ in sorted(self.stages.items()):
            for method in self.methods:
                if method.api_id == api_id:
                    path = self.path_of(method.resource_id)
                    found.append((method.http_method, f"{self.stage_url(api_id, stage)}{path}"))
        return found

    def stage_url(self, api_id: str, stage: str) -> str:
        return f"{self.context.endpoint_url}{PREFIX}{api_id}/{stage}/{USER_REQUEST}"

    def path_of(self, resource_id: str) -> str:
        parts = []
        while resource_id in self.resources:
            resource = self.resources[resource_id]
            parts.append(resource.path_part)
            resource_id = resource.parent_id
        return "/" + "/".join(reversed(parts))

    # -- serving ---------------------------------------------------------------------------------------
    def wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes] | None:
        path = str(environ.get("PATH_INFO", ""))
        if not path.startswith(PREFIX) or f"/{USER_REQUEST}" not in path:
            return None
        length = int(environ.get("CONTENT_LENGTH") or 0)
        # RFC 9110, 5.5: leading and trailing whitespace (SP, HTAB) is not part of a field value (the WSGI
        # server strips the leading whitespace only).
        headers = {
            k[5:].replace("_", "-").title(): str(v).strip(" \t") for k, v in environ.items() if k.startswith("HTTP_")
        }
        if environ.get("CONTENT_TYPE"):
            headers["Content-Type"] = str(environ["CONTENT_TYPE"])
        request = Request(
            str(environ.get("REQUEST_METHOD", "GET")).upper(),
            path,
            headers,
            parse_qs(str(environ.get("QUERY_STRING", "")), keep_blank_values=True),
            environ["wsgi.input"].read(length) if length else b"",
            str(environ.get("REMOTE_ADDR", "127.0.0.1")),
        )
        reply = self.handle(request)
        reply.headers.setdefault("Content-Type", "application/json")
        reply.headers["Content-Length"] = str(len(reply.body))
        start_response(f"{reply.status} {HTTPStatus(reply.status).phrase}", list(reply.headers.items()))
        return [reply.body]

    def handle(self, request: Request) -> Reply:
        with self._lock:
            self.requests += 1
        head, _, rest = request.path[len(PREFIX) :].partition(f"/{USER_REQUEST}")
        api_id, _, stage_name = head.partition("/")
        stage = self.stages.get((api_id, stage_name))
        request_id = str(uuid.uuid4())
        if stage is None or api_id not in self.apis:
            return self._gateway(api_id, "MISSING_AUTHENTICATION_TOKEN", request_id)
        found = self._route(api_id, request.method, rest or "/")
        if found is None:
            return self._gateway(api_id, "MISSING_AUTHENTICATION_TOKEN", request_id)
        method, path_params = found
        context = self._context(request, stage, method, request_id)
        if len(request.body) > MAX_PAYLOAD:
            return self._gateway(api_id, "REQUEST_TOO_LARGE", request_id, context)
        # "Choose an API key source", "Require an API key on a method": a missing or unknown key is 403.
        if method.api_key_required:
            key = self._api_key(request.header("x-api-key"))
            if key is None:
                return self._gateway(api_id, "INVALID_API_KEY", request_id, context)
            context["identity"] = {**context["identity"], "apiKey": key.value, "apiKeyId": key.id}
        validator = self.validators.get(method.validator_id or "")
        if validator is not None:
            required = method.required_parameters if validator.parameters else ()
            missing = [p for p in required if not self._parameter(request, p, path_params)]
            if missing:
                names = ", ".join(p.rsplit(".", 1)[1] for p in missing)
                message = f"Missing required request parameters: [{names}]"
                return self._gateway(api_id, "BAD_REQUEST_PARAMETERS", request_id, context, message)
            if validator.body and not self._valid_body(request, method):
                return self._gateway(api_id, "BAD_REQUEST_BODY", request_id, context, "Invalid request body")
        try:
            return self._integrate(request, stage, method, path_params, context)
        except Exception:  # the emulated integration broke: API Gateway's answer to a failed integration
            logging.getLogger(__name__).exception("integration of %s %s failed", request.method, request.path)
            return self._gateway(api_id, "INTEGRATION_FAILURE", request_id, context)

    def _valid_body(self, request: Request, method: Method) -> bool:
        """The body against the method's model for its content type (JSON Schema draft 4, "Request validation
        for REST APIs in API Gateway"); a body that is not JSON fails any model."""
        content_type = (request.header("Content-Type") or "application/json").split(";")[0].strip().lower()
        model_name = method.models.get(content_type)
        model = self.models.get((method.api_id, model_name or ""))
        if model is None:
            return True
        import jsonschema

        try:
            document = json.loads(request.body or b"{}")
        except ValueError:
            return False
        return bool(jsonschema.Draft4Validator(model.schema).is_valid(document))

    def _api_key(self, value: str | None) -> ApiKey | None:
        """The enabled API key whose value the request sent: one of the template's, or one created through
        API Gateway's API against the engine's endpoint (``aws apigateway create-api-key``)."""
        if not value:
            return None
        from moto.apigateway.models import apigateway_backends
        from moto.core.models import DEFAULT_ACCOUNT_ID

        created = apigateway_backends[DEFAULT_ACCOUNT_ID][self.context.region].keys.values()
        keys = [*self.keys, *(ApiKey(str(k.name), k.id, k.value, bool(k.enabled)) for k in created)]
        return next((k for k in keys if k.enabled and k.value == value), None)

    def _route(self, api_id: str, http_method: str, path: str) -> tuple[Method, dict[str, str]] | None:
        wanted = [p for p in path.strip("/").split("/") if p]
        for method in self.methods:
            if method.api_id != api_id or method.http_method not in (http_method, "ANY"):
                continue
            parts = [p for p in self.path_of(method.resource_id).strip("/").split("/") if p]
            if len(parts) != len(wanted):
                continue
            params: dict[str, str] = {}
            for part, value in zip(parts, wanted, strict=True):
                if part.startswith("{") and part.endswith("}"):
                    params[part[1:-1]] = value
                elif part != value:
                    break
            else:
                return method, params
        return None

    @staticmethod
    def _parameter(request: Request, name: str, path_params: dict[str, str]) -> str | None:
        # method.request.{header|querystring|path}.<name>
        _, _, rest = name.partition("method.request.")
        where, _, key = rest.partition(".")
        if where == "header":
            return request.header(key) or None
        if where == "querystring":
            return (request.query.get(key) or [""])[0] or None
        return path_params.get(key) or None

    def _context(self, request: Request, stage: Stage, method: Method, request_id: str) -> dict[str, Any]:
        """What ``$context`` holds for this request (the mapping template reference's ``$context``)."""
        return {
            "request_id": request_id,
            "stage": stage.name,
            "http_method": request.method,
            "resource_path": self.path_of(method.resource_id),
            "path": f"/{stage.name}{request.path.partition(USER_REQUEST)[2] or '/'}",
            "api_id": stage.api_id,
            "account_id": self.context.stack.account_id if self.context.stack else "",
            "identity": {"sourceIp": request.source_ip, "userAgent": request.header("User-Agent") or ""},
            "authorizer": {},
            "stage_variables": dict(stage.variables),
        }

    def _gateway(
        self, api_id: str, kind: str, request_id: str, context: dict[str, Any] | None = None, message: str | None = None
    ) -> Reply:
        """An answer API Gateway gives itself: the API's GatewayResponse of that type (or of DEFAULT_4XX /
        DEFAULT_5XX), else API Gateway's default ``{"message": ...}`` ("Gateway response types for API
        Gateway"). A gateway response's template is not VTL: API Gateway substitutes ``$context`` variables
        (and ``$context.error.message``, ``$context.error.messageString``) into it ("Set up gateway responses
        to customize error responses")."""
        status = DEFAULT_STATUS[kind]
        text = message or DEFAULT_MESSAGE.get(kind, HTTPStatus(status).phrase)
        family = "DEFAULT_4XX" if status < 500 else "DEFAULT_5XX"
        custom = self.gateway_responses.get((api_id, kind)) or self.gateway_responses.get((api_id, family))
        headers = {"x-amzn-RequestId": request_id, "x-amzn-ErrorType": _error_type(kind)}
        if custom is None:
            return Reply(status, headers, json.dumps({"message": text}).encode())
        if custom.status_code is not None:
            status = int(custom.status_code)
        values = {
            "$context.requestId": request_id,
            "$context.error.messageString": json.dumps(text),
            "$context.error.message": text,
            "$context.error.responseType": kind,
        }
        content_type, template = next(iter(custom.templates.items()), ("application/json", ""))
        body = re.sub(
            r"\$context\.(?:requestId|error\.messageString|error\.message|error\.responseType)",
            lambda m: values[m.group(0)],
            template,
        )
        headers["Content-Type"] = content_type
        for target, source in custom.parameters.items():
            headers[target.removeprefix("gatewayresponse.header.")] = source.strip("'")
        return Reply(status, headers, body.encode())

    # -- the integration ---------------------------------------------------------------------------------
    def _integrate(
        self, request: Request, stage: Stage, method: Method, path_params: dict[str, str], context: dict[str, Any]
    ) -> Reply:
        from idemflow.engine import apigateway_vtl as vtl

        integration = method.integration
        request_id = str(context["request_id"])
        content_type = (request.header("Content-Type") or "application/json").split(";")[0].strip().lower()
        template = integration.request_templates.get(content_type)
        if template is None:
            # PassthroughBehavior ("Integration passthrough behaviors"): NEVER refuses an unmapped content type
            # with 415; WHEN_NO_TEMPLATES only when the method has templates for other types.
            refuse = integration.passthrough == "NEVER" or (
                integration.passthrough == "WHEN_NO_TEMPLATES" and bool(integration.request_templates)
            )
            if refuse:
                return self._gateway(method.api_id, "UNSUPPORTED_MEDIA_TYPE", request_id, context)
        method_request = vtl.MethodRequest(
            body=request.body.decode("utf-8", errors="replace"),
            headers=request.headers,
            path=path_params,
            querystring={k: v[0] for k, v in request.query.items()},
        )
        ctx = vtl.RequestContext(**context)
        try:
            rendered = None if template is None else vtl.render_request(template, method_request, ctx)
            backend_body = request.body if rendered is None else rendered.body.encode()
            status, headers, body = self._call(integration, backend_body)
            chosen = self._select(integration.responses, status)
            if chosen is None:
                return self._gateway(method.api_id, "API_CONFIGURATION_ERROR", request_id, context)
            out_type, response_template = next(iter(chosen.templates.items()), ("application/json", None))
            if response_template is None:
                reply_body, final = body, rendered
            else:
                final = vtl.render_response(response_template, body.decode(), method_request, ctx, after=rendered)
                reply_body = final.body.encode()
            reply = Reply(
                int(chosen.status_code), {"Content-Type": out_type, "x-amzn-RequestId": request_id}, reply_body
            )
            for target, source in chosen.parameters.items():
                name = target.removeprefix("method.response.header.")
                if source.startswith("'"):
                    reply.headers[name] = source.strip("'")
                elif source.startswith("integration.response.header."):
                    value = headers.get(source.removeprefix("integration.response.header.").lower())
                    if value is not None:
                        reply.headers[name] = value
            if final is not None:  # $context.responseOverride: applied last ("Override ... response parameters")
                if final.status is not None:
                    reply.status = final.status
                reply.headers.update(final.headers)
            return reply
        except vtl.MappingTemplateError:
            return self._gateway(method.api_id, "API_CONFIGURATION_ERROR", request_id, context)

    @staticmethod
    def _select(responses: tuple[IntegrationResponse, ...], status: int) -> IntegrationResponse | None:
        # For AWS and HTTP back ends the HTTP status code is matched against SelectionPattern (API reference,
        # IntegrationResponse, selectionPattern); the response without one is the default.
        for response in responses:
            if response.selection_pattern is not None and re.fullmatch(response.selection_pattern, str(status)):
                return response
        return next((r for r in responses if r.selection_pattern is None), None)

    def _call(self, integration: Integration, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """The integration's backend answer: (status, lower-case headers, body)."""
        if integration.type == "MOCK":
            # A MOCK integration answers with the status code its request template selects ({"statusCode": N}).
            try:
                status = int(json.loads(body or b"{}").get("statusCode", 200))
            except (ValueError, AttributeError):
                status = 500
            return status, {}, b""
        match = _URI.fullmatch(integration.uri)
        if match is not None:
            with self._lock:
                action = f"{match['service']}:{match['action']}"
                self.integration_calls[action] = self.integration_calls.get(action, 0) + 1
        if match is None or match["service"] not in _SERVICES:
            raise TemplateError(
                f"Integration.Uri {integration.uri}: only action URIs of {', '.join(_SERVICES)} are served locally"
            )
        from botocore.awsrequest import AWSPreparedRequest

        from idemflow.engine import hooks

        model = self._model(_SERVICES[match["service"]])
        target = f"{model.metadata['targetPrefix']}.{match['action']}"
        headers = {
            "X-Amz-Target": target,
            "Content-Type": f"application/x-amz-json-{model.metadata.get('jsonVersion', '1.0')}",
        }
        region = self.context.region
        url = f"https://{model.metadata['endpointPrefix']}.{region}.amazonaws.com/"
        response = hooks.dispatch_in_process(AWSPreparedRequest("POST", url, headers, body, False))
        assert response is not None
        return response.status_code, {k.lower(): v for k, v in response.headers.items()}, response.content

    _models: dict[str, Any] = {}

    def _model(self, service: str) -> Any:
        with self._lock:
            if service not in self._models:
                import botocore.session

                self._models[service] = botocore.session.get_session().get_service_model(service)
            return self._models[service]


def _error_type(kind: str) -> str:
    return {
        "INVALID_API_KEY": "ForbiddenException",
        "MISSING_AUTHENTICATION_TOKEN": "MissingAuthenticationTokenException",
        "BAD_REQUEST_PARAMETERS": "BadRequestException",
        "BAD_REQUEST_BODY": "BadRequestException",
        "UNSUPPORTED_MEDIA_TYPE": "UnsupportedMediaTypeException",
        "REQUEST_TOO_LARGE": "RequestTooLargeException",
    }.get(kind, "InternalServerErrorException")
