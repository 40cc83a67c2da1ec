"""A queue deleted and created again (``sqs-recreated-queues``, a fix): what an operator does when a dead-letter
queue was deleted by mistake (docs/runbook.md, "Rehearse it on the engine").

* **Not at once.** AWS, DeleteQueue: "When you delete a queue, you must wait at least 60 seconds before creating
  a queue with the same name"; CreateQueue's error ``QueueDeletedRecently``: "You must wait 60 seconds after
  deleting a queue before you can create another queue with the same name." (SQS API reference). moto 5.2.5
  creates it at once. Here the 60 seconds are scaled by the engine's wait-time scale, as its other waits are.
* **By its ARN.** A redrive policy names its dead-letter queue by ARN (``deadLetterTargetArn``, SQS API
  reference, SetQueueAttributes), and a queue created again with the same name has the same ARN. moto 5.2.5
  keeps the *object* the policy pointed to when it was set: once that queue is deleted and created again,
  messages past ``maxReceiveCount`` go into the deleted queue, where nobody can ever read them. Here each
  receive finds the dead-letter queue by the policy's ARN (none while it does not exist: the message stays on
  its queue, as SQS moves nothing to a queue that is not there).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from idemflow.engine import state

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

DELETED_ATTR: Final = "_idemflow_deleted_queues"
"""On moto's SQS backend: ``{queue name: monotonic time of its deletion}``."""
RECREATE_AFTER_SECONDS: Final = 60.0
DELETED_RECENTLY: Final = (
    "You must wait 60 seconds after deleting a queue before you can create another queue with the same name."
)
_lock = threading.Lock()


def dead_letter_target(backend: Any, queue: Any) -> Any:
    """The queue that ``queue``'s redrive policy names by ARN, as it exists now (None: no policy, or no such queue)."""
    policy = queue.redrive_policy if isinstance(queue.redrive_policy, dict) else None
    arn = None if policy is None else policy.get("deadLetterTargetArn")
    if arn is None:
        return None
    return next((q for q in backend.queues.values() if q.queue_arn == arn), None)


def install_sqs_recreated_queues(patch: Patch) -> None:
    from moto.sqs.exceptions import SQSException
    from moto.sqs.models import SQSBackend

    delete: Callable[..., Any] = SQSBackend.delete_queue
    create: Callable[..., Any] = SQSBackend.create_queue
    receive: Callable[..., Any] = SQSBackend.receive_message

    def delete_queue(self: Any, queue_name: str) -> None:
        delete(self, queue_name)
        with _lock:
            self.__dict__.setdefault(DELETED_ATTR, {})[queue_name] = time.monotonic()

    def create_queue(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        with _lock:
            deleted = self.__dict__.get(DELETED_ATTR, {}).get(name)
        wait = RECREATE_AFTER_SECONDS * state.current().wait_time_scale
        if deleted is not None and name not in self.queues and time.monotonic() - deleted < wait:
            raise SQSException("QueueDeletedRecently", DELETED_RECENTLY)
        return create(self, name, *args, **kwargs)

    def receive_message(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        queue = self.queues.get(queue_name)
        if queue is not None and queue.redrive_policy:
            queue.dead_letter_queue = dead_letter_target(self, queue)
        return receive(self, queue_name, *args, **kwargs)

    patch.set(SQSBackend, "delete_queue", delete_queue)
    patch.set(SQSBackend, "create_queue", create_queue)
    patch.set(SQSBackend, "receive_message", receive_message)
