"""A queue deleted and created again under its name: what an operator does when a dead-letter queue was deleted
by mistake (docs/runbook.md).

Sources: the SQS API reference: DeleteQueue ("When you delete a queue, you must wait at least 60 seconds before
creating a queue with the same name"), CreateQueue's error QueueDeletedRecently ("You must wait 60 seconds after
deleting a queue before you can create another queue with the same name"), SetQueueAttributes' RedrivePolicy
(``deadLetterTargetArn``: "The Amazon Resource Name (ARN) of the dead-letter queue to which Amazon SQS moves
messages after the value of maxReceiveCount is exceeded"). A queue's ARN is made of its region, account and
name: the queue created again is the one the policy names.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Iterator

import pytest
from botocore.exceptions import ClientError

from idemflow.engine import state
from tests.conformance.harness import Target
from tests.conformance.test_sqs_move_tasks import arn, count, drain
from tests.polling import wait_until


@pytest.fixture
def names(target: Target) -> Iterator[Callable[[], str]]:
    made: list[str] = []

    def name() -> str:
        made.append(f"again-{uuid.uuid4().hex[:12]}")
        return made[-1]

    yield name
    sqs = target.client("sqs")
    for queue in made:
        with contextlib.suppress(ClientError):
            sqs.delete_queue(QueueUrl=sqs.get_queue_url(QueueName=queue)["QueueUrl"])


def test_a_deleted_queue_is_not_created_again_under_its_name_for_60_seconds(
    target: Target, names: Callable[[], str]
) -> None:
    sqs, name = target.client("sqs"), names()
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    sqs.delete_queue(QueueUrl=url)
    if target.embedded:
        state.update(wait_time_scale=1.0)  # the engine's 60 seconds, unscaled
    try:
        with pytest.raises(ClientError) as refused:
            sqs.create_queue(QueueName=name)
    finally:
        if target.embedded:
            state.update(wait_time_scale=0.0)

    # The JSON protocol's error QueueDeletedRecently; boto3 reports the code of the query API that SQS sends
    # beside it (x-amzn-query-error, the model's awsQueryCompatible), AWS.SimpleQueueService.QueueDeletedRecently.
    assert refused.value.response["Error"]["Code"] in (
        "QueueDeletedRecently",
        "AWS.SimpleQueueService.QueueDeletedRecently",
    )
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_a_dead_letter_queue_created_again_is_the_one_its_queues_dead_letter_to(
    target: Target, names: Callable[[], str], embedded_only: None
) -> None:
    # Embedded only: on AWS the queue is created again 60 seconds later; the engine's wait scale is 0 here.
    sqs = target.client("sqs")
    dlq_name = names()
    dlq = sqs.create_queue(QueueName=dlq_name)["QueueUrl"]
    policy = json.dumps({"deadLetterTargetArn": arn(target, dlq), "maxReceiveCount": 1})
    source = sqs.create_queue(QueueName=names(), Attributes={"RedrivePolicy": policy})["QueueUrl"]
    sqs.delete_queue(QueueUrl=dlq)
    again = sqs.create_queue(QueueName=dlq_name)["QueueUrl"]

    sqs.send_message(QueueUrl=source, MessageBody="lost?")
    for _ in range(2):  # the second receive moves it
        sqs.receive_message(QueueUrl=source, VisibilityTimeout=0)
    wait_until(lambda: count(target, again) == 1, 10, what="the message to reach the dead-letter queue")

    assert again == dlq and drain(target, again) == ["lost?"]
    # And a move task accepts it as the dead-letter queue it is.
    task = sqs.start_message_move_task(SourceArn=arn(target, again), DestinationArn=arn(target, source))
    assert task["TaskHandle"]
