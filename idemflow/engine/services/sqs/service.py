"""SQS: the template's queues, created in moto's SQS (redrive to a dead-letter queue included: moto moves a
message once its receive count reaches the queue's ``maxReceiveCount``, as SQS does), and their policies.

An ``AWS::SQS::QueuePolicy`` sets the ``Policy`` attribute of each queue it names ("AWS::SQS::QueuePolicy",
CloudFormation User Guide: ``Queues``, the URLs of the queues, and ``PolicyDocument``): GetQueueAttributes answers
it, and a service that sends to the queue (SNS, EventBridge) is decided against it when permissions are on."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from idemflow.engine.services.base import Service
from idemflow.template import Resolver, ResourceType, Stack, TemplateError, cfn_string, integer, mapping

# AWS::SQS::Queue, "Return values": Ref is the queue URL; Arn, QueueName and QueueUrl are attributes.
QUEUE_URL = "https://sqs.{region}.amazonaws.com/{account}/{name}"
QUEUE_ARN = "arn:aws:sqs:{region}:{account}:{name}"
# The properties passed on as queue attributes (AWS::SQS::Queue properties; CreateQueue attribute names).
_ATTRIBUTES = (
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout",
    "FifoQueue",
    "ContentBasedDeduplication",
)


@dataclass(frozen=True)
class Queue:
    logical_id: str
    name: str
    arn: str
    url: str
    attributes: dict[str, str]
    redrive_policy: dict[str, Any] | None


@dataclass(frozen=True)
class QueuePolicy:
    logical_id: str
    queues: tuple[str, ...]
    """The URLs of the queues it applies to (each a queue's ``Ref``)."""
    document: dict[str, Any]


def read_queue_policy(r: Resolver, lid: str, props: dict[str, Any], where: str) -> QueuePolicy:
    queues = r.setting(props, "Queues", where)
    if not isinstance(queues, list):
        raise TemplateError(f"{where}.Queues: a list of queue URLs")
    document = mapping(r.setting(props, "PolicyDocument", where), f"{where}.PolicyDocument")
    return QueuePolicy(lid, tuple(cfn_string(q, f"{where}.Queues[{i}]") for i, q in enumerate(queues)), document)


def read_queue(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Queue:
    attributes = {
        key: cfn_string(r.setting(props, key, where), f"{where}.{key}") for key in _ATTRIBUTES if key in props
    }
    policy = r.setting(props, "RedrivePolicy", where, None)
    if isinstance(policy, str):
        policy = json.loads(policy)
    if policy is not None:
        policy = {
            "deadLetterTargetArn": cfn_string(policy.get("deadLetterTargetArn"), f"{where}.RedrivePolicy"),
            "maxReceiveCount": integer(policy.get("maxReceiveCount"), f"{where}.RedrivePolicy.maxReceiveCount"),
        }
    name = r.name(lid)
    return Queue(lid, name, r.arn(lid), r.attribute(r.types["AWS::SQS::Queue"], "QueueUrl", lid), attributes, policy)


class Sqs(Service):
    name = "sqs"
    resource_types = (
        ResourceType(
            "AWS::SQS::Queue",
            read_queue,
            name_property="QueueName",
            arn=QUEUE_ARN,
            ref="QueueUrl",
            attributes={"QueueUrl": QUEUE_URL, "QueueName": "{name}"},
        ),
        ResourceType("AWS::SQS::QueuePolicy", read_queue_policy),
    )
    moto_backends = ("sqs",)

    def deploy(self, stack: Stack) -> None:
        queues = [q for _, s in stack.stacks() for q in s.models(Queue).values()]
        if not queues:
            return
        sqs = self.context.client("sqs")
        for queue in queues:  # every queue first: a redrive policy names its dead-letter queue by ARN
            sqs.create_queue(QueueName=queue.name, Attributes=queue.attributes)
        for queue in queues:
            if queue.redrive_policy is not None:
                sqs.set_queue_attributes(
                    QueueUrl=self.url(queue), Attributes={"RedrivePolicy": json.dumps(queue.redrive_policy)}
                )
        for _, s in stack.stacks():
            for policy in s.models(QueuePolicy).values():
                text = json.dumps(policy.document)
                for url in policy.queues:  # a queue has one policy: the last written is its own, as on AWS
                    name = url.rstrip("/").rsplit("/", 1)[-1]
                    sqs.set_queue_attributes(
                        QueueUrl=sqs.get_queue_url(QueueName=name)["QueueUrl"], Attributes={"Policy": text}
                    )
        self._local_urls_in_outputs(stack, queues)

    def _local_urls_in_outputs(self, stack: Stack, queues: list[Queue]) -> None:
        """A stack output (or a listed resource) naming a queue's URL names it as the engine's endpoint answers
        GetQueueUrl (the host and port the AWS CLI prints for it), not on AWS's host: ``aws cloudformation
        describe-stacks`` and the engine's stack give a URL that works against the local endpoint, as on AWS they
        give AWS's."""
        local = {
            QUEUE_URL.format(region=s.region, account=s.account_id, name=q.name): (
                f"{self.context.endpoint_url}/{s.account_id}/{q.name}"
            )
            for _, s in stack.stacks()
            for q in queues
        }
        for _, s in stack.stacks():
            for name, value in s.outputs.items():
                if value in local:
                    s.outputs[name] = local[value]
            # ListStackResources names a queue by its URL too.
            s.listed[:] = [(lid, kind, local.get(physical, physical)) for lid, kind, physical in s.listed]

    def url(self, queue: Queue) -> str:
        return str(self.context.client("sqs").get_queue_url(QueueName=queue.name)["QueueUrl"])
