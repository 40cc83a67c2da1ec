"""API Gateway REST APIs: the template's APIs served on the engine's endpoint, with AWS service integrations.

A stage is served at ``<endpoint>/restapis/<api id>/<stage>/_user_request_/<path>`` (the path form
LocalStack uses too: moto's own ``/restapis/...`` routes are API Gateway's control plane, and these never
collide with them). What a request goes through is :mod:`.pipeline`'s; the resources are read by
:mod:`.models`, the mapping templates rendered by :mod:`.vtl`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

from idemflow.engine.services.apigateway.models import (
    read_api,
    read_api_key,
    read_deployment,
    read_gateway_response,
    read_method,
    read_model,
    read_resource,
    read_stage,
    read_validator,
    root_resource_id,
)
from idemflow.engine.services.apigateway.pipeline import PREFIX, USER_REQUEST, Gateway, Request
from idemflow.engine.services.base import Service
from idemflow.template import ResourceType, Stack


class ApiGateway(Service):
    name = "apigateway"
    moto_backends = ("apigateway",)
    resource_types = (
        # "Return values" of each type: Ref is the generated id (a stage's is its name).
        ResourceType("AWS::ApiGateway::RestApi", read_api, ref="id", attributes={"RootResourceId": root_resource_id}),
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
        self.gateway = Gateway(self.context)

    def deploy(self, stack: Stack) -> None:
        for _, s in stack.stacks():
            for resource in s.resources.values():
                if resource.model is not None:
                    self.gateway.add(resource.model)

    @property
    def requests(self) -> int:
        """Requests to the APIs' stages (what API Gateway bills)."""
        return self.gateway.requests

    @property
    def integration_calls(self) -> dict[str, int]:
        """Backend calls by action (``states:StartSyncExecution``: the executions the door started)."""
        return self.gateway.integration_calls

    # -- what serve prints ----------------------------------------------------------------------------
    def endpoints(self) -> list[tuple[str, str]]:
        return self.urls()

    def urls(self) -> list[tuple[str, str]]:
        """``(method, url)`` of every method of every stage, for the serve banner."""
        found = []
        for (api_id, stage), _ in sorted(self.gateway.stages.items()):
            for method in self.gateway.methods:
                if method.api_id == api_id:
                    path = self.gateway.path_of(method.resource_id)
                    found.append((method.http_method, f"{self.stage_url(api_id, stage)}{path}"))
        return found

    def authorizations(self) -> dict[tuple[str, str], str]:
        """The ``AuthorizationType`` of each ``(method, url)`` of :meth:`urls`: ``AWS_IAM`` or ``NONE``."""
        found = {}
        for (api_id, stage), _ in sorted(self.gateway.stages.items()):
            for method in self.gateway.methods:
                if method.api_id == api_id:
                    url = f"{self.stage_url(api_id, stage)}{self.gateway.path_of(method.resource_id)}"
                    found[(method.http_method, url)] = method.authorization_type
        return found

    def stage_url(self, api_id: str, stage: str) -> str:
        return f"{self.context.endpoint_url}{PREFIX}{api_id}/{stage}/{USER_REQUEST}"

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
        if environ.get("CONTENT_LENGTH"):  # a client may sign it (SigV4's SignedHeaders)
            headers["Content-Length"] = str(environ["CONTENT_LENGTH"])
        request = Request(
            str(environ.get("REQUEST_METHOD", "GET")).upper(),
            path,
            headers,
            parse_qs(str(environ.get("QUERY_STRING", "")), keep_blank_values=True),
            environ["wsgi.input"].read(length) if length else b"",
            str(environ.get("REMOTE_ADDR", "127.0.0.1")),
        )
        reply = self.gateway.handle(request)
        reply.headers.setdefault("Content-Type", "application/json")
        reply.headers["Content-Length"] = str(len(reply.body))
        start_response(f"{reply.status} {HTTPStatus(reply.status).phrase}", list(reply.headers.items()))
        return [reply.body]
