"""Every combination of the doors is a template CloudFormation deploys, with the doors asked for and no other.

The resolver refuses what CloudFormation refuses before it creates anything: a created resource naming one
whose Condition is false ("Unresolved resource dependencies"), a Rule's assertion, a reference cycle. cfn-lint
(tests/unit/test_template_lint.py) evaluates the template's condition scenarios itself, all at once; given
parameter values it checks neither their AllowedValues nor the Rules (cfn-lint 1.58.0, ``--parameters
WorkflowType=BAD`` passes), so each combination is resolved here."""

from __future__ import annotations

from itertools import product

import pytest

from idemflow.engine.stack import resolve_stack

pytestmark = pytest.mark.unit

DOORS = ("HttpFrontDoor", "QueueFrontDoor", "EventFrontDoor", "TopicFrontDoor")
TOPIC = "arn:aws:sns:us-east-1:123456789012:orders"
STREAM = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
TABLE_STREAM = "arn:aws:dynamodb:us-east-1:123456789012:table/outbox/stream/2026-11-26T18:55:01.123"

COMBINATIONS = [
    {**dict(zip(DOORS, flags, strict=True)), "WorkflowType": workflow_type}
    for flags in product(("false", "true"), repeat=len(DOORS))
    for workflow_type in ("STANDARD", "EXPRESS")
] + [
    {**dict.fromkeys(DOORS, "true"), "HttpApiKeyRequired": "true", "DoorTopicArn": TOPIC},
    {**dict.fromkeys(DOORS, "true"), "WorkflowType": "EXPRESS", "HttpApiKeyRequired": "true"},
    {"TopicFrontDoor": "true", "DoorTopicArn": TOPIC, "DoorKeyField2": "b", "DoorKeyField3": "c"},
    {"KinesisStreamArn": STREAM},
    {"DynamoDBStreamArn": TABLE_STREAM, "WorkflowType": "EXPRESS"},
    {**dict.fromkeys(DOORS, "true"), "KinesisStreamArn": STREAM, "DynamoDBStreamArn": TABLE_STREAM},
]


def name(overrides: dict[str, str]) -> str:
    shown = {k: v.rsplit(":", 1)[-1] if v.startswith("arn:") else v for k, v in overrides.items()}
    return ",".join(f"{k}={v}" for k, v in shown.items() if v != "false") or "no door"


@pytest.mark.parametrize("overrides", COMBINATIONS, ids=name)
def test_every_combination_of_doors_deploys_with_exactly_its_doors(overrides: dict[str, str]) -> None:
    stack = resolve_stack(parameter_overrides=overrides)

    made = {lid: r.type for lid, r in stack.resources.items() if r.made_by is None}
    asked = {door: overrides.get(door) == "true" for door in DOORS}
    standard = overrides.get("WorkflowType", "STANDARD") == "STANDARD"
    assert ("HttpApi" in made) == asked["HttpFrontDoor"]
    assert ("HttpRequestGet" in made) == (asked["HttpFrontDoor"] and standard)
    assert ("HttpUsagePlan" in made) == (asked["HttpFrontDoor"] and overrides.get("HttpApiKeyRequired") == "true")
    # The topic door delivers through the queue door's queue and pipe.
    assert ("QueuePipe" in made) == (asked["QueueFrontDoor"] or asked["TopicFrontDoor"])
    assert ("EventRule" in made) == asked["EventFrontDoor"]
    assert ("TopicSubscription" in made) == asked["TopicFrontDoor"]
    assert ("DoorTopic" in made) == (asked["TopicFrontDoor"] and not overrides.get("DoorTopicArn"))
    assert ("StreamPipe" in made) == bool(overrides.get("KinesisStreamArn"))
    assert ("TableStreamPipe" in made) == bool(overrides.get("DynamoDBStreamArn"))
    # The intake and the dead-letter queue exist with any door that delivers through them.
    streams = bool(overrides.get("KinesisStreamArn") or overrides.get("DynamoDBStreamArn"))
    delivering = asked["QueueFrontDoor"] or asked["EventFrontDoor"] or asked["TopicFrontDoor"] or streams
    assert ("IntakeStateMachine" in made) == ("DoorDeadLetterQueue" in made) == delivering
    assert ("StreamDeadLetterQueue" in made) == streams
    assert ("HttpRequestsUrl" in stack.outputs) == asked["HttpFrontDoor"]
    assert ("RequestQueueUrl" in stack.outputs) == (asked["QueueFrontDoor"] or asked["TopicFrontDoor"])
