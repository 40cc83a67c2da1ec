"""How a request goes through a deployed REST API, in API Gateway's order (developer guide, "API Gateway
REST API request flow", and each step's page cited where it is applied):

0. the caller's SigV4 signature and identity policy, when the method's authorization is ``AWS_IAM``
   (:meth:`Gateway._authorize`);
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

import dataclasses
import json
import logging
import re
import threading
import uuid
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from idemflow.engine.services.apigateway import vtl
from idemflow.engine.services.apigateway.models import (
    ApiKey,
    ApiResource,
    GatewayResponse,
    Integration,
    IntegrationResponse,
    Method,
    Model,
    RestApi,
    Stage,
    Validator,
)
from idemflow.engine.services.base import ServiceContext
from idemflow.template import TemplateError

PREFIX = "/restapis/"
USER_REQUEST = "_user_request_"

# "Gateway response types for API Gateway": the default status of each type this service answers with.
DEFAULT_STATUS = {
    "ACCESS_DENIED": 403,
    "INVALID_SIGNATURE": 403,
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


class Gateway:
    """The template's REST APIs as deployed, and the pipeline a request to one of their stages goes through."""

    def __init__(self, context: ServiceContext) -> None:
        self.context = context
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

    def add(self, model: Any) -> None:
        """Deploy one resource the template declares (its model, as :mod:`.models` read it)."""
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

    def path_of(self, resource_id: str) -> str:
        parts = []
        while resource_id in self.resources:
            resource = self.resources[resource_id]
            parts.append(resource.path_part)
            resource_id = resource.parent_id
        return "/" + "/".join(reversed(parts))

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
        if method.authorization_type == "AWS_IAM":
            refused = self._authorize(request, stage, context)
            if refused is not None:
                kind, message, error_type = refused
                reply = self._gateway(api_id, kind, request_id, context, message)
                reply.headers["x-amzn-ErrorType"] = error_type
                return reply
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

    def _authorize(self, request: Request, stage: Stage, context: dict[str, Any]) -> tuple[str, str, str] | None:
        """Refuse a request to an ``AWS_IAM`` method as API Gateway does: (gateway response type, message,
        ``x-amzn-ErrorType``), or None once the caller is known and allowed; then ``$context.identity`` names it
        (``userArn``, ``accessKey``, ``accountId``: the mapping template reference).

        The caller's identity policy must allow ``execute-api:Invoke`` on the method's ARN,
        ``arn:aws:execute-api:<region>:<account>:<api-id>/<stage>/<METHOD>/<path>`` (API Gateway developer guide,
        "Control access for invoking an API", the ``execute-api`` resource ARN). A denial reads ``User: <user ARN>
        is not authorized to perform: execute-api:Invoke on resource: <ARN> because no identity-based policy allows
        the execute-api:Invoke action`` (the record in "How do I troubleshoot signature mismatch errors ...",
        repost.aws/knowledge-center/api-gateway-iam-sigv4-mismatch), with the account masked but for its last
        four digits, ``********2543``, as an AWS answer records it (ASFHyP3/hyp3 issue 2283)."""
        from idemflow.engine.services.apigateway import signing
        from idemflow.engine.services.iam.service import Iam

        signed = signing.read(request.header("Authorization"))
        if signed is None:
            return "MISSING_AUTHENTICATION_TOKEN", signing.MISSING, "MissingAuthenticationTokenException"
        iam = self.context.service(Iam)
        caller = iam.caller(signed.access_key)
        if caller is None:
            return "INVALID_SIGNATURE", signing.UNKNOWN_KEY, "AccessDeniedException"
        verified = signing.verify(
            signed,
            caller.secret_key,
            method=request.method,
            path=request.path,
            query=request.query,
            headers=request.headers,
            body=request.body,
            region=self.context.region,
        )
        if not verified:
            return "INVALID_SIGNATURE", signing.MISMATCH, "InvalidSignatureException"
        account = str(context["account_id"])
        path = str(context["path"]).partition("/")[2].partition("/")[2]
        api = f"{stage.api_id}/{stage.name}/{request.method}/{path}"
        resource = f"arn:aws:execute-api:{self.context.region}:{account}:{api}"
        decision = caller.decide("execute-api:Invoke", resource) if self.context.settings.iam else None
        if decision is not None and not decision.allowed:
            masked = resource.replace(f":{account}:", f":{'*' * 8}{account[-4:]}:", 1)
            message = dataclasses.replace(decision, resource=masked).message
            return "ACCESS_DENIED", message, "AccessDeniedException"
        context["identity"] = {
            **context["identity"],
            "userArn": caller.arn,
            "accessKey": caller.access_key,
            "accountId": caller.arn.split(":")[4],
        }
        return None

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

    def _integrate(
        self, request: Request, stage: Stage, method: Method, path_params: dict[str, str], context: dict[str, Any]
    ) -> Reply:
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

        from idemflow.engine.core.in_process_clients import dispatch_in_process

        refused = self._refused(integration, match["service"], match["action"], body)
        if refused is not None:
            return refused
        model = self._model(_SERVICES[match["service"]])
        target = f"{model.metadata['targetPrefix']}.{match['action']}"
        headers = {
            "X-Amz-Target": target,
            "Content-Type": f"application/x-amz-json-{model.metadata.get('jsonVersion', '1.0')}",
        }
        region = self.context.region
        url = f"https://{model.metadata['endpointPrefix']}.{region}.amazonaws.com/"
        response = dispatch_in_process(AWSPreparedRequest("POST", url, headers, body, False))
        assert response is not None
        return response.status_code, {k.lower(): v for k, v in response.headers.items()}, response.content

    def _refused(
        self, integration: Integration, service: str, action: str, body: bytes
    ) -> tuple[int, dict[str, str], bytes] | None:
        """The service's AccessDeniedException (HTTP 400, as the JSON services answer one) when the integration's
        credentials role may not make the call; None to call it."""
        from idemflow.engine.services.iam.endpoint import access_denied
        from idemflow.engine.services.iam.requests import action_name, resources
        from idemflow.engine.services.iam.service import Iam

        iam = self.context.service(Iam)
        if not integration.credentials or not iam.enforced:
            return None
        try:
            params = json.loads(body or b"{}")
        except ValueError:
            return None  # the service answers what it cannot read
        arns = resources(service, action, params if isinstance(params, dict) else {}, self.context.region, iam.account)
        for arn in arns or ():
            decision = iam.decide(integration.credentials, action_name(service, action), arn)
            if decision is not None and not decision.allowed:
                status, headers, answer = access_denied(service, decision.message)
                return status.value, {name.lower(): value for name, value in headers.items()}, answer
        return None

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
        "ACCESS_DENIED": "AccessDeniedException",
        "INVALID_SIGNATURE": "InvalidSignatureException",
        "MISSING_AUTHENTICATION_TOKEN": "MissingAuthenticationTokenException",
        "BAD_REQUEST_PARAMETERS": "BadRequestException",
        "BAD_REQUEST_BODY": "BadRequestException",
        "UNSUPPORTED_MEDIA_TYPE": "UnsupportedMediaTypeException",
        "REQUEST_TOO_LARGE": "RequestTooLargeException",
    }.get(kind, "InternalServerErrorException")
