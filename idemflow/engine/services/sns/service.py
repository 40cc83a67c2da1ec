"""SNS: the template's topics and their subscriptions, created in moto's SNS, which delivers a published message
to a subscribed SQS queue in-process (the registry's ``sns-delivery`` change makes that delivery AWS's).

Sources: the CloudFormation User Guide's pages for AWS::SNS::Topic (``Ref`` is the topic's ARN; ``TopicArn``
and ``TopicName`` attributes) and AWS::SNS::Subscription (``Ref`` is the subscription's ARN; ``RawMessageDelivery``,
``FilterPolicy``, ``FilterPolicyScope`` and ``RedrivePolicy`` are subscription attributes, the last two JSON).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from idemflow.engine.services.base import Service
from idemflow.template import Resolver, ResourceType, Stack, cfn_string

TOPIC_ARN = "arn:aws:sns:{region}:{account}:{name}"
# The subscription properties SNS keeps as subscription attributes (SetSubscriptionAttributes' names).
_ATTRIBUTES = ("RawMessageDelivery", "FilterPolicy", "FilterPolicyScope", "RedrivePolicy", "DeliveryPolicy")


@dataclass(frozen=True)
class Topic:
    logical_id: str
    name: str
    arn: str
    attributes: dict[str, str]


@dataclass(frozen=True)
class Subscription:
    logical_id: str
    topic_arn: str
    protocol: str
    endpoint: str
    attributes: dict[str, str]


def read_topic(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Topic:
    attributes = {}
    if r.setting(props, "FifoTopic", where, False) in (True, "true"):
        attributes["FifoTopic"] = "true"
    return Topic(lid, r.name(lid), r.arn(lid), attributes)


def _attribute(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return cfn_string(value, where)


def read_subscription(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Subscription:
    attributes = {
        key: _attribute(r.setting(props, key, where), f"{where}.{key}")
        for key in _ATTRIBUTES
        if r.setting(props, key, where, None) is not None
    }
    return Subscription(
        lid,
        cfn_string(r.setting(props, "TopicArn", where), f"{where}.TopicArn"),
        cfn_string(r.setting(props, "Protocol", where), f"{where}.Protocol"),
        cfn_string(r.setting(props, "Endpoint", where), f"{where}.Endpoint"),
        attributes,
    )


class Sns(Service):
    name = "sns"
    resource_types = (
        ResourceType(
            "AWS::SNS::Topic",
            read_topic,
            name_property="TopicName",
            arn=TOPIC_ARN,
            ref="arn",
            attributes={"TopicArn": TOPIC_ARN, "TopicName": "{name}"},
        ),
        ResourceType("AWS::SNS::Subscription", read_subscription, ref="id"),
        ResourceType("AWS::SNS::TopicPolicy", why_not_served="permissions are not enforced locally"),
    )
    moto_backends = ("sns",)

    def deploy(self, stack: Stack) -> None:
        topics = [t for _, s in stack.stacks() for t in s.models(Topic).values()]
        subscriptions = [sub for _, s in stack.stacks() for sub in s.models(Subscription).values()]
        if not topics and not subscriptions:
            return
        sns = self.context.client("sns")
        for topic in topics:
            sns.create_topic(Name=topic.name, Attributes=topic.attributes)
        for sub in subscriptions:
            # SQS endpoints subscribe confirmed at once (no confirmation message), as SNS does for them.
            sns.subscribe(
                TopicArn=sub.topic_arn,
                Protocol=sub.protocol,
                Endpoint=sub.endpoint,
                Attributes=sub.attributes,
                ReturnSubscriptionArn=True,
            )
