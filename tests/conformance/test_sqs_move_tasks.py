"""SQS message move tasks: the runbook's "move dead letters back" (``aws sqs start-message-move-task``).

Sources: the SQS API reference (StartMessageMoveTask, ListMessageMoveTasks, CancelMessageMoveTask) and the
requests recorded on AWS in LocalStack's AWS-validated tests/aws/services/sqs/test_sqs_move_task.snapshot.json
(github.com/localstack/localstack), named in each test.
"""

from __future__ import annotations

import base64
import contextlib
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.conformance.harness import Target
from tests.polling import wait_until


@pytest.fixture
def queues(target: Target) -> Iterator[Callable[..., str]]:
    sqs = target.client("sqs")
    made: list[str] = []

    def make(**attributes: str) -> str:
        url = str(sqs.create_queue(QueueName=f"move-{uuid.uuid4().hex[:12]}", Attributes=attributes)["QueueUrl"])
        made.append(url)
        return url

    yield make
    for url in made:
        with contextlib.suppress(ClientError):  # a test deleted it
            sqs.delete_queue(QueueUrl=url)


def arn(target: Target, url: str) -> str:
    return str(
        target.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    )


def dead_lettered(target: Target, make: Callable[..., str], bodies: list[str]) -> tuple[str, str]:
    """A queue whose messages go to its dead-letter queue after one receive, and ``bodies`` dead-lettered."""
    sqs = target.client("sqs")
    dlq = make()
    policy = json.dumps({"deadLetterTargetArn": arn(target, dlq), "maxReceiveCount": 1})
    source = make(RedrivePolicy=policy)
    for body in bodies:
        sqs.send_message(QueueUrl=source, MessageBody=body)
    for _ in range(2 * len(bodies)):  # each message received twice: the second receive moves it
        sqs.receive_message(QueueUrl=source, VisibilityTimeout=0, MaxNumberOfMessages=10)
    wait_until(lambda: count(target, dlq) == len(bodies), 10, what="the messages to reach the dead-letter queue")
    return source, dlq


def count(target: Target, url: str) -> int:
    attributes = target.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def drain(target: Target, url: str) -> list[str]:
    sqs, bodies = target.client("sqs"), []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            bodies.append(message["Body"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return sorted(bodies)


def refusal(call: Callable[[], Any]) -> tuple[int, str, str]:
    with pytest.raises(ClientError) as refused:
        call()
    response = refused.value.response
    return response["ResponseMetadata"]["HTTPStatusCode"], response["Error"]["Code"], response["Error"]["Message"]


def finished(target: Target, source_arn: str) -> dict[str, Any]:
    sqs = target.client("sqs")
    wait_until(
        lambda: (
            sqs.list_message_move_tasks(SourceArn=source_arn)["Results"][0]["Status"] not in ("RUNNING", "CANCELLING")
        ),
        10,
        what="the move task to end",
    )
    task: dict[str, Any] = sqs.list_message_move_tasks(SourceArn=source_arn)["Results"][0]
    return task


def test_a_move_task_moves_every_dead_letter_to_the_destination_and_completes(
    target: Target, queues: Callable[..., str]
) -> None:
    # test_basic_move_task_workflow: the handle decodes to a task id (a UUID) and the source's ARN; the task
    # lists COMPLETED with 2 of 2 moved, its DestinationArn, and no TaskHandle once it has ended.
    _, dlq = dead_lettered(target, queues, ["message-1", "message-2"])
    destination = queues()
    source_arn, destination_arn = arn(target, dlq), arn(target, destination)

    handle = target.client("sqs").start_message_move_task(SourceArn=source_arn, DestinationArn=destination_arn)[
        "TaskHandle"
    ]

    decoded = json.loads(base64.b64decode(handle))
    assert uuid.UUID(decoded["taskId"]) and decoded["sourceArn"] == source_arn
    task = finished(target, source_arn)
    assert {k: v for k, v in task.items() if k != "StartedTimestamp"} == {
        "ApproximateNumberOfMessagesMoved": 2,
        "ApproximateNumberOfMessagesToMove": 2,
        "DestinationArn": destination_arn,
        "SourceArn": source_arn,
        "Status": "COMPLETED",
    }
    assert isinstance(task["StartedTimestamp"], int)
    assert drain(target, destination) == ["message-1", "message-2"]
    assert count(target, dlq) == 0


def test_without_a_destination_each_dead_letter_goes_back_to_the_queue_it_came_from(
    target: Target, queues: Callable[..., str]
) -> None:
    # test_move_task_workflow_with_multiple_sources_as_default_destination: two queues share one dead-letter
    # queue; 4 of 4 moved, no DestinationArn listed.
    sqs = target.client("sqs")
    first, dlq = dead_lettered(target, queues, ["a-1", "a-2"])
    policy = json.dumps({"deadLetterTargetArn": arn(target, dlq), "maxReceiveCount": 1})
    second = queues(RedrivePolicy=policy)
    for body in ("b-1", "b-2"):
        sqs.send_message(QueueUrl=second, MessageBody=body)
    for _ in range(4):
        sqs.receive_message(QueueUrl=second, VisibilityTimeout=0, MaxNumberOfMessages=10)
    wait_until(lambda: count(target, dlq) == 4, 10, what="four dead letters")

    sqs.start_message_move_task(SourceArn=arn(target, dlq))

    task = finished(target, arn(target, dlq))
    assert (task["Status"], task["ApproximateNumberOfMessagesMoved"], "DestinationArn" in task) == (
        "COMPLETED",
        4,
        False,
    )
    assert (drain(target, first), drain(target, second)) == (["a-1", "a-2"], ["b-1", "b-2"])


def test_what_a_move_task_refuses(target: Target, queues: Callable[..., str]) -> None:
    sqs = target.client("sqs")
    plain, destination = queues(), queues()
    _, dlq = dead_lettered(target, queues, ["m"])
    # test_source_needs_redrive_policy
    assert refusal(
        lambda: sqs.start_message_move_task(SourceArn=arn(target, plain), DestinationArn=arn(target, destination))
    ) == (
        400,
        "InvalidParameterValue",
        "Source queue must be configured as a Dead Letter Queue.",
    )
    # test_destination_needs_to_exist
    missing = arn(target, destination) + "doesntexist"
    assert refusal(lambda: sqs.start_message_move_task(SourceArn=arn(target, dlq), DestinationArn=missing)) == (
        404,
        "ResourceNotFoundException",
        "The resource that you specified for the DestinationArn parameter doesn't exist.",
    )
    # test_cancel_with_invalid_task_handle
    assert refusal(lambda: sqs.cancel_message_move_task(TaskHandle="foobared")) == (
        400,
        "InvalidParameterValue",
        "Value for parameter TaskHandle is invalid.",
    )

    # test_cancel_with_invalid_source_arn_in_task_handle, test_cancel_with_invalid_task_id_in_task_handle
    def handle(source_arn: str) -> str:
        return base64.b64encode(json.dumps({"taskId": str(uuid.uuid4()), "sourceArn": source_arn}).encode()).decode()

    gone = arn(target, plain).rsplit(":", 1)[0] + ":test-queue-doesnt-exist-123456"
    assert refusal(lambda: sqs.cancel_message_move_task(TaskHandle=handle(gone))) == (
        404,
        "ResourceNotFoundException",
        "The resource that you specified for the SourceArn parameter doesn't exist.",
    )
    assert refusal(lambda: sqs.cancel_message_move_task(TaskHandle=handle(arn(target, plain)))) == (
        404,
        "ResourceNotFoundException",
        "Task does not exist.",
    )


def test_one_active_task_per_source_and_a_cancelled_task_keeps_the_rest(
    target: Target, queues: Callable[..., str], embedded_only: None
) -> None:
    # test_start_multiple_move_tasks and test_move_task_cancel: while one runs (MaxNumberOfMessagesPerSecond 1,
    # at the engine's real wait scale), a second start is refused; cancelled, it lists CANCELLED with what it
    # moved, and the rest stays in the dead-letter queue.
    from idemflow.engine import state

    sqs = target.client("sqs")
    _, dlq = dead_lettered(target, queues, [f"m-{i}" for i in range(10)])
    destination = queues()
    source_arn, destination_arn = arn(target, dlq), arn(target, destination)
    scale = state.current().wait_time_scale
    state.update(wait_time_scale=1.0)
    try:
        handle = sqs.start_message_move_task(
            SourceArn=source_arn, DestinationArn=destination_arn, MaxNumberOfMessagesPerSecond=1
        )["TaskHandle"]
        running = sqs.list_message_move_tasks(SourceArn=source_arn)["Results"][0]
        assert (running["Status"], running["TaskHandle"], running["MaxNumberOfMessagesPerSecond"]) == (
            "RUNNING",
            handle,
            1,
        )
        assert refusal(lambda: sqs.start_message_move_task(SourceArn=source_arn, DestinationArn=destination_arn)) == (
            400,
            "InvalidParameterValue",
            "There is already a task running. Only one active task is allowed for a source queue arn at a given time.",
        )
        cancelled = sqs.cancel_message_move_task(TaskHandle=handle)
    finally:
        state.update(wait_time_scale=scale)

    task = finished(target, source_arn)
    assert task["Status"] == "CANCELLED" and "TaskHandle" not in task
    assert task["ApproximateNumberOfMessagesMoved"] >= cancelled["ApproximateNumberOfMessagesMoved"]
    moved = drain(target, destination)
    assert len(moved) == task["ApproximateNumberOfMessagesMoved"] < 10
    assert count(target, dlq) == 10 - len(moved)
