"""SNS delivers to an SQS queue only as the queue's policy lets it (``sns-queue-policy``, a hook).

What AWS documents:

* SNS sends to a subscribed queue as the service principal ``sns.amazonaws.com``, and the queue's policy
  (``AWS::SQS::QueuePolicy``, the queue's ``Policy`` attribute) must allow it ``sqs:SendMessage``, scoped by the
  topic with ``aws:SourceArn`` (SNS Developer Guide, "Example cases for Amazon SNS access control", "Publish
  messages to an Amazon SQS queue", https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html;
  "Subscribing an Amazon SQS queue to an Amazon SNS topic", step "Give permission to the Amazon SNS topic to send
  messages to the Amazon SQS queue", https://docs.aws.amazon.com/sns/latest/dg/subscribe-sqs-queue-to-sns-topic.html).
  The request's condition keys are the topic's ARN (``aws:SourceArn``) and account (``aws:SourceAccount``); the
  decision is IAM's (:class:`~idemflow.engine.services.iam.evaluation.Evaluator`, a service principal: no
  identity-based policy, only the queue's own can allow it).
* A delivery the queue's policy refuses is a client-side error: SNS "doesn't retry the message delivery that fails
  as a result of a client-side error", whose example is an owner who "changes the policy attached to the subscribed
  endpoint in a way that prevents Amazon SNS from delivering messages to the endpoint" (SNS Developer Guide,
  "Amazon SNS dead-letter queues (DLQs)", https://docs.aws.amazon.com/sns/latest/dg/sns-dead-letter-queues.html):
  the message goes to the subscription's dead-letter queue, which the ``sns-delivery`` fix does for this error as
  for a deleted queue, and the dead-letter queue's own policy must let SNS send there too ("Configuring an Amazon
  SNS dead-letter queue for a subscription", its queue policy for the dead-letter queue); else it is dropped.
  The publisher's call succeeds either way.

A message the subscription's filter policy leaves out is not a delivery: moto drops it, as SNS does. Nothing is
decided when permissions are off (no authorizer attached).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from idemflow.engine import state as engine_state
from idemflow.engine.errors import DeliveryRefused
from idemflow.engine.services.sqs.policy import queue_policy

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

SNS_PRINCIPAL = "sns.amazonaws.com"


def install_sns_queue_policy(patch: Patch) -> None:
    from moto.sns.models import Subscription

    publish = Subscription.publish

    def _publish(self: Any, message: str, message_id: str, *args: Any, **kwargs: Any) -> None:
        authorizer = engine_state.current().authorizer
        if authorizer is not None and self.protocol == "sqs":
            attributes = kwargs.get("message_attributes", args[1] if len(args) > 1 else None)
            matcher = self._filter_policy_matcher
            exists, policy = queue_policy(self.endpoint)
            if exists and (matcher is None or matcher.matches(attributes, message)):  # a gone queue fails as moto's
                topic = self.topic.arn
                decision = authorizer.decide_service(
                    SNS_PRINCIPAL,
                    "sqs:SendMessage",
                    self.endpoint,
                    policy,
                    **{"aws:SourceArn": topic, "aws:SourceAccount": topic.split(":")[4]},
                )
                if decision is not None and not decision.allowed:
                    raise DeliveryRefused(decision.message)
        publish(self, message, message_id, *args, **kwargs)

    patch.set(Subscription, "publish", _publish)
