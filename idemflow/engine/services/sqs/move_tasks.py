"""SQS message move tasks: dead letters moved back (``sqs-move-tasks``, a fix).

moto 5.2.5 answers ``StartMessageMoveTask``, ``ListMessageMoveTasks`` and ``CancelMessageMoveTask`` with
NotImplementedError (an HTTP 500 page after the client's retries): the runbook's "move dead letters back"
cannot be rehearsed. What AWS does, from the SQS API reference (StartMessageMoveTask, ListMessageMoveTasks,
CancelMessageMoveTask) and requests recorded on AWS in LocalStack's AWS-validated
``tests/aws/services/sqs/test_sqs_move_task.snapshot.json`` (github.com/localstack/localstack):

* the source must be a dead-letter queue (another queue's redrive policy names it), else
  ``InvalidParameterValue`` "Source queue must be configured as a Dead Letter Queue."
  (``test_source_needs_redrive_policy``); a destination that does not exist is 404
  ``ResourceNotFoundException`` "The resource that you specified for the DestinationArn parameter doesn't
  exist." (``test_destination_needs_to_exist``); one active task per source, else ``InvalidParameterValue``
  "There is already a task running. Only one active task is allowed for a source queue arn at a given time."
  (``test_start_multiple_move_tasks``); ``MaxNumberOfMessagesPerSecond`` at most 500 (API reference);
* without ``DestinationArn`` each message goes back to the queue it was dead-lettered from
  (``test_move_task_workflow_with_default_destination``, ``..._with_multiple_sources_as_default_destination``);
* a task is ``RUNNING``, then ``COMPLETED``; ``CANCELLING`` then ``CANCELLED`` when cancelled
  (``test_move_task_cancel``); ``FAILED`` with ``FailureReason`` "AWS.SimpleQueueService.NonExistentQueue"
  when its destination is deleted (``test_move_task_delete_destination_queue_while_running``). A listed task
  has ``ApproximateNumberOfMessagesMoved``, ``ApproximateNumberOfMessagesToMove``, ``SourceArn``,
  ``StartedTimestamp``, ``Status``, and ``DestinationArn``, ``MaxNumberOfMessagesPerSecond`` when the start
  gave them, ``TaskHandle`` while it runs; the newest first, ``MaxResults`` default 1, at most 10;
* a task handle that cannot be read is ``InvalidParameterValue`` "Value for parameter TaskHandle is
  invalid."; one naming a queue that does not exist is 404 ``ResourceNotFoundException`` "The resource that
  you specified for the SourceArn parameter doesn't exist."; one naming no task of that queue, 404 "Task does
  not exist." (``test_cancel_with_invalid_*``).

The task handle is base64 of ``{"taskId", "sourceArn"}`` (the form the recorded test decodes). A message is
moved as a new message with the same body and attributes; whether AWS keeps its message id is not on record.
Each task moves its messages in a thread of its own at its rate, scaled by the engine's wait-time scale (0:
at once), and is stopped when the change is undone. Which queue each dead letter came from is noted when a
receive moves it to its dead-letter queue.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from idemflow.engine import state

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

ORIGIN_ATTR: Final = "_idemflow_dead_lettered_from"
TASKS_ATTR: Final = "_idemflow_move_tasks"
MAX_RATE: Final = 500
# Without MaxNumberOfMessagesPerSecond AWS picks the rate; here: as fast as the scale allows.
DEFAULT_RATE: Final = 500
_stopping = threading.Event()  # set when the change is undone: every task's thread ends


@dataclass
class MoveTask:
    task_id: str
    source_arn: str
    destination_arn: str | None
    rate: int | None
    to_move: int
    started_ms: int
    status: str = "RUNNING"
    moved: int = 0
    failure: str | None = None
    cancel: threading.Event = field(default_factory=threading.Event)

    @property
    def handle(self) -> str:
        raw = json.dumps({"taskId": self.task_id, "sourceArn": self.source_arn}).encode()
        return base64.b64encode(raw).decode()

    def listed(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "ApproximateNumberOfMessagesMoved": self.moved,
            "ApproximateNumberOfMessagesToMove": self.to_move,
            "SourceArn": self.source_arn,
            "StartedTimestamp": self.started_ms,
            "Status": self.status,
        }
        if self.destination_arn is not None:
            entry["DestinationArn"] = self.destination_arn
        if self.rate is not None:
            entry["MaxNumberOfMessagesPerSecond"] = self.rate
        if self.status == "RUNNING":
            entry["TaskHandle"] = self.handle
        if self.failure is not None:
            entry["FailureReason"] = self.failure
        return entry


def _error(code: str, message: str) -> Exception:
    from moto.sqs.exceptions import SQSException

    return SQSException(code, message)  # serialized with the SQS model's status for the code (400 by default)


class _NotFound(Exception):
    """``ResourceNotFoundException``, answered with HTTP 404 as AWS does (the SQS model gives it no status)."""


def _answered(response: Any, call: Callable[[], dict[str, Any]]) -> Any:
    """``call``'s result as moto's handler answers it, a :class:`_NotFound` as a 404 in the request's protocol."""
    from moto.core.responses import ActionResult

    try:
        return ActionResult(call())
    except _NotFound as exc:
        _, headers, body = response.serialized(ActionResult(_error("ResourceNotFoundException", str(exc))))
        headers["status"] = 404  # how moto's dispatch reads a status from a handler's (body, headers)
        return body, headers


def _queue_by_arn(backend: Any, arn: str) -> Any | None:
    return next((q for q in backend.queues.values() if q.queue_arn == arn), None)


def _tasks(backend: Any) -> dict[str, list[MoveTask]]:
    found: dict[str, list[MoveTask]] | None = backend.__dict__.get(TASKS_ATTR)
    if found is None:
        found = {}
        setattr(backend, TASKS_ATTR, found)
    return found


def start(backend: Any, source_arn: str, destination_arn: str | None, rate: int | None) -> MoveTask:
    source = _queue_by_arn(backend, source_arn)
    if source is None:
        raise _NotFound("The resource that you specified for the SourceArn parameter doesn't exist.")
    # By ARN, as a redrive policy names its dead-letter queue: a queue created again under its name is still it.
    named = [(q.redrive_policy or {}).get("deadLetterTargetArn") for q in backend.queues.values()]
    if source.queue_arn not in named:
        raise _error("InvalidParameterValue", "Source queue must be configured as a Dead Letter Queue.")
    if destination_arn is not None and _queue_by_arn(backend, destination_arn) is None:
        raise _NotFound("The resource that you specified for the DestinationArn parameter doesn't exist.")
    if rate is not None and not 1 <= rate <= MAX_RATE:
        raise _error(
            "InvalidParameterValue", f"Value for parameter MaxNumberOfMessagesPerSecond is invalid: 1 to {MAX_RATE}."
        )
    tasks = _tasks(backend).setdefault(source_arn, [])
    if any(t.status in ("RUNNING", "CANCELLING") for t in tasks):
        raise _error(
            "InvalidParameterValue",
            "There is already a task running. Only one active task is allowed for a source queue arn at a given time.",
        )
    to_move = sum(1 for m in list(source._messages) if m.visible)
    task = MoveTask(str(uuid.uuid4()), source_arn, destination_arn, rate, to_move, int(time.time() * 1000))
    tasks.insert(0, task)  # the newest first, as ListMessageMoveTasks lists them
    threading.Thread(target=_move, args=(backend, task), name=f"sqs-move-{task.task_id[:8]}", daemon=True).start()
    return task


def _move(backend: Any, task: MoveTask) -> None:
    """Move up to ``to_move`` visible messages (one being read is left in place), one at a time at the task's
    rate (scaled)."""
    interval = 1.0 / (task.rate or DEFAULT_RATE)
    while task.moved < task.to_move and not task.cancel.is_set() and not _stopping.is_set():
        source = _queue_by_arn(backend, task.source_arn)
        if source is None:
            break
        message = next((m for m in list(source._messages) if m.visible), None)
        if message is None:
            break
        destination_arn = task.destination_arn or getattr(message, ORIGIN_ATTR, None)
        destination = None if destination_arn is None else _queue_by_arn(backend, destination_arn)
        if destination is None:
            task.status, task.failure = "FAILED", "AWS.SimpleQueueService.NonExistentQueue"
            return
        source._messages.remove(message)
        attributes = {name: dict(value) for name, value in message.message_attributes.items()}
        backend.send_message(destination.name, message.body, message_attributes=attributes)
        task.moved += 1
        wait = interval * state.current().wait_time_scale
        if wait > 0:
            task.cancel.wait(wait)
    task.status = "CANCELLED" if task.cancel.is_set() else "COMPLETED"


def _read_handle(backend: Any, handle: str) -> MoveTask:
    try:
        decoded = json.loads(base64.b64decode(handle, validate=True))
        task_id, source_arn = str(decoded["taskId"]), str(decoded["sourceArn"])
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise _error("InvalidParameterValue", "Value for parameter TaskHandle is invalid.") from None
    if _queue_by_arn(backend, source_arn) is None:
        raise _NotFound("The resource that you specified for the SourceArn parameter doesn't exist.")
    task = next((t for t in _tasks(backend).get(source_arn, []) if t.task_id == task_id), None)
    if task is None:
        raise _NotFound("Task does not exist.")
    return task


def install_sqs_move_tasks(patch: Patch) -> None:
    from moto.sqs.models import SQSBackend
    from moto.sqs.responses import SQSResponse

    receive: Callable[..., Any] = SQSBackend.receive_message

    def receive_message(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        # Note where each message moved to the dead-letter queue came from: a move task's default destination.
        queue = self.queues.get(queue_name)
        dead = None if queue is None else queue.dead_letter_queue
        before = {id(m) for m in queue._messages} if dead is not None else set()
        result = receive(self, queue_name, *args, **kwargs)
        if dead is not None:
            for message in dead._messages:
                if id(message) in before and ORIGIN_ATTR not in message.__dict__:
                    setattr(message, ORIGIN_ATTR, queue.queue_arn)
        return result

    def start_message_move_task(self: Any) -> Any:
        def started() -> dict[str, Any]:
            rate = self._get_param("MaxNumberOfMessagesPerSecond")
            source, destination = str(self._get_param("SourceArn")), self._get_param("DestinationArn")
            return {
                "TaskHandle": start(self.sqs_backend, source, destination, None if rate is None else int(rate)).handle
            }

        return _answered(self, started)

    def list_message_move_tasks(self: Any) -> Any:
        def listed() -> dict[str, Any]:
            source_arn = str(self._get_param("SourceArn"))
            if _queue_by_arn(self.sqs_backend, source_arn) is None:
                raise _NotFound("The resource that you specified for the SourceArn parameter doesn't exist.")
            limit = int(self._get_param("MaxResults") or 1)
            if not 1 <= limit <= 10:
                raise _error("InvalidParameterValue", "Value for parameter MaxResults is invalid: 1 to 10.")
            return {"Results": [t.listed() for t in _tasks(self.sqs_backend).get(source_arn, [])[:limit]]}

        return _answered(self, listed)

    def cancel_message_move_task(self: Any) -> Any:
        def cancelled() -> dict[str, Any]:
            task = _read_handle(self.sqs_backend, str(self._get_param("TaskHandle")))
            if task.status == "RUNNING":
                task.status = "CANCELLING"
                task.cancel.set()
            return {"ApproximateNumberOfMessagesMoved": task.moved}

        return _answered(self, cancelled)

    _stopping.clear()
    patch.set(SQSBackend, "receive_message", receive_message)
    patch.set(SQSResponse, "start_message_move_task", start_message_move_task)
    patch.set(SQSResponse, "list_message_move_tasks", list_message_move_tasks)
    patch.set(SQSResponse, "cancel_message_move_task", cancel_message_move_task)
    patch.on_undo(_stopping.set)
