"""SNS's delivery to SQS queues: what a topic in front of the queue door relies on.

Sources: executions recorded on AWS in LocalStack's AWS-validated snapshots (``LS`` below:
github.com/localstack/localstack, tests/aws/services/sns/test_sns.snapshot.json, ``TestSNSSubscriptionSQS``)
and the SNS developer guide's dead-letter queue page (sns-dead-letter-queues.html).
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.conformance.harness import Target

Made = Callable[[], tuple[str, str]]


@pytest.fixture
def queues(target: Target) -> Iterator[Made]:
    """Makes a queue: its URL and ARN. Each is deleted after the test."""
    sqs = target.client("sqs")
    urls: list[str] = []

    def make() -> tuple[str, str]:
        url = sqs.create_queue(QueueName=f"sns-{uuid.uuid4().hex[:12]}")["QueueUrl"]
        urls.append(url)
        return url, sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    yield make
    for url in urls:
        with contextlib.suppress(ClientError):
            sqs.delete_queue(QueueUrl=url)


@pytest.fixture
def topic(target: Target) -> Iterator[str]:
    sns = target.client("sns")
    arn = sns.create_topic(Name=f"sns-{uuid.uuid4().hex[:12]}")["TopicArn"]
    yield arn
    sns.delete_topic(TopicArn=arn)


def _allow(target: Target, topic: str, queue_arn: str) -> None:
    """The queue's policy lets the topic send to it, as SNS needs (SNS Developer Guide, "Example cases for Amazon SNS
    access control", "Publish messages to an Amazon SQS queue"); LS's AWS-validated tests set this very policy before
    they publish (the ``sns_allow_topic_sqs_queue`` fixture: ``sns.amazonaws.com`` may ``sqs:SendMessage``,
    ``ArnEquals`` ``aws:SourceArn`` the topic)."""
    sqs = target.client("sqs")
    url = sqs.get_queue_url(QueueName=queue_arn.rsplit(":", 1)[1])["QueueUrl"]
    statement = {
        "Effect": "Allow",
        "Principal": {"Service": "sns.amazonaws.com"},
        "Action": "sqs:SendMessage",
        "Resource": queue_arn,
        "Condition": {"ArnEquals": {"aws:SourceArn": topic}},
    }
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps({"Statement": [statement]})})


def _subscribe(target: Target, topic: str, queue_arn: str, *, allowed: bool = True, **attributes: str) -> str:
    """``queue_arn`` subscribed to ``topic``; ``allowed``: its policy lets the topic send (:func:`_allow`), and so
    does the dead-letter queue's its RedrivePolicy names."""
    if allowed:
        _allow(target, topic, queue_arn)
        if "RedrivePolicy" in attributes:
            _allow(target, topic, json.loads(attributes["RedrivePolicy"])["deadLetterTargetArn"])
    answer = target.client("sns").subscribe(
        TopicArn=topic, Protocol="sqs", Endpoint=queue_arn, Attributes=attributes, ReturnSubscriptionArn=True
    )
    return str(answer["SubscriptionArn"])


def _received(target: Target, url: str) -> list[dict[str, Any]]:
    answer = target.client("sqs").receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], WaitTimeSeconds=0
    )
    return list(answer.get("Messages", []))


def test_a_message_arrives_in_its_envelope_naming_its_subscription(target: Target, topic: str, queues: Made) -> None:
    # LS test_publish_sqs_from_sns ("message-raw-false"): the body is the envelope (Type Notification, MessageId,
    # TopicArn, Message, Timestamp, SignatureVersion, Signature, SigningCertURL, UnsubscribeURL, MessageAttributes
    # as {Type, Value}); its UnsubscribeURL names the subscription's ARN; the SQS message has no attributes.
    url, arn = queues()
    subscription = _subscribe(target, topic, arn)
    published = target.client("sns").publish(
        TopicArn=topic, Message="Test msg", MessageAttributes={"attr1": {"DataType": "Number", "StringValue": "100.12"}}
    )

    (message,) = _received(target, url)
    body = json.loads(message["Body"])

    assert {k: body[k] for k in ("Type", "MessageId", "TopicArn", "Message")} == {
        "Type": "Notification",
        "MessageId": published["MessageId"],
        "TopicArn": topic,
        "Message": "Test msg",
    }
    assert body["MessageAttributes"] == {"attr1": {"Type": "Number", "Value": "100.12"}}
    assert body["UnsubscribeURL"].endswith(f"/?Action=Unsubscribe&SubscriptionArn={subscription}")
    assert body["UnsubscribeURL"].startswith(f"https://sns.{topic.split(':')[3]}.amazonaws.com/")
    assert {"Timestamp", "SignatureVersion", "Signature", "SigningCertURL"} <= set(body)
    assert "MessageAttributes" not in message


def test_raw_delivery_sends_the_message_with_its_attributes(target: Target, topic: str, queues: Made) -> None:
    # LS test_publish_sqs_from_sns ("message-raw-true"): with RawMessageDelivery the body is the message itself,
    # and its attributes are the SQS message's (DataType and StringValue).
    url, arn = queues()
    _subscribe(target, topic, arn, RawMessageDelivery="true")
    target.client("sns").publish(
        TopicArn=topic, Message="Test msg", MessageAttributes={"attr1": {"DataType": "Number", "StringValue": "99.12"}}
    )

    (message,) = _received(target, url)

    assert message["Body"] == "Test msg"
    assert message["MessageAttributes"] == {"attr1": {"DataType": "Number", "StringValue": "99.12"}}


@pytest.mark.parametrize("raw", [False, True], ids=["envelope", "raw"])
def test_a_message_for_a_deleted_queue_goes_to_the_subscriptions_dead_letter_queue(
    target: Target, topic: str, queues: Made, raw: bool
) -> None:
    # LS test_redrive_policy_sqs_queue_subscription[True/False]: the subscribed queue deleted, Publish still
    # answers, and the message lands on the subscription's dead-letter queue: the envelope, or with
    # RawMessageDelivery the message itself. The guide: a client-side error (the queue deleted) moves the
    # message to the dead-letter queue.
    url, arn = queues()
    dead_url, dead_arn = queues()
    attributes = {"RedrivePolicy": json.dumps({"deadLetterTargetArn": dead_arn})}
    if raw:
        attributes["RawMessageDelivery"] = "true"
    _subscribe(target, topic, arn, **attributes)
    target.client("sqs").delete_queue(QueueUrl=url)

    published = target.client("sns").publish(TopicArn=topic, Message="test_dlq_after_sqs_endpoint_deleted")

    (message,) = _received(target, dead_url)
    if raw:
        assert message["Body"] == "test_dlq_after_sqs_endpoint_deleted"
    else:
        body = json.loads(message["Body"])
        assert (body["Message"], body["MessageId"]) == ("test_dlq_after_sqs_endpoint_deleted", published["MessageId"])


def test_without_a_dead_letter_queue_a_message_for_a_deleted_queue_is_dropped_not_refused(
    target: Target, topic: str, queues: Made
) -> None:
    # The guide: delivery is SNS's, after Publish answered; without a dead-letter queue a message that cannot be
    # delivered is dropped. The publisher is told it was published (it must not send it again).
    url, arn = queues()
    _subscribe(target, topic, arn)
    target.client("sqs").delete_queue(QueueUrl=url)

    published = target.client("sns").publish(TopicArn=topic, Message="nobody")

    assert published["MessageId"]


def test_a_queue_whose_policy_lets_not_the_topic_send_gets_nothing_its_dead_letter_queue_gets_it(
    target: Target, topic: str, queues: Made
) -> None:
    # SNS sends as sns.amazonaws.com, which the queue's policy must allow (the SNS Developer Guide, "Example cases
    # for Amazon SNS access control"); a policy that prevents SNS from delivering is the guide's example of a
    # client-side error, not retried, and the message goes to the subscription's dead-letter queue (SNS Developer
    # Guide, "Amazon SNS dead-letter queues (DLQs)", sns-dead-letter-queues.html). Publish still answers.
    url, arn = queues()
    dead_url, dead_arn = queues()
    _subscribe(target, topic, arn, allowed=False, RedrivePolicy=json.dumps({"deadLetterTargetArn": dead_arn}))
    _allow(target, topic, dead_arn)
    other = target.client("sns").create_topic(Name=f"sns-{uuid.uuid4().hex[:12]}")["TopicArn"]
    _allow(target, other, arn)  # a policy for another topic: aws:SourceArn does not match this one

    try:
        published = target.client("sns").publish(TopicArn=topic, Message="not for this queue")
    finally:
        target.client("sns").delete_topic(TopicArn=other)

    assert _received(target, url) == []
    (message,) = _received(target, dead_url)
    assert json.loads(message["Body"])["MessageId"] == published["MessageId"]


def test_a_dead_letter_queue_whose_policy_does_not_let_the_topic_send_loses_the_message(
    target: Target, topic: str, queues: Made
) -> None:
    # The dead-letter queue is sent to as the subscribed queue is: its policy must let SNS send ("Configuring an
    # Amazon SNS dead-letter queue for a subscription", its queue policy for the dead-letter queue); without, the
    # message has nowhere to go.
    url, arn = queues()
    dead_url, dead_arn = queues()
    _subscribe(target, topic, arn, allowed=False, RedrivePolicy=json.dumps({"deadLetterTargetArn": dead_arn}))

    target.client("sns").publish(TopicArn=topic, Message="nowhere")

    assert _received(target, url) == []
    assert _received(target, dead_url) == []
