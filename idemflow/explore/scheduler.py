"""A deterministic scheduler for the interpreter's requests.

Installed as the engine's :class:`~idemflow.engine.Gate`, it holds every request of the
executions it tracks (executions whose name carries its tag) until it is granted, so the order in which
concurrent executions reach DynamoDB, Lambda and Step Functions (a StartExecution) is chosen, one request at a
time, instead of left to thread timing. Between two grants every tracked execution is either waiting here or
has ended: the state it is in is a function of the choices made so far, which is what makes a schedule
replayable.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from idemflow.engine.state import TaskRequest
from idemflow.explore.errors import ExecutionStoppedError, SchedulerHangError

Phase = Literal["before", "after"]


@dataclass
class Pending:
    """A request waiting for its turn, in the execution's thread."""

    request: TaskRequest
    phase: Phase
    granted: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


class Scheduler:
    """Holds the requests of tracked executions until :meth:`grant` lets one through."""

    def __init__(self, is_scheduling_point_after: Callable[[TaskRequest], bool]):
        self._after = is_scheduling_point_after
        self._cond = threading.Condition()
        self._pending: dict[str, Pending] = {}
        self._ended: set[str] = set()
        self._stopped: set[str] = set()
        self.tag = ""
        """Executions whose ARN contains this tag are scheduled; all others pass freely."""

    # -- the gate (execution threads) ----------------------------------------------------------------
    def before(self, request: TaskRequest) -> None:
        self._wait(request, "before")

    def after(self, request: TaskRequest) -> None:
        if self._after(request):
            self._wait(request, "after")

    def ended(self, execution_arn: str) -> None:
        with self._cond:
            self._ended.add(execution_arn)
            self._cond.notify_all()

    def _tracked(self, execution_arn: str) -> bool:
        return bool(self.tag) and self.tag in execution_arn

    def _wait(self, request: TaskRequest, phase: Phase) -> None:
        arn = request.execution_arn
        if not self._tracked(arn):
            return
        pending = Pending(request, phase)
        with self._cond:
            if arn in self._stopped:
                raise ExecutionStoppedError(f"{arn} was stopped")
            self._pending[arn] = pending
            self._cond.notify_all()
        # Bounded: a checker that died must not leave interpreter threads blocked for ever.
        if not pending.granted.wait(timeout=300):
            raise SchedulerHangError(f"{arn}: {request.state} was never granted")
        if pending.error is not None:
            raise pending.error

    # -- the controller -----------------------------------------------------------------------------
    def reset(self, tag: str) -> None:
        with self._cond:
            self._pending.clear()
            self._ended.clear()
            self._stopped.clear()
            self.tag = tag

    def quiescent(self, executions: list[str], timeout: float = 30.0) -> dict[str, Pending]:
        """Wait until every execution that is neither stopped nor ended waits here; its requests."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                running = [
                    a for a in executions if a not in self._pending and a not in self._ended and a not in self._stopped
                ]
                if not running:
                    return {a: p for a, p in self._pending.items() if a not in self._stopped}
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SchedulerHangError(f"{', '.join(running)} reached no request and did not end")
                self._cond.wait(remaining)

    def has_ended(self, execution_arn: str) -> bool:
        with self._cond:
            return execution_arn in self._ended

    def grant(self, execution_arn: str, error: BaseException | None = None) -> Pending:
        """Let the execution's waiting request through (or fail it with ``error``)."""
        with self._cond:
            pending = self._pending.pop(execution_arn)
        pending.error = error
        pending.granted.set()
        return pending

    def stop(self, execution_arn: str) -> None:
        """The execution never sends its waiting request; it is failed when :meth:`release_stopped` runs."""
        with self._cond:
            self._stopped.add(execution_arn)

    def release(self, execution_arn: str) -> None:
        """Fail the request a stopped execution holds, so that its thread ends (its run is ABORTED)."""
        with self._cond:
            pending = self._pending.pop(execution_arn, None)
        if pending is not None:
            pending.error = ExecutionStoppedError(f"{execution_arn} was stopped")
            pending.granted.set()

    def revive(self, execution_arn: str) -> None:
        """Track a stopped or ended execution again: an operator redrove it (its ARN runs again)."""
        with self._cond:
            self._stopped.discard(execution_arn)
            self._ended.discard(execution_arn)
            self._cond.notify_all()

    def release_stopped(self) -> list[str]:
        """Fail the requests stopped executions were holding, so their threads end."""
        with self._cond:
            held = [(a, self._pending.pop(a)) for a in list(self._pending) if a in self._stopped]
        for arn, pending in held:
            pending.error = ExecutionStoppedError(f"{arn} was stopped")
            pending.granted.set()
        return [a for a, _ in held]
