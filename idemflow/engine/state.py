"""The engine's attached parts, in one object: what moto's changes read while an engine runs.

A leaf: it imports nothing of the engine at run time, so every change module reads it without importing
the services that provide the parts. One :class:`EngineState` is current per process (moto's backends are
per process too). It is immutable: a writer replaces the whole object, and a reader takes one snapshot
(``state.current()``) and reads every field from it, so a change never sees half of an update.

Who writes it: the engine alone, in production. :meth:`~idemflow.engine.Engine.start` installs the state
its services attach to (:meth:`~idemflow.engine.services.base.Service.attach`), the engine's
``set_gate`` and ``set_clock_offset`` replace one field, and :meth:`~idemflow.engine.Engine.stop` resets
it. Tests that drive moto without an engine use :func:`update` and :func:`reset` the same way.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from idemflow.engine.faults import Faults

__all__ = ["EngineState", "Gate", "Invoker", "Receiver", "TaskRequest", "current", "install", "reset", "update"]


class Authorizer(Protocol):
    """Whether a session of a role may make a call (:class:`~idemflow.engine.services.iam.service.Iam`)."""

    def decide(self, role_arn: str, action: str, resource: str, *, session: str | None = None) -> Any:
        """The decision (``allowed``, ``message``), or None when the role's calls are not decided."""

    def decide_service(
        self, principal: str, action: str, resource: str, resource_policy: dict[str, Any] | None, **keys: str
    ) -> Any:
        """The decision on a service principal's call to a resource with its own policy (``sns.amazonaws.com``
        delivering to a queue), or None when it is not decided."""


class Invoker(Protocol):
    """Where Lambda ``Invoke`` goes (the engine's Lambda runtime): ``invoke(name or ARN, body)`` returns an
    outcome with ``payload`` (bytes) and ``function_error`` (None or ``Unhandled``), or raises
    :class:`~idemflow.engine.errors.LambdaServiceError`."""

    def invoke(self, function_name: str, body: Any) -> Any: ...


Receiver = Callable[[str, dict[str, Any]], Any]
"""``receiver(rule name, moto's event message)``: where a rule's match goes (the events service)."""


@dataclass(frozen=True)
class TaskRequest:
    execution_arn: str
    state: str
    service: str
    """``dynamodb``, ``lambda`` or ``states`` (a ``states:startExecution`` task)."""
    action: str
    """The DynamoDB operation as boto3 names it (``put_item``...: what moto's task calls, not the
    ``putItem`` of the resource's ARN), for Lambda the function's name or ARN, for a StartExecution the ARN
    of the state machine it starts."""
    parameters: dict[str, Any]


class Gate(Protocol):
    """Where the interpreter's requests wait for their turn (a scheduler's view of an execution).

    ``before`` is called just before a task sends its request (DynamoDB, Lambda or StartExecution), ``after``
    once a Lambda invocation has returned, or a StartExecution has been answered (with ``.sync`` and ``.sync:2``:
    its child has ended), and before the state sees the answer. Both run in the
    execution's own thread and may block it; an exception they raise fails the task as a request error
    would. ``ended`` is called when an execution ends.
    """

    def before(self, request: TaskRequest) -> None: ...

    def after(self, request: TaskRequest) -> None: ...

    def ended(self, execution_arn: str) -> None: ...


DEFAULT_RETAINED_EXECUTIONS = 1000
"""Closed Standard executions an engine keeps by default (AWS keeps them 90 days): enough for a suite to read
back what it ran, bounded for a ``serve`` left running."""


@dataclass(frozen=True)
class Retention:
    """How many closed executions the engine keeps, and for how long after each closed (None: no bound):
    :mod:`idemflow.engine.services.stepfunctions.retention`."""

    executions: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.executions is not None and self.executions < 0:
            raise ValueError(f"a retention keeps 0 or more executions, got {self.executions}")
        if self.seconds is not None and not (math.isfinite(self.seconds) and self.seconds >= 0):
            raise ValueError(f"a retention lasts 0 or more seconds, got {self.seconds}")


class MockTestCases(Protocol):
    """A mock configuration file's test cases, as the ``mock-config`` hook reads them (Step Functions'
    package loads it: the state names only what the hook asks, so it stays a leaf below the services)."""

    def test_case(self, state_machine_name: str, test_case_name: str) -> Any: ...


@dataclass(frozen=True)
class EngineState:
    """Each field's default is moto's own behaviour: nothing attached, real time."""

    lambda_runtime: Invoker | None = None
    """Where Lambda ``Invoke`` goes (``lambda-invoke``); None: moto echoes the request."""
    faults: Faults | None = None
    """Consulted before each DynamoDB task (``dynamodb-task``)."""
    gate: Gate | None = None
    """Sees every task's request and every execution's end (the interleaving checker's scheduler)."""
    event_receiver: Receiver | None = None
    """Gets each rule's match for its state machine targets (``events-targets``)."""
    wait_time_scale: float = 1.0
    """Wait states and Retry intervals wait ``requested * scale`` real seconds (0: not at all)."""
    clock_offset: datetime.timedelta = datetime.timedelta(0)
    """Added to ``$$.State.EnteredTime``: how a test lets time pass without waiting."""
    mock_config: MockTestCases | None = None
    """The mock configuration file's test cases (``<arn>#<TestCase>`` starts)."""
    mock_config_source: str = ""
    """The file loaded, or what to do to load one; empty: ``#`` starts are moto's own."""
    retention: Retention | None = None
    """Which closed executions are kept (``execution-end``); None: every one, as moto does."""
    authorizer: Authorizer | None = None
    """Decides each call a task makes under its role (``task-permissions``); None: every call runs, as in moto."""

    def __post_init__(self) -> None:
        scale = self.wait_time_scale
        if not isinstance(scale, int | float) or not math.isfinite(scale) or scale < 0:
            raise ValueError(f"wait time scale must be a finite number >= 0, got {scale!r}")


_lock = threading.Lock()
_current = EngineState()


def current() -> EngineState:
    """The state in effect: read every field of one call's answer (it is never changed in place)."""
    return _current


def install(state: EngineState) -> None:
    """Make ``state`` the current one."""
    global _current
    with _lock:
        _current = state


def update(**fields: Any) -> EngineState:
    """Replace some fields of the current state (``clock_offset`` may be given in seconds); the new state."""
    global _current
    if isinstance(fields.get("clock_offset"), int | float):
        fields["clock_offset"] = datetime.timedelta(seconds=fields["clock_offset"])
    with _lock:
        _current = dataclasses.replace(_current, **fields)
        return _current


def reset() -> None:
    """Nothing attached, real time: moto's own behaviour."""
    install(EngineState())
