"""The SNS service: a template's topic and its SQS subscriptions (raw delivery, a filter policy, a dead-letter
queue) deployed as CloudFormation declares them, driven by plain boto3 calls to the engine's endpoint.

Sources: the CloudFormation User Guide's AWS::SNS::Topic (``Ref`` is the ARN; ``TopicName`` attribute) and
AWS::SNS::Subscription pages; how SNS delivers is pinned in tests/conformance/test_sns.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from idemflow.engine import Engine

pytestmark = pytest.mark.functional

TEMPLATE = Path(__file__).parent / "fixtures" / "sns" / "template.yaml"


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(TEMPLATE, wait_time_scale=0) as running:
        yield running


def _queue(engine: Engine, logical_id: str) -> str:
    assert engine.stack is not None
    return str(engine.stack.outputs[f"{logical_id}Url"])


def _drain(engine: Engine, logical_id: str) -> list[dict[str, Any]]:
    sqs = engine.http_client("sqs")
    url = _queue(engine, logical_id)
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"])
    messages = list(got.get("Messages", []))
    for message in messages:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return messages


def test_the_topic_is_named_as_cloudformation_names_it(engine: Engine) -> None:
    assert engine.stack is not None
    outputs = engine.stack.outputs
    topics = engine.http_client("sns").list_topics()["Topics"]
    assert {"TopicArn": outputs["TopicArn"]} in topics
    assert outputs["TopicArn"] == f"arn:aws:sns:us-east-1:123456789012:{outputs['TopicName']}"


def test_each_subscription_gets_what_its_properties_declare(engine: Engine) -> None:
    assert engine.stack is not None
    topic = engine.stack.outputs["TopicArn"]
    sns = engine.http_client("sns")
    sns.publish(TopicArn=topic, Message=json.dumps({"orderId": "o-1"}), MessageAttributes={"kind": _string("order")})
    sns.publish(TopicArn=topic, Message="not an order", MessageAttributes={"kind": _string("refund")})

    enveloped = [json.loads(m["Body"])["Message"] for m in _drain(engine, "Enveloped")]
    raw = _drain(engine, "Raw")

    assert sorted(enveloped) == ["not an order", '{"orderId": "o-1"}']  # no filter: both, in their envelopes
    assert [(m["Body"], m["MessageAttributes"]["kind"]["StringValue"]) for m in raw] == [
        ('{"orderId": "o-1"}', "order")
    ]


def test_the_subscriptions_dead_letter_queue_receives_what_its_queue_cannot(engine: Engine) -> None:
    assert engine.stack is not None
    sqs = engine.http_client("sqs")
    url = _queue(engine, "Enveloped")
    sqs.delete_queue(QueueUrl=url)
    try:
        engine.http_client("sns").publish(TopicArn=engine.stack.outputs["TopicArn"], Message="kept")
        (dead,) = _drain(engine, "DeadLetters")
    finally:
        sqs.create_queue(QueueName=url.rsplit("/", 1)[-1])
    assert json.loads(dead["Body"])["Message"] == "kept"


def _string(value: str) -> dict[str, str]:
    return {"DataType": "String", "StringValue": value}
