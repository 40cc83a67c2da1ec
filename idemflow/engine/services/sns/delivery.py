"""SNS's delivery to an SQS queue (``sns-delivery``, a fix): what a topic in front of the queue door relies on.

Sources: executions recorded on AWS in LocalStack's AWS-validated snapshots (``LS``:
github.com/localstack/localstack, tests/aws/services/sns/test_sns.snapshot.json) and the SNS developer guide's
"Amazon SNS dead-letter queues (DLQs)" page (sns-dead-letter-queues.html).

* **A delivery that fails never fails the publish.** Publish answers once SNS has the message; delivering it
  is SNS's business: "a message that can't be delivered to its subscriber ... because of a client-side error
  ... is moved to the dead-letter queue" of its subscription (the guide; a deleted queue is its example of a
  client-side error), and without one it is dropped. LS, ``TestSNSSubscriptionSQS::
  test_redrive_policy_sqs_queue_subscription``: the subscribed queue deleted, the message published lands on
  the subscription's dead-letter queue, as the SNS envelope (the raw message with ``RawMessageDelivery``).
  moto 5.2.5 sends to the queue inside Publish: a deleted queue fails the *publisher's* call with
  ``AWS.SimpleQueueService.NonExistentQueue`` and the message goes nowhere, so a producer that reads the error
  as "not sent" sends it again.
* **The envelope names its subscription.** Its ``UnsubscribeURL`` is the topic's region's endpoint with the
  subscription's own ARN (LS, ``test_publish_sqs_from_sns``: ``.../?Action=Unsubscribe&SubscriptionArn=
  <topic ARN>:<subscription id>``); moto 5.2.5 writes us-east-1 and a fixed subscription id for every
  subscription.

Not changed: moto signs with SignatureVersion 2 (SHA256) where AWS's default is 1 (SHA1; LS records "1"); this
project's doors do not check signatures.
"""

from __future__ import annotations

import copy
import json
import logging
from typing import TYPE_CHECKING, Any

from idemflow.engine.errors import DeliveryRefused

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

LOG = logging.getLogger(__name__)


def _dead_letter_arn(subscription: Any) -> str | None:
    policy = subscription.attributes.get("RedrivePolicy")
    if isinstance(policy, str):
        try:
            policy = json.loads(policy)
        except ValueError:
            return None
    return policy.get("deadLetterTargetArn") if isinstance(policy, dict) else None


def install_sns_delivery(patch: Patch) -> None:
    from moto.sns.models import Subscription
    from moto.sqs.exceptions import QueueDoesNotExist

    # A queue whose policy does not let the topic send is a client-side error as a deleted one is
    # (``sns-queue-policy``, installed before this fix, raises it).
    client_side = (QueueDoesNotExist, DeliveryRefused)
    publish = Subscription.publish
    post_data = Subscription.get_post_data

    def _publish(self: Any, message: str, message_id: str, *args: Any, **kwargs: Any) -> None:
        try:
            publish(self, message, message_id, *args, **kwargs)
        except client_side as failed:  # an SQS endpoint's client-side error: to the dead-letter queue
            arn = _dead_letter_arn(self)
            if arn is None:
                LOG.info("SNS dropped message %s for %s: %s (no dead-letter queue)", message_id, self.endpoint, failed)
                return
            # The same delivery (raw or the envelope alike) to the dead-letter queue: a copy of the subscription
            # with that endpoint, so that a publish going on at once still reaches the subscribed queue.
            to_dead_letters = copy.copy(self)
            to_dead_letters.endpoint = arn
            try:
                publish(to_dead_letters, message, message_id, *args, **kwargs)
            except client_side as lost:
                LOG.info("SNS dropped message %s: its dead-letter queue %s: %s", message_id, arn, lost)

    def _get_post_data(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        data: dict[str, Any] = post_data(self, *args, **kwargs)
        region = self.topic.arn.split(":")[3]
        data["UnsubscribeURL"] = f"https://sns.{region}.amazonaws.com/?Action=Unsubscribe&SubscriptionArn={self.arn}"
        return data

    patch.set(Subscription, "publish", _publish)
    patch.set(Subscription, "get_post_data", _get_post_data)
