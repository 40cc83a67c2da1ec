"""The topic door (TopicFrontDoor=true) on the embedded engine: messages published with plain boto3 ``publish``
to the template's topic reach the request queue by raw delivery, then the queue door's pipe and intake, once per
key, and every message is accounted for: a completed key or the doors' dead-letter queue.

How SNS delivers to SQS (raw delivery, a deleted queue's messages to the subscription's dead-letter queue) is
pinned, with its AWS records, in tests/conformance/test_sns.py; the rest is the template's own.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from idemflow.contract import WorkflowError
from idemflow.engine import Engine
from tests.charge.side_effect import payment
from tests.functional.doors import ONCE, attribute, dead_letters, deliveries, side_effect_of, wait_for_deliveries
from tests.polling import wait_until

# Waits scaled by 0.01, as the queue door's tests (a duplicate whose owner still runs is started again after a
# lease of 0.6 s).
OVERRIDES = {
    "TopicFrontDoor": "true",
    "QueueVisibilityTimeout": "0",
    "InProgressMaxPolls": "30",
    "LockLeaseSeconds": "60",
}


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(parameter_overrides=OVERRIDES, wait_time_scale=0.01) as running:
        yield running


def publish(engine: Engine, message: Any, *, key: str | None = None) -> str:
    """Publish one message as a producer would: JSON (or text), the key as a message attribute if given."""
    assert engine.stack is not None
    kwargs: dict[str, Any] = {
        "TopicArn": engine.stack.outputs["RequestTopicArn"],
        "Message": message if isinstance(message, str) else json.dumps(message),
    }
    if key is not None:
        kwargs["MessageAttributes"] = {"idempotencyKey": {"DataType": "String", "StringValue": key}}
    return str(engine.http_client("sns").publish(**kwargs)["MessageId"])


def test_the_template_creates_the_topic_and_subscribes_the_request_queue_raw(engine: Engine) -> None:
    assert engine.stack is not None
    sns = engine.http_client("sns")
    topic = engine.stack.outputs["RequestTopicArn"]
    (subscription,) = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    attributes = sns.get_subscription_attributes(SubscriptionArn=subscription["SubscriptionArn"])["Attributes"]
    queue_arn = engine.http_client("sqs").get_queue_attributes(
        QueueUrl=engine.stack.outputs["RequestQueueUrl"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    dead_arn = engine.http_client("sqs").get_queue_attributes(
        QueueUrl=engine.stack.outputs["DoorDeadLetterQueueUrl"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]

    assert (subscription["Protocol"], subscription["Endpoint"]) == ("sqs", queue_arn)
    assert attributes["RawMessageDelivery"] == "true"
    assert json.loads(attributes["RedrivePolicy"]) == {"deadLetterTargetArn": dead_arn}


def test_a_published_message_runs_the_workflow_once_with_the_key_attribute(engine: Engine) -> None:
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    publish(engine, payment(amount=4200), key=key)

    (delivery,) = wait_for_deliveries(engine, 1, before)

    assert (delivery["outcome"], delivery["idempotencyKey"], delivery["keyFrom"]) == ("COMPLETED", key, "attribute")
    assert delivery["replayed"] is False
    assert engine.workflow.side_effect_runs(key) == 1


def test_a_message_published_twice_runs_the_side_effect_once(engine: Engine) -> None:
    # Two publishes of one business key, or SNS delivering one message twice: either way the queue receives two
    # messages with their own SQS messageIds and the same attribute, which keys them.
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    ids = {publish(engine, payment(amount=2500), key=key), publish(engine, payment(amount=2500), key=key)}

    found = wait_for_deliveries(engine, 2, before)

    assert len(ids) == 2
    assert [d["outcome"] for d in found] == ["COMPLETED", "COMPLETED"]
    assert sorted(d["replayed"] for d in found) == [False, True]
    assert engine.workflow.side_effect_runs(key) == 1


def test_a_message_that_is_not_json_goes_to_the_dead_letter_queue_with_its_reason(engine: Engine) -> None:
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    publish(engine, "amount=4200&currency=EUR", key=key)

    (delivery,) = wait_for_deliveries(engine, 1, before)

    assert (delivery["outcome"], delivery["error"]) == ("DEAD_LETTERED", WorkflowError.PAYLOAD_INVALID)
    (dead,) = [m for m in dead_letters(engine) if attribute(m, "idempotencyKey") == key]
    assert dead["Body"] == "amount=4200&currency=EUR"  # the message as it was published
    assert attribute(dead, "ERROR_CODE") == WorkflowError.PAYLOAD_INVALID
    assert engine.workflow.side_effect_runs(key) == 0


def test_thirty_messages_for_five_keys_at_once_run_five_side_effects_and_every_message_is_accounted_for(
    engine: Engine,
) -> None:
    assert engine.stack is not None
    before = len(deliveries(engine))
    keys = [f"order-{uuid.uuid4()}" for _ in range(5)]
    sns = engine.http_client("sns")
    for batch in range(3):  # PublishBatch takes 10 at most: each batch has every key twice
        answer = sns.publish_batch(
            TopicArn=engine.stack.outputs["RequestTopicArn"],
            PublishBatchRequestEntries=[
                {
                    "Id": f"{i}-{copy}",
                    "Message": json.dumps(payment(amount=100 + i)),
                    "MessageAttributes": {"idempotencyKey": {"DataType": "String", "StringValue": key}},
                }
                for i, key in enumerate(keys)
                for copy in range(2)
            ],
        )
        assert len(answer["Successful"]) == 10, (batch, answer.get("Failed"))

    found = wait_for_deliveries(engine, 30, before, timeout=120)

    assert Counter(d["outcome"] for d in found) == {"COMPLETED": 30}
    assert Counter(d["idempotencyKey"] for d in found) == dict.fromkeys(keys, 6)
    assert Counter(d["replayed"] for d in found) == {False: 5, True: 25}
    assert {key: side_effect_of(engine, key) for key in keys} == dict.fromkeys(keys, ONCE)


def test_a_message_for_a_deleted_request_queue_goes_to_the_dead_letter_queue_not_nowhere(engine: Engine) -> None:
    assert engine.stack is not None
    sqs = engine.http_client("sqs")
    url = engine.stack.outputs["RequestQueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    key = f"order-{uuid.uuid4()}"
    sqs.delete_queue(QueueUrl=url)
    try:
        publish(engine, payment(amount=700), key=key)
        (dead,) = [m for m in dead_letters(engine) if attribute(m, "idempotencyKey") == key]
    finally:  # created again as the runbook does: SQS refuses the name for 60 s (0.6 s here)
        kept = {
            k: v for k, v in attributes.items() if k in ("VisibilityTimeout", "MaximumMessageSize", "RedrivePolicy")
        }
        wait_until(lambda: _create(sqs, url.rsplit("/", 1)[-1], kept), 10, what="the request queue again")

    assert json.loads(dead["Body"]) == payment(amount=700)  # raw: the message itself, its attributes kept
    assert engine.workflow.side_effect_runs(key) == 0


def _create(sqs: Any, name: str, attributes: dict[str, str]) -> bool:
    try:
        sqs.create_queue(QueueName=name, Attributes=attributes)
    except sqs.exceptions.QueueDeletedRecently:
        return False
    return True
