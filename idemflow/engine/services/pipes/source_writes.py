"""A write to a pipe's source wakes the pipes' pollers (``source-writes``, a hook).

Nothing in moto signals that a queue received a message or a stream a record: a poller would read its source
every few milliseconds, and an idle engine with a queue door and a stream door spent a fifth of a core doing
so (`idemflow serve` too). The hook counts the writes that can give a poller something to read (a message
added to a queue: sent, published to it by SNS, moved back from a dead-letter queue; a Kinesis record; a
DynamoDB stream record) and wakes whoever waits (:func:`wait_for_write`). A message whose visibility timeout
ends is no write: a poller still looks again after :data:`IDLE_WAIT` at the latest.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

IDLE_WAIT = 0.1
"""The longest a poller with nothing to read waits before it reads its source again (real seconds)."""


class _Writes:
    """The count of source writes, and a condition to wait on for the next one."""

    def __init__(self) -> None:
        self.condition = threading.Condition()
        self.count = 0

    def wrote(self) -> None:
        with self.condition:
            self.count += 1
            self.condition.notify_all()


_WRITES = _Writes()


def writes() -> int:
    """How many source writes the hook has seen: take it before reading, then wait for it to change."""
    with _WRITES.condition:
        return _WRITES.count


def wait_for_write(seen: int, timeout: float = IDLE_WAIT) -> None:
    """Return once a source was written after ``seen`` (:func:`writes`), or after ``timeout`` seconds."""
    with _WRITES.condition:
        _WRITES.condition.wait_for(lambda: _WRITES.count != seen, timeout)


def _after(operation: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(operation)
    def then_wake(*args: Any, **kwargs: Any) -> Any:
        try:
            return operation(*args, **kwargs)
        finally:
            _WRITES.wrote()

    return then_wake


def install_source_writes(patch: Patch) -> None:
    from moto.dynamodb.models.table import StreamShard
    from moto.kinesis.models import Shard
    from moto.sqs.models import Queue

    for owner, operation in ((Queue, "add_message"), (Shard, "put_record"), (StreamShard, "add")):
        patch.set(owner, operation, _after(getattr(owner, operation)))
