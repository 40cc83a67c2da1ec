"""SQS message sizes, as the queue door's MaximumMessageSize relies on them.

Sources: the SQS developer guide ("All parts of the message attribute, including name, type, and value, are
included in the message size restriction"), CreateQueue's MaximumMessageSize (bytes, 1,024 to 1,048,576), and
requests recorded on AWS in LocalStack's AWS-validated tests/aws/services/sqs/test_sqs.snapshot.json
(github.com/localstack/localstack): ``test_send_message_with_updated_maximum_message_size`` and
``test_send_batch_message_size``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.conformance.harness import Target

LIMIT = 1024
ATTRIBUTE = {"k": {"DataType": "String", "StringValue": "x"}}  # counts len("k" + "String" + "x") = 8 bytes


@pytest.fixture
def queue(target: Target) -> Iterator[str]:
    sqs = target.client("sqs")
    url = str(
        sqs.create_queue(
            QueueName=f"conformance-{uuid.uuid4().hex[:12]}", Attributes={"MaximumMessageSize": str(LIMIT)}
        )["QueueUrl"]
    )
    try:
        yield url
    finally:
        sqs.delete_queue(QueueUrl=url)


def _refusal(send: Any) -> dict[str, Any] | None:
    try:
        send()
    except ClientError as exc:
        return dict(exc.response["Error"])
    return None


def test_a_message_over_the_queues_size_counting_its_attributes_is_refused(target: Target, queue: str) -> None:
    sqs = target.client("sqs")
    # test_send_message_with_updated_maximum_message_size (recorded 19-08-2025): a body of LIMIT - 8 + 1 bytes
    # with the attribute k = x is refused: 400 InvalidParameterValue, "One or more parameters are invalid.
    # Reason: Message must be shorter than 1024 bytes."
    refused = _refusal(
        lambda: sqs.send_message(QueueUrl=queue, MessageBody="a" * (LIMIT - 8 + 1), MessageAttributes=ATTRIBUTE)
    )
    assert refused is not None and refused["Code"] == "InvalidParameterValue"
    assert (
        refused["Message"] == f"One or more parameters are invalid. Reason: Message must be shorter than {LIMIT} bytes."
    )
    # The size is in bytes: 513 two-byte characters are over, though 513 characters are not.
    assert _refusal(lambda: sqs.send_message(QueueUrl=queue, MessageBody="é" * (LIMIT // 2 + 1))) is not None
    # Exactly the limit is sent.
    sqs.send_message(QueueUrl=queue, MessageBody="a" * (LIMIT - 8), MessageAttributes=ATTRIBUTE)
    sqs.send_message(QueueUrl=queue, MessageBody="é" * (LIMIT // 2))


def test_a_batch_entry_over_the_size_fails_alone(target: Target, queue: str) -> None:
    # test_send_batch_message_size (recorded): the entry over the size is in Failed with InvalidParameterValue,
    # SenderFault true, "One or more parameters cannot be validated. Reason: Message must be shorter than 1024
    # bytes."; the other entries are sent.
    answer = target.client("sqs").send_message_batch(
        QueueUrl=queue,
        Entries=[
            {"Id": "fits", "MessageBody": "a" * (LIMIT - 8), "MessageAttributes": ATTRIBUTE},
            {"Id": "over", "MessageBody": "a" * (LIMIT - 8 + 1), "MessageAttributes": ATTRIBUTE},
        ],
    )
    assert [s["Id"] for s in answer.get("Successful", [])] == ["fits"]
    (failed,) = answer["Failed"]
    assert (failed["Id"], failed["Code"], failed["SenderFault"]) == ("over", "InvalidParameterValue", True)
    assert failed["Message"] == (
        f"One or more parameters cannot be validated. Reason: Message must be shorter than {LIMIT} bytes."
    )
