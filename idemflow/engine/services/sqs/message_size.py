"""An SQS message's size as SQS counts it (``sqs-message-size``).

AWS: "All parts of the message attribute, including name, type, and value, are included in the message size
restriction" (SQS developer guide, message attributes); the queue's ``MaximumMessageSize`` is in bytes
(CreateQueue: 1,024 to 1,048,576). Recorded on AWS (LocalStack's AWS-validated tests/aws/services/sqs/
test_sqs.snapshot.json): ``test_send_message_with_updated_maximum_message_size`` refuses a body of
``MaximumMessageSize - len("k" + "String" + "x") + 1`` bytes sent with the attribute ``k`` = ``x``, HTTP 400
``InvalidParameterValue`` "One or more parameters are invalid. Reason: Message must be shorter than 1024
bytes."; ``test_send_batch_message_size`` answers such an entry of SendMessageBatch in ``Failed`` (code
``InvalidParameterValue``, sender's fault, "One or more parameters cannot be validated. Reason: Message must be
shorter than 1024 bytes.") and sends the others. moto 5.2.5 counts the body's characters alone, so a body of
non-ASCII text or with attributes passes a queue's limit that AWS enforces, and a batch with one such entry
fails whole.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch


def message_size(body: str, attributes: dict[str, Any] | None) -> int:
    """Bytes SQS counts for a message: its body and each attribute's name, type and value."""
    size = len(body.encode("utf-8"))
    for name, attribute in (attributes or {}).items():
        value = attribute.get("StringValue")
        if value is None:
            binary = attribute.get("BinaryValue", b"")
            if isinstance(binary, str):
                try:
                    binary = base64.b64decode(binary, validate=True)
                except binascii.Error:
                    binary = binary.encode("utf-8")
            size += len(binary)
        else:
            size += len(str(value).encode("utf-8"))
        size += len(name.encode("utf-8")) + len(str(attribute.get("DataType", "")).encode("utf-8"))
    return size


def install_sqs_message_size(patch: Patch) -> None:
    from moto.sqs.exceptions import InvalidParameterValue
    from moto.sqs.models import SQSBackend

    send: Callable[..., Any] = SQSBackend.__dict__["send_message"]
    send_batch: Callable[..., Any] = SQSBackend.__dict__["send_message_batch"]

    def too_large(backend: Any, queue_name: str, body: str, attributes: dict[str, Any] | None) -> int | None:
        limit = int(backend.get_queue(queue_name).maximum_message_size)
        return limit if message_size(body, attributes) > limit else None

    @functools.wraps(send)
    def send_message(
        self: Any, queue_name: str, message_body: str, message_attributes: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        limit = too_large(self, queue_name, message_body, message_attributes)
        if limit is not None:
            raise InvalidParameterValue(
                f"One or more parameters are invalid. Reason: Message must be shorter than {limit} bytes."
            )
        return send(self, queue_name, message_body, message_attributes, *args, **kwargs)

    @functools.wraps(send_batch)
    def send_message_batch(self: Any, queue_name: str, entries: dict[str, dict[str, Any]]) -> Any:
        refused: list[dict[str, Any]] = []
        kept: dict[str, dict[str, Any]] = {}
        for key, entry in entries.items():
            limit = too_large(self, queue_name, entry["MessageBody"], entry.get("MessageAttributes"))
            if limit is None:
                kept[key] = entry
                continue
            message = f"One or more parameters cannot be validated. Reason: Message must be shorter than {limit} bytes."
            refused.append(
                {"Id": entry["Id"], "SenderFault": True, "Code": "InvalidParameterValue", "Message": message}
            )
        if not kept:
            return [], refused
        messages, failed = send_batch(self, queue_name, kept)
        return messages, [*failed, *refused]

    patch.set(SQSBackend, "send_message", send_message)
    patch.set(SQSBackend, "send_message_batch", send_message_batch)
