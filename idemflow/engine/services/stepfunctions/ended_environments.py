"""A succeeded execution keeps only what is read of it again (``ended-environments``, an engine change).

moto's execution keeps its interpreter's whole environment once it has ended: the frames, the context object,
the state data of the last state, the callback and Map run pools, the variable store. For a Standard
execution the engine keeps (up to its retention) that is memory held for nothing: once it has succeeded,
what is read of its environment again is its history (GetExecutionHistory), its final program state and
output (moto's status reflection), and a StopExecution that finds it ended, which changes nothing; nor is
what started it (the worker's evaluation details: its input parsed, its context object). A failed,
aborted or timed-out execution keeps its whole environment: RedriveExecution continues it from there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch


class _Output:
    __slots__ = ("_output",)

    def __init__(self, output: Any) -> None:
        self._output = output

    def get_input(self) -> Any:
        return self._output


class EndedEnvironment:
    """What is read of a succeeded execution's environment: its history, program state and output."""

    __slots__ = ("_program_state", "event_manager", "states")

    def __init__(self, env: Any) -> None:
        self.event_manager = env.event_manager
        self._program_state = env.program_state()
        self.states = _Output(env.states.get_input())

    def program_state(self) -> Any:
        return self._program_state

    def set_stop(self, stop_date: Any, cause: str | None, error: str | None) -> None:
        """A StopExecution of an ended execution changes nothing, as moto's own ``set_stop`` does then."""


def install_ended_environments(patch: Patch) -> None:
    from moto.stepfunctions.parser.api import ExecutionStatus
    from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication

    terminated: Callable[[Any], None] = BaseExecutionWorkerCommunication.__dict__["terminated"]

    @functools.wraps(terminated)
    def _terminated(self: Any) -> None:
        terminated(self)
        worker = self.execution.exec_worker
        env = getattr(worker, "env", None)
        succeeded = self.execution.exec_status == ExecutionStatus.SUCCEEDED
        if succeeded and env is not None and not isinstance(env, EndedEnvironment):
            worker.env = EndedEnvironment(env)
            # What started it (its input parsed, its context): read when it starts and when it is redriven,
            # which a succeeded execution never is.
            worker._evaluation_details = None

    patch.set(BaseExecutionWorkerCommunication, "terminated", _terminated)
