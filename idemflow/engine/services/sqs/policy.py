"""A queue's policy as moto keeps it: what a service sending to the queue (SNS, EventBridge) is decided against."""

from __future__ import annotations

import json
from typing import Any


def queue_policy(queue_arn: str) -> tuple[bool, dict[str, Any] | None]:
    """Whether the queue exists, and its policy as moto keeps it (its ``Policy`` attribute; None: it has none)."""
    from moto.sqs.models import sqs_backends

    _, _, _, region, account, name = queue_arn.split(":", 5)
    queue = sqs_backends[account][region].queues.get(name)
    if queue is None:
        return False, None
    text = queue.policy
    return True, json.loads(text) if text else None
