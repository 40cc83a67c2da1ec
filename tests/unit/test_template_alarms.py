"""The template's alarms: each watches the resource it names (CloudWatch metrics of Step Functions, SQS and
DynamoDB: AWS/States ExecutionsTimedOut, ExecutionThrottled and ExecutionsFailed by StateMachineArn;
AWS/SQS ApproximateNumberOfMessagesVisible by QueueName; AWS/DynamoDB Read/WriteThrottleEvents by
TableName), exists exactly when what it watches does, and notifies AlarmTopicArn when one is given."""

from __future__ import annotations

import re
from typing import Any

import pytest

from idemflow.contract import NEEDS_A_PERSON, WorkflowError
from idemflow.engine.catalog import resource_types
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
    named = {f"{error.removeprefix('Idempotency')}Alarm" for error in NEEDS_A_PERSON}
    assert {name for name, r in resources.items() if r["Type"] == "AWS::CloudWatch::Alarm"} == set(ALARMS) | named


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
    for alarm in [*ALARMS, *(f"{e.removeprefix('Idempotency')}Alarm" for e in NEEDS_A_PERSON)]:
        value = resolver.value(resolver.properties(alarm).get("AlarmActions"), alarm)
        assert value == ([topic] if topic else NO_VALUE), alarm  # no topic: the property is left out


# An ExecutionFailed event as Step Functions logs it (recorded on AWS: localstack/localstack
# tests/aws/services/stepfunctions/v2/logs/test_logs.snapshot.json, test_partial_log_levels
# [raise_failure.json5_FATAL_False]; the same details with includeExecutionData false and true).
RECORDED_EXECUTION_FAILED = {
    "id": "3",
    "type": "ExecutionFailed",
    "details": {"cause": "This state machines raises a 'SomeFailure' failure.", "error": "SomeFailure"},
    "previous_event_id": "2",
    "event_timestamp": "1717999999999",
    "execution_arn": "arn:aws:states:us-east-1:111111111111:execution:sm:e",
    "redrive_count": "0",
}
CONDITION = re.compile(r'\$\.([\w.]+) = "([^"]*)"')


def matches(pattern: str, event: dict[str, Any]) -> bool:
    """A CloudWatch Logs JSON filter pattern of `$.a.b = "x"` conditions joined by && (FilterAndPatternSyntax:
    "{ SELECTOR EQUALITY_OPERATOR STRING }", compound with &&), evaluated on one event."""
    body = pattern.strip()
    assert body.startswith("{") and body.endswith("}"), pattern
    conditions = [c.strip() for c in body[1:-1].split("&&")]
    for condition in conditions:
        found = CONDITION.fullmatch(condition)
        assert found, condition
        value: Any = event
        for part in found.group(1).split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value != found.group(2):
            return False
    return True


@pytest.mark.parametrize("error", NEEDS_A_PERSON)
def test_each_error_that_needs_a_person_is_counted_from_the_log_group_and_alarmed(error: WorkflowError) -> None:
    resources = load_template(TEMPLATE_PATH)["Resources"]
    short = error.removeprefix("Idempotency")
    metric_filter = resources[f"{short}Filter"]["Properties"]
    alarm = resources[f"{short}Alarm"]["Properties"]

    assert metric_filter["LogGroupName"] == {"Ref": "StateMachineLogGroup"}
    failed = {**RECORDED_EXECUTION_FAILED, "details": {**RECORDED_EXECUTION_FAILED["details"], "error": error}}
    assert matches(metric_filter["FilterPattern"], failed)
    assert not matches(metric_filter["FilterPattern"], RECORDED_EXECUTION_FAILED)  # another error
    assert not matches(metric_filter["FilterPattern"], {**failed, "type": "FailStateEntered"})
    (transformation,) = metric_filter["MetricTransformations"]
    assert (transformation["MetricName"], transformation["MetricValue"]) == (error, "1")
    assert (alarm["Namespace"], alarm["MetricName"]) == (transformation["MetricNamespace"], error)
    # The workflow logs there (its Logging destination), failures included by default (level ERROR).
    workflow = resources["IdempotentStateMachine"]["Properties"]["Logging"]
    assert workflow["Destinations"][0]["CloudWatchLogsLogGroup"]["LogGroupArn"] == {
        "Fn::GetAtt": ["StateMachineLogGroup", "Arn"]
    }
