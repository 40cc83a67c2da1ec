"""What the SAM transform adds to CloudFormation that the resolver needs: the resources SAM makes of an event
source, and this workflow as published in the Serverless Application Repository."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Final

from idemflow.template.errors import TemplateError
from idemflow.template.loader import load_template
from idemflow.template.values import mapping
from idemflow.workflow import packaged_template

SAR_APPLICATION = "AWS::ServerlessRepo::Application"
"""The template's ``Metadata`` key that ``sam publish`` reads (AWS SAM Developer Guide, "AWS SAM template
Metadata section properties")."""

_APPLICATION_ID = re.compile(r"arn:aws[a-z-]*:serverlessrepo:[a-z0-9-]+:[0-9]{12}:applications/(?P<name>[A-Za-z0-9-]+)")
"""An application's ARN in the Serverless Application Repository (its API's ``applicationId``)."""


def published_as() -> tuple[str, str]:
    """The ``Name`` and ``SemanticVersion`` the installed package's workflow is published with."""
    metadata = (load_template(packaged_template()).get("Metadata") or {}).get(SAR_APPLICATION) or {}
    return str(metadata.get("Name", "")), str(metadata.get("SemanticVersion", ""))


def published_workflow(application_id: str, version: str, where: str) -> Path:
    """The template to nest for this workflow published in the Serverless Application Repository: the
    installed package's copy, when it is that application (by the name in its ARN: the account and region
    are the publisher's) at that version. Another application, or another version, cannot be fetched
    locally: the message says which one is installed."""
    name, installed = published_as()
    match = _APPLICATION_ID.fullmatch(application_id)
    if match is None:
        raise TemplateError(
            f"{where}.ApplicationId: {application_id!r} is not an application's ARN "
            "(arn:aws:serverlessrepo:<region>:<account>:applications/<name>)"
        )
    if match["name"] != name:
        raise TemplateError(
            f"{where}: application {match['name']!r} is not this workflow ({name!r}): the engine nests only the "
            "workflow the installed idemflow ships; nest any other by a local path"
        )
    if version != installed:
        raise TemplateError(
            f"{where}.SemanticVersion: {version!r}, while the installed idemflow ships {name} {installed!r}: "
            f"install the idemflow of that version, or nest {installed!r}"
        )
    return packaged_template().resolve()


# The resources the SAM transform makes of an event source, per event Type, as the AWS SAM Developer Guide
# lists them ("Generated CloudFormation resources for AWS SAM": .../sam-specification-generated-resources-
# function.html and ...-statemachine.html); a unit test checks them against aws-sam-translator. An implicit
# API (``ServerlessRestApi``, ``ServerlessHttpApi``) is made once per stack and shared by the events that use
# it; here each event lists what it brings.
_FUNCTION_EVENTS: Final[dict[str, tuple[str, ...]]] = {
    "S3": ("AWS::Lambda::Permission",),
    "SNS": ("AWS::SNS::Subscription", "AWS::Lambda::Permission"),
    "Kinesis": ("AWS::Lambda::EventSourceMapping",),
    "DynamoDB": ("AWS::Lambda::EventSourceMapping",),
    "SQS": ("AWS::Lambda::EventSourceMapping",),
    "MQ": ("AWS::Lambda::EventSourceMapping",),
    "MSK": ("AWS::Lambda::EventSourceMapping",),
    "SelfManagedKafka": ("AWS::Lambda::EventSourceMapping",),
    "DocumentDB": ("AWS::Lambda::EventSourceMapping",),
    "Api": (
        "AWS::ApiGateway::RestApi",
        "AWS::ApiGateway::Deployment",
        "AWS::ApiGateway::Stage",
        "AWS::Lambda::Permission",
    ),
    "HttpApi": ("AWS::ApiGatewayV2::Api", "AWS::ApiGatewayV2::Stage", "AWS::Lambda::Permission"),
    "Schedule": ("AWS::Events::Rule", "AWS::Lambda::Permission"),
    "ScheduleV2": ("AWS::Scheduler::Schedule", "AWS::IAM::Role"),
    "CloudWatchEvent": ("AWS::Events::Rule", "AWS::Lambda::Permission"),
    "EventBridgeRule": ("AWS::Events::Rule", "AWS::Lambda::Permission"),
    "CloudWatchLogs": ("AWS::Logs::SubscriptionFilter", "AWS::Lambda::Permission"),
    "IoTRule": ("AWS::IoT::TopicRule", "AWS::Lambda::Permission"),
    "AlexaSkill": ("AWS::Lambda::Permission",),
    "Cognito": ("AWS::Lambda::Permission",),
}
_STATE_MACHINE_EVENTS: Final[dict[str, tuple[str, ...]]] = {
    "Api": ("AWS::ApiGateway::RestApi", "AWS::ApiGateway::Deployment", "AWS::ApiGateway::Stage", "AWS::IAM::Role"),
    "Schedule": ("AWS::Events::Rule", "AWS::IAM::Role"),
    "ScheduleV2": ("AWS::Scheduler::Schedule", "AWS::IAM::Role"),
    "CloudWatchEvent": ("AWS::Events::Rule", "AWS::IAM::Role"),
    "EventBridgeRule": ("AWS::Events::Rule", "AWS::IAM::Role"),
}
SAM_EVENT_RESOURCES: Final[dict[str, dict[str, tuple[str, ...]]]] = {
    "AWS::Serverless::Function": _FUNCTION_EVENTS,
    "AWS::Serverless::StateMachine": _STATE_MACHINE_EVENTS,
}


def sam_event_resources(kind: str, events: Any, where: str) -> list[tuple[str, tuple[str, ...]]]:
    """The event sources of a SAM function or state machine, each with the resource types SAM makes of it."""
    if not events:
        return []
    table = SAM_EVENT_RESOURCES.get(kind)
    if table is None:
        raise TemplateError(f"{where}.Events: a {kind} has no Events (only SAM functions and state machines do)")
    made = []
    for name, event in mapping(events, f"{where}.Events").items():
        event_type = mapping(event, f"{where}.Events.{name}").get("Type")
        if event_type not in table:
            raise TemplateError(
                f"{where}.Events.{name}.Type: {event_type!r} is not an event source of a {kind} "
                f"(one of {', '.join(table)})"
            )
        made.append((str(name), table[event_type]))
    return made


# The CloudFormation resources the SAM transform makes of a SAM resource, as ListStackResources lists them (AWS
# SAM Developer Guide, "Generated CloudFormation resources": one page per resource type and per event source); a
# unit test compares them with aws-sam-translator's. ``<sha>`` is a hash of what was deployed, on AWS of the
# packaged artifact: here of the resource's properties, ten hexadecimal digits as SAM writes it.
_IMPLICIT_APIS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "Api": (
        ("ServerlessRestApi", "AWS::ApiGateway::RestApi"),
        ("ServerlessRestApiDeployment{sha}", "AWS::ApiGateway::Deployment"),
        ("ServerlessRestApiProdStage", "AWS::ApiGateway::Stage"),
    ),
    "HttpApi": (
        ("ServerlessHttpApi", "AWS::ApiGatewayV2::Api"),
        ("ServerlessHttpApiApiGatewayDefaultStage", "AWS::ApiGatewayV2::Stage"),
    ),
}
_EVENT_SUFFIX: Final[dict[str, str]] = {
    "AWS::Lambda::Permission": "Permission",
    "AWS::IAM::Role": "Role",
}


def _sha(props: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(props, sort_keys=True, default=str).encode()).hexdigest()[:10]


def generated_resources(logical_id: str, kind: str, props: dict[str, Any], where: str) -> list[tuple[str, str]]:
    """``(logical id, type)`` of the CloudFormation resources a template's resource becomes: SAM's own make
    several (a function, its role, its event sources' resources), any other resource is itself."""
    if kind == "AWS::Serverless::Function":
        made = [(logical_id, "AWS::Lambda::Function")]
        if "Role" not in props:
            made.append((f"{logical_id}Role", "AWS::IAM::Role"))
        alias = props.get("AutoPublishAlias")
        if alias:
            made += [
                (f"{logical_id}Version{_sha(props)}", "AWS::Lambda::Version"),
                (f"{logical_id}Alias{alias}", "AWS::Lambda::Alias"),
            ]
    elif kind == "AWS::Serverless::StateMachine":
        made = [(logical_id, "AWS::StepFunctions::StateMachine")]
        if "Role" not in props:
            made.append((f"{logical_id}Role", "AWS::IAM::Role"))
    elif kind == "AWS::Serverless::LayerVersion":
        return [(f"{logical_id}{_sha(props)}", "AWS::Lambda::LayerVersion")]
    elif kind == "AWS::Serverless::Application":
        return [(logical_id, "AWS::CloudFormation::Stack")]
    elif kind == "AWS::Serverless::SimpleTable":
        return [(logical_id, "AWS::DynamoDB::Table")]
    else:
        return [(logical_id, kind)]
    for name, event_kinds in sam_event_resources(kind, props.get("Events"), where):
        event_type = str(props["Events"][name]["Type"])
        implicit = {t: lid.format(sha=_sha(props)) for lid, t in _IMPLICIT_APIS.get(event_type, ())}
        for made_kind in event_kinds:
            if made_kind in implicit:
                made.append((implicit[made_kind], made_kind))
                continue
            suffix = _EVENT_SUFFIX.get(made_kind, "")
            if made_kind == "AWS::Lambda::Permission" and event_type == "Api":
                suffix += "Prod"
            # A function's Cognito triggers share one permission, named for the event type.
            source = "Cognito" if event_type == "Cognito" else name
            made.append((f"{logical_id}{source}{suffix}", made_kind))
    return made
