"""The end of an execution sets an event (``execution-end``, a hook).

Nothing in moto signals that an execution ended: the engine would poll DescribeExecution, and tight
polling starves the interpreter's threads through the GIL. The hook runs after moto's own
``terminated`` (which writes the final status): it tells an installed gate (``tasks.py``), sets the
execution's event (:func:`execution_done`) and keeps the execution as the engine's retention says
(:mod:`.retention`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from idemflow.engine import state
from idemflow.engine.services.stepfunctions import retention

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

# Events of executions nobody waits for (started by another client, e.g. against `idemflow serve`)
# would pile up: only the most recent ones are kept.
MAX_DONE_EVENTS = 10_000
_lock = threading.Lock()
_done: dict[str, threading.Event] = {}


def execution_done(execution_arn: str) -> threading.Event:
    """An event set when the execution ends (any status). Only executions started with the hook installed."""
    with _lock:
        return _done.setdefault(execution_arn, threading.Event())


def forget_execution(execution_arn: str) -> None:
    with _lock:
        _done.pop(execution_arn, None)


def ended(execution_arn: str) -> None:
    """What the hook does once moto has written the execution's final status."""
    gate = state.current().gate
    if gate is not None:
        gate.ended(execution_arn)
    with _lock:
        event = _done.setdefault(execution_arn, threading.Event())
        while len(_done) > MAX_DONE_EVENTS:
            del _done[next(iter(_done))]  # dicts keep insertion order: the oldest goes first
    event.set()


def install_execution_end(patch: Patch) -> None:
    from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication

    original = BaseExecutionWorkerCommunication.terminated

    def terminated(self: Any) -> None:
        original(self)
        # Past the engine's retention: gone, as on AWS; before the event is set, so that a caller woken by it
        # finds the executions the retention keeps.
        evicted = retention.closed(self.execution)
        ended(self.execution.exec_arn)
        for arn in evicted:
            forget_execution(arn)

    patch.set(BaseExecutionWorkerCommunication, "terminated", terminated)
