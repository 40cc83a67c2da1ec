"""SAM ``Events`` are read as the resources the SAM transform makes of them, and listed as not served.

The expected types are not copied here: each event source of ``idemflow.template.SAM_EVENT_RESOURCES`` (from
the AWS SAM Developer Guide, "Generated CloudFormation resources for AWS SAM",
https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-specification-generated-resources.html)
is run through the real SAM transform (aws-sam-translator, a runtime dependency tested at its lower bound), and
what it generates must be what the table says.
"""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from idemflow.engine.stack import resolve_stack
from idemflow.template import SAM_EVENT_RESOURCES, TemplateError
from idemflow.template.sam import generated_resources

pytestmark = pytest.mark.unit

ARN = "arn:aws:{}:us-east-1:123456789012:{}"
AUTH = [{"Type": "BASIC_AUTH", "URI": ARN.format("secretsmanager", "secret:s")}]
# The smallest valid Properties of each event source (AWS SAM specification, EventSource types).
EVENT_PROPERTIES: dict[str, dict[str, Any]] = {
    "S3": {"Bucket": {"Ref": "Bucket"}, "Events": "s3:ObjectCreated:*"},
    "SNS": {"Topic": ARN.format("sns", "topic")},
    "Kinesis": {"Stream": ARN.format("kinesis", "stream/s"), "StartingPosition": "LATEST"},
    "DynamoDB": {"Stream": ARN.format("dynamodb", "table/t/stream/x"), "StartingPosition": "LATEST"},
    "SQS": {"Queue": ARN.format("sqs", "queue")},
    "MQ": {"Broker": ARN.format("mq", "broker:b:id"), "Queues": ["q"], "SourceAccessConfigurations": AUTH},
    "MSK": {"Stream": ARN.format("kafka", "cluster/c/id"), "Topics": ["t"], "StartingPosition": "LATEST"},
    "SelfManagedKafka": {"KafkaBootstrapServers": ["b:9092"], "Topics": ["t"], "SourceAccessConfigurations": AUTH},
    "DocumentDB": {
        "Cluster": ARN.format("rds", "cluster:c"),
        "DatabaseName": "d",
        "SourceAccessConfigurations": AUTH,
        "StartingPosition": "LATEST",
    },
    "Api": {"Path": "/requests", "Method": "post"},
    "HttpApi": {"Path": "/requests", "Method": "post"},
    "Schedule": {"Schedule": "rate(1 minute)"},
    "ScheduleV2": {"ScheduleExpression": "rate(1 minute)"},
    "CloudWatchEvent": {"Pattern": {"source": ["orders"]}},
    "EventBridgeRule": {"Pattern": {"source": ["orders"]}},
    "CloudWatchLogs": {"LogGroupName": "g", "FilterPattern": ""},
    "IoTRule": {"Sql": "SELECT * FROM 'orders'"},
    "AlexaSkill": {},
    "Cognito": {"UserPool": {"Ref": "Pool"}, "Trigger": "PreSignUp"},
}
OWNER_PROPERTIES: dict[str, dict[str, Any]] = {
    "AWS::Serverless::Function": {"CodeUri": "s3://bucket/key", "Handler": "app.handler", "Runtime": "python3.12"},
    "AWS::Serverless::StateMachine": {"DefinitionUri": "s3://bucket/key"},
}
OTHERS = {"Bucket": {"Type": "AWS::S3::Bucket"}, "Pool": {"Type": "AWS::Cognito::UserPool"}}


@functools.cache
def _session() -> Any:
    import boto3

    return boto3.session.Session(region_name="us-east-1")


def transformed(template: dict[str, Any]) -> dict[str, Any]:
    """The resources the SAM transform makes of ``template`` (a copy: the transform writes into the resources it is
    given, a Cognito pool's triggers). What ``samtranslator.translator.transform.transform`` does, with one boto3
    session for every call: without one, each translation makes sessions of its own to learn the region."""
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator
    from samtranslator.utils.py27hash_fix import to_py27_compatible_template, undo_mark_unicode_str_in_template

    template, parameters = copy.deepcopy(template), {}
    to_py27_compatible_template(template, parameters)
    translator = Translator(None, Parser(), boto_session=_session())
    made = translator.translate(template, parameter_values=parameters, get_managed_policy_map=dict)
    resources: dict[str, Any] = undo_mark_unicode_str_in_template(made)["Resources"]
    return resources


def sam_transform(kind: str, event_type: str) -> set[str]:
    """The resource types the SAM transform generates for one event of ``event_type`` on a ``kind``."""
    props = {
        **OWNER_PROPERTIES[kind],
        "Events": {"E": {"Type": event_type, "Properties": EVENT_PROPERTIES[event_type]}},
    }
    template = {
        "Transform": "AWS::Serverless-2016-10-31",
        "Resources": {**OTHERS, "Owner": {"Type": kind, "Properties": props}},
    }
    without_event = {**template, "Resources": {**OTHERS, "Owner": {"Type": kind, "Properties": OWNER_PROPERTIES[kind]}}}
    made = transformed(template)
    base = transformed(without_event)
    return {resource["Type"] for lid, resource in made.items() if lid not in base}


CASES = [(kind, event) for kind, table in SAM_EVENT_RESOURCES.items() for event in table]


@pytest.mark.parametrize(("kind", "event_type"), CASES, ids=[f"{k.rsplit('::', 1)[1]}-{e}" for k, e in CASES])
def test_each_event_source_makes_the_resources_the_sam_transform_makes(kind: str, event_type: str) -> None:
    assert set(SAM_EVENT_RESOURCES[kind][event_type]) == sam_transform(kind, event_type)


def write_template(tmp_path: Path, resources: dict[str, Any]) -> Path:
    (tmp_path / "fn").mkdir()
    (tmp_path / "fn" / "app.py").write_text("def handler(event, context):\n    return event\n")
    path = tmp_path / "template.yaml"
    path.write_text(yaml.safe_dump({"Transform": "AWS::Serverless-2016-10-31", "Resources": resources}))
    return path


FUNCTION = {"CodeUri": "fn", "Handler": "app.handler", "Runtime": "python3.12"}


def test_a_functions_events_are_listed_as_resources_not_served(tmp_path: Path) -> None:
    events = {"Queue": {"Type": "SQS", "Properties": EVENT_PROPERTIES["SQS"]}}
    stack = resolve_stack(
        write_template(
            tmp_path, {"Fn": {"Type": "AWS::Serverless::Function", "Properties": {**FUNCTION, "Events": events}}}
        )
    )

    assert list(stack.functions) == ["Fn"]  # the function itself is served
    unserved = [(r.logical_id, r.type, r.made_by) for _, r in stack.unserved()]
    assert unserved == [("Fn.Events.Queue", "AWS::Lambda::EventSourceMapping", "Fn.Events.Queue")]


def test_a_resource_of_a_type_no_service_runs_is_kept_and_listed(tmp_path: Path) -> None:
    stack = resolve_stack(
        write_template(
            tmp_path,
            {
                "Sender": {"Type": "AWS::SES::ConfigurationSet"},
                "Fn": {"Type": "AWS::Serverless::Function", "Properties": FUNCTION},
            },
        )
    )

    assert [(r.logical_id, r.type) for _, r in stack.unserved()] == [("Sender", "AWS::SES::ConfigurationSet")]
    assert stack.resources["Fn"].served


def test_an_event_type_sam_does_not_know_is_a_template_error(tmp_path: Path) -> None:
    events = {"Bad": {"Type": "Carrier", "Properties": {}}}
    path = write_template(
        tmp_path, {"Fn": {"Type": "AWS::Serverless::Function", "Properties": {**FUNCTION, "Events": events}}}
    )

    with pytest.raises(TemplateError, match=r"Resources.Fn.Events.Bad.Type: 'Carrier' is not an event source"):
        resolve_stack(path)


def _without_sha(resources: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Logical ids with SAM's ten-digit hash (of the deployed artifact on AWS) replaced by ``<sha>``."""
    return {(re.sub(r"[0-9a-f]{10}$", "<sha>", lid), kind) for lid, kind in resources}


@pytest.mark.parametrize(("kind", "event_type"), CASES, ids=[f"{k.rsplit('::', 1)[1]}-{e}" for k, e in CASES])
def test_each_resource_is_listed_by_the_logical_ids_the_sam_transform_gives(kind: str, event_type: str) -> None:
    # What ListStackResources lists on the engine (idemflow.template.sam.generated_resources) against what
    # aws-sam-translator makes of the same resource: logical ids and types, the hash suffixes aside.
    event = {"Type": event_type, "Properties": EVENT_PROPERTIES[event_type]}
    props = {**OWNER_PROPERTIES[kind], "Events": {"E": event}}
    owner = {"Type": kind, "Properties": props}
    made = transformed({"Transform": "AWS::Serverless-2016-10-31", "Resources": {**OTHERS, "Owner": owner}})

    expected = {(lid, resource["Type"]) for lid, resource in made.items() if lid not in OTHERS}
    assert _without_sha(set(generated_resources("Owner", kind, props, "Resources.Owner"))) == _without_sha(expected)
