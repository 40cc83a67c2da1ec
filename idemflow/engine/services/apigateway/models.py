"""The REST API resources a template declares, as API Gateway's CloudFormation types describe them, and how each
is read from the template."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from idemflow.template import Resolver, TemplateError, boolean, cfn_string, mapping, physical_id


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
    credentials: str = ""
    """The role API Gateway assumes to call the AWS service (``Credentials``)."""


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
    authorization_type: str = "NONE"
    """``AuthorizationType``: ``AWS_IAM`` makes the method take SigV4-signed requests of allowed callers only."""


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
        lid,
        physical_id(name),
        cfn_string(r.setting(props, "Name", where, name), f"{where}.Name"),
        root_resource_id(name),
    )


def root_resource_id(name: str) -> str:
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
        cfn_string(given.get("Credentials", ""), f"{iw}.Credentials"),
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
        _authorization(r, props, where),
    )


def _authorization(r: Resolver, props: dict[str, Any], where: str) -> str:
    kind = cfn_string(r.setting(props, "AuthorizationType", where, "NONE"), f"{where}.AuthorizationType")
    if kind not in ("NONE", "AWS_IAM"):
        raise TemplateError(f"{where}.AuthorizationType: {kind} is not served locally (NONE and AWS_IAM are)")
    return kind


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
