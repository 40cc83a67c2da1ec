"""The template's alarms: each watches the resource it names (CloudWatch metrics of Step Functions, SQS and
DynamoDB: AWS/States ExecutionsTimedOut, ExecutionThrottled and ExecutionsFailed by StateMachineArn;
AWS/SQS ApproximateNumberOfMessagesVisible by QueueName; AWS/DynamoDB Read/WriteThrottleEvents by
TableName), exists exactly when what it watches does, and notifies AlarmTopicArn when one is given."""

from __future__ import annotations

from typing import Any

import pytest

from idemflow.engine.services import resource_types
from idemflow.template import NO_VALUE, Resolver, load_template
from tests.paths import TEMPLATE_PATH

ALARMS = {
    # alarm: (namespace, metrics, dimension, watched resource, condition)
    "WorkflowTimedOutAlarm": ("AWS/States", ["ExecutionsTimedOut"], "StateMachineArn", "IdempotentStateMachine", None),
    "WorkflowThrottledAlarm": ("AWS/States", ["ExecutionThrottled"], "StateMachineArn", "IdempotentStateMachine", None),
    "IntakeFailedAlarm": (
        "AWS/States",
        ["ExecutionsFailed"],
        "StateMachineArn",
        "IntakeStateMachine",
        "CreateDoorIntake",
    ),
    "DoorDeadLettersAlarm": (
        "AWS/SQS",
        ["ApproximateNumberOfMessagesVisible"],
        "QueueName",
        "DoorDeadLetterQueue",
        "CreateDoorIntake",
    ),
    "IdempotencyTableThrottlesAlarm": (
        "AWS/DynamoDB",
        ["ReadThrottleEvents", "WriteThrottleEvents"],
        "TableName",
        "IdempotencyTable",
        "CreateIdempotencyTable",
    ),
}


def metrics_of(props: dict[str, Any]) -> list[dict[str, Any]]:
    if "Metrics" in props:
        return [m["MetricStat"]["Metric"] for m in props["Metrics"] if "MetricStat" in m]
    return [{k: props[k] for k in ("Namespace", "MetricName", "Dimensions")}]


def test_the_template_declares_exactly_these_alarms() -> None:
    resources = load_template(TEMPLATE_PATH)["Resources"]
    assert {name for name, r in resources.items() if r["Type"] == "AWS::CloudWatch::Alarm"} == set(ALARMS)


@pytest.mark.parametrize("alarm", sorted(ALARMS))
def test_each_alarm_watches_its_resource_and_exists_with_it(alarm: str) -> None:
    resources = load_template(TEMPLATE_PATH)["Resources"]
    namespace, names, dimension, watched, condition = ALARMS[alarm]
    metrics = metrics_of(resources[alarm]["Properties"])

    assert [(m["Namespace"], m["MetricName"]) for m in metrics] == [(namespace, n) for n in names]
    for metric in metrics:
        ((dim,),) = [metric["Dimensions"]]
        value = dim["Value"]
        referenced = value.get("Ref") or value.get("Fn::GetAtt", [None])[0]
        assert (dim["Name"], referenced) == (dimension, watched)
    assert resources[alarm].get("Condition") == condition
    assert resources[watched].get("Condition") == condition  # the alarm exists exactly when its resource does


@pytest.mark.parametrize("topic", ["", "arn:aws:sns:eu-west-1:123456789012:oncall"])
def test_every_alarm_notifies_the_topic_when_one_is_given(topic: str) -> None:
    template = load_template(TEMPLATE_PATH)
    params = {name: str(spec.get("Default", "")) for name, spec in template["Parameters"].items()}
    params.update({"AlarmTopicArn": topic, "QueueFrontDoor": "true"})
    resolver = Resolver(template, "s", "us-east-1", "123456789012", params, TEMPLATE_PATH, (), resource_types())
    for alarm in ALARMS:
        value = resolver.value(resolver.properties(alarm).get("AlarmActions"), alarm)
        assert value == ([topic] if topic else NO_VALUE), alarm  # no topic: the property is left out
