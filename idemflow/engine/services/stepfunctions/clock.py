"""Waits and timestamps: the wait-time scale (``wait-time-scale``) and AWS's timestamps (``timestamps``).

``wait-time-scale`` (engine): Retry intervals (``RetrierDecl._eval_body``: ``time.sleep``) and Wait states
(``WaitFunction._wait_interval``: ``Event.wait``) block for the real time requested, so a workflow with a 30 s Wait
takes 30 s in a test. Both are replaced by :func:`_delay`, which records the requested delay, waits for ``requested *
scale`` seconds (the engine state's ``wait_time_scale``; not at all for scale 0, like Step Functions Local's
``WAIT_TIME_SCALE``) and wakes up when the execution stops. The retrier's body is a copy of moto's with only the sleep
changed, so the recorded value is exactly the interval moto computed (IntervalSeconds x BackoffRate^n, capped by
MaxDelaySeconds, then JitterStrategy). moto's time.sleep also ignored stop_execution: a stopped execution kept
sleeping out its retry interval. Wait "Timestamp" / "TimestampPath" also compared the UTC timestamp with the *local*
naive time (datetime.now()), which is wrong by the host's UTC offset: compared with UTC now instead. Seconds,
SecondsPath, Timestamp and TimestampPath all end in ``WaitFunction._wait_interval``.

A state machine's ``TimeoutSeconds`` counts the execution's time as AWS does: the real time its states take plus
its waits at their full length, whatever the scale (:class:`ExecutionClock`: a scaled wait moves the execution's
clock on to the wait's end; waits that overlap, in branches or iterations, overlap there too). moto joins the
program's thread for ``TimeoutSeconds`` of real time, so with scaled waits an execution never timed out in its
Wait. The timeout ends the execution at once, as on AWS: ``ExecutionTimedOut`` is its last history event ("the
execution has timed out", ExecutionTimedOutEventDetails), and what its thread still writes afterwards (the state
it was in, finishing a request it had sent) is left out of the history. A redriven execution's clock starts again
("TimeoutSeconds ... reset to 0", redrive-executions.html).

``timestamps`` (fix): Choice rules Timestamp{Equals,LessThan,...}[Path] and IsTimestamp parse values with
strptime("%Y-%m-%dT%H:%M:%SZ") (``IsTimestamp.string_to_timestamp``): any fractional seconds or numeric offset makes
the value "not a timestamp", so ``"2026-11-23T08:00:00.250Z" < "2026-11-23T09:00:00.000Z"`` is false, and when only
the compared value fails to parse the comparison raises TypeError (States.Runtime). AWS accepts RFC 3339 (uppercase T,
Z or a numeric offset, any fraction) and compares instants. Replaced by :func:`parse_rfc3339`, which returns an aware
UTC datetime (every value of a comparison goes through it, so aware vs naive never meet). Also, moto writes
``$$.State.EnteredTime`` as datetime.isoformat() (``...07.638154+00:00``); AWS writes ``...07.638Z``, like StartTime.
Values compared as strings (DynamoDB conditions on stored times) only order correctly within one format, so
EnteredTime is converted where moto builds it: the StateData constructor as named in moto's state.py, the one place
that creates it. The same place adds the engine state's ``clock_offset``: how a test makes a lease or a record expire
without sleeping (every time the definition reads comes from the context object).
"""

from __future__ import annotations

import collections
import datetime
import re
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, cast

from idemflow.engine import state

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

# How long a scaled delay waits at most between two checks that the execution is still running.
# moto signals a stop by pulsing (set + clear) ``Environment.program_state_event``; a pulse that
# fires just before the wait starts is missed, so the wait also re-checks on this period.
_STOP_CHECK_SECONDS: Final[float] = 0.1
_MAX_RECORDED_DELAYS: Final[int] = 10_000


@dataclass(frozen=True)
class RecordedDelay:
    """One delay the interpreter asked for: a Wait state or the interval before a retry."""

    execution_arn: str
    state_name: str
    kind: Literal["wait", "retry"]
    requested_seconds: float  # as the definition asked (retries: after BackoffRate, MaxDelaySeconds, jitter)
    slept_seconds: float  # real time spent (scaled; shorter when the execution was stopped)


_state_lock = threading.Lock()
_recorded: collections.deque[RecordedDelay] = collections.deque(maxlen=_MAX_RECORDED_DELAYS)


def recorded_delays(execution_arn: str | None = None) -> list[RecordedDelay]:
    """Delays requested so far (before scaling), in order; only one execution's if given.

    A delay is recorded when it ends (it carries the time actually slept), so with a scale > 0 a
    delay in progress is not listed yet. At most the last 10,000 delays of the process are kept.
    """
    with _state_lock:
        delays = list(_recorded)
    if execution_arn is None:
        return delays
    return [d for d in delays if d.execution_arn == execution_arn]


def clear_recorded_delays() -> None:
    with _state_lock:
        _recorded.clear()


# -- wait-time-scale ----------------------------------------------------------------------------------


def _context_names(env: Any) -> tuple[str, str]:
    try:
        data = env.states.context_object.context_object_data
        return str(data["Execution"]["Id"]), str((data.get("State") or {}).get("Name", ""))
    except (AttributeError, KeyError, TypeError):
        return "", ""


CLOCK_ATTR: Final = "_idemflow_execution_clock"
"""On the execution's EventManager (shared by every frame of its run): its :class:`ExecutionClock`."""
CLOSED_ATTR: Final = "_idemflow_closed"
"""On an EventManager: set once its execution timed out; it takes no more events."""
SKIPPED_ATTR: Final = "_idemflow_skipped"
"""On an Environment (the execution's, or a frame: a branch, an iteration, a task): the seconds its scaled waits
did not spend. A frame starts with its parent's; a parent closing a frame takes the frame's if larger."""


class ExecutionClock:
    """An execution's time against its state machine's ``TimeoutSeconds``: real time since it (re)started, moved
    on to the latest time any of its frames has reached (a frame's time is real time plus what its waits did
    not spend: waits that overlap, in branches or iterations, overlap here too)."""

    def __init__(self, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self._started = time.monotonic()
        self._skipped = 0.0
        self._ended = False
        self._changed = threading.Condition()

    def real(self) -> float:
        """Real seconds since the execution (re)started."""
        return time.monotonic() - self._started

    def remaining(self) -> float:
        return self.timeout_seconds - self.real() - self._skipped

    def reached(self, at: float) -> None:
        """A frame of the execution is at ``at`` seconds of it."""
        with self._changed:
            self._skipped = max(self._skipped, at - self.real())
            self._changed.notify_all()

    def run(self, body: Any) -> None:
        try:
            body()
        finally:
            with self._changed:
                self._ended = True
                self._changed.notify_all()

    def wait_for_end(self) -> bool:
        """Block until the run ends (True) or its time is out (False)."""
        with self._changed:
            while not self._ended:
                remaining = self.remaining()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
            return True


def _skipped(env: Any) -> float:
    return float(getattr(env, SKIPPED_ATTR, 0.0))


def _delay(env: Any, kind: Literal["wait", "retry"], requested: float) -> None:
    requested = max(0.0, float(requested))
    started = time.monotonic()
    clock: ExecutionClock | None = getattr(env.event_manager, CLOCK_ATTR, None)
    begun = clock.real() + _skipped(env) if clock is not None else 0.0
    # A wait that outlasts the execution's timeout lasts until the timeout: the execution ends in it.
    length = requested if clock is None else min(requested, max(0.0, clock.timeout_seconds - begun))
    target = length * state.current().wait_time_scale
    if target > 0:
        deadline = started + target
        while env.is_running():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            env.program_state_event.wait(min(remaining, _STOP_CHECK_SECONDS))
    if clock is not None and env.is_running():
        setattr(env, SKIPPED_ATTR, max(_skipped(env), begun + length - clock.real()))
        clock.reached(begun + length)
        if length < requested:  # timed out in this wait: the program's thread ends the execution now
            while env.is_running():
                env.program_state_event.wait(_STOP_CHECK_SECONDS)
    slept = time.monotonic() - started
    execution_arn, state_name = _context_names(env)
    with _state_lock:
        _recorded.append(RecordedDelay(execution_arn, state_name, kind, requested, slept))


def _retrier_eval_body(self: Any, env: Any) -> None:
    from moto.stepfunctions.parser.asl.component.common.retry.max_attempts_decl import MaxAttemptsOutcome
    from moto.stepfunctions.parser.asl.component.common.retry.retrier_outcome import RetrierOutcome

    # moto 5.2.5's RetrierDecl._eval_body, with _delay() in place of time.sleep().
    self.error_equals.eval(env)
    if not env.stack.pop():
        env.stack.append(RetrierOutcome.Skipped)
        return
    self.max_attempts.eval(env=env)
    if env.stack.pop() == MaxAttemptsOutcome.EXHAUSTED:
        env.stack.append(RetrierOutcome.Failed)
        return
    self.interval_seconds.eval(env=env)
    self.backoff_rate.eval(env=env)
    self.max_delay_seconds.eval(env=env)
    self.jitter_strategy.eval(env=env)
    interval_seconds: float = env.stack.pop()
    _delay(env, "retry", interval_seconds)
    env.stack.append(RetrierOutcome.Executed)


def _wait_interval(self: Any, env: Any, wait_seconds: float) -> None:
    _delay(env, "wait", wait_seconds)


def _timestamp_wait_seconds(self: Any, env: Any) -> float:
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEventException

    self.string.eval(env=env)
    timestamp_str: str = env.stack.pop()
    timestamp: datetime.datetime | None = self._from_timestamp_string(timestamp=timestamp_str)
    if timestamp is None:
        raise FailureEventException(self._create_failure_event(env, timestamp_str))
    now_utc = datetime.datetime.now(tz=datetime.UTC).replace(tzinfo=None)
    return max(0.0, (timestamp - now_utc).total_seconds())


def install_wait_time_scale(patch: Patch) -> None:
    from moto.stepfunctions.parser.api import ExecutionTimedOutEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.retry.retrier_decl import RetrierDecl
    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent
    from moto.stepfunctions.parser.asl.component.program.program import Program
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import Timestamp
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction
    from moto.stepfunctions.parser.asl.eval.environment import Environment
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager
    from moto.stepfunctions.parser.utils import TMP_THREADS

    program_eval = Program.eval
    add_event = EventManager.add_event

    def _program_eval(self: Any, env: Any) -> None:
        # moto 5.2.5's Program.eval, timed by the execution's clock instead of a join of TimeoutSeconds.
        timeout = self.timeout_seconds.timeout_seconds if self.timeout_seconds else None
        if timeout is None or env.is_frame():
            program_eval(self, env)
            return
        env.next_state_name = self.start_at.start_at_name
        clock = ExecutionClock(float(timeout))
        setattr(env.event_manager, CLOCK_ATTR, clock)
        worker = threading.Thread(target=clock.run, args=(lambda: EvalComponent.eval(self, env),), daemon=True)
        TMP_THREADS.append(worker)
        worker.start()
        if clock.wait_for_end() or not env.is_running():
            return
        # Closed first: the thread, still in its state, writes nothing more (nor its own ExecutionTimedOut).
        setattr(env.event_manager, CLOSED_ATTR, True)
        env.set_timed_out()
        add_event(
            env.event_manager,
            context=env.event_history_context,
            event_type=HistoryEventType.ExecutionTimedOut,
            event_details=cast(Any, {"executionTimedOutEventDetails": ExecutionTimedOutEventDetails()}),
        )

    def _add_event(self: Any, *args: Any, **kwargs: Any) -> int:
        if getattr(self, CLOSED_ATTR, False):  # timed out: nothing after ExecutionTimedOut
            return 0
        return int(add_event(self, *args, **kwargs))

    patch.set(RetrierDecl, "_eval_body", _retrier_eval_body)
    patch.set(WaitFunction, "_wait_interval", _wait_interval)
    patch.set(Timestamp, "_get_wait_seconds", _timestamp_wait_seconds)
    open_frame, open_inner_frame, close_frame = (
        Environment.open_frame,
        Environment.open_inner_frame,
        Environment.close_frame,
    )

    def _open_frame(self: Any, *args: Any, **kwargs: Any) -> Any:
        frame = open_frame(self, *args, **kwargs)
        setattr(frame, SKIPPED_ATTR, _skipped(self))
        return frame

    def _open_inner_frame(self: Any, *args: Any, **kwargs: Any) -> Any:
        frame = open_inner_frame(self, *args, **kwargs)
        setattr(frame, SKIPPED_ATTR, _skipped(self))
        return frame

    def _close_frame(self: Any, frame: Any) -> None:
        close_frame(self, frame)
        setattr(self, SKIPPED_ATTR, max(_skipped(self), _skipped(frame)))

    patch.set(Program, "eval", _program_eval)
    patch.set(EventManager, "add_event", _add_event)
    patch.set(Environment, "open_frame", _open_frame)
    patch.set(Environment, "open_inner_frame", _open_inner_frame)
    patch.set(Environment, "close_frame", _close_frame)


# -- timestamps ---------------------------------------------------------------------------------------


def aws_timestamp(value: datetime.datetime) -> str:
    """``2026-11-23T08:26:00.123Z``: how Step Functions writes times in the context object."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    value = value.astimezone(datetime.UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


_RFC3339: Final = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


def parse_rfc3339(value: Any) -> datetime.datetime | None:
    """An RFC 3339 timestamp as Step Functions accepts it, as an aware UTC datetime (else None)."""
    if not isinstance(value, str):
        return None
    match = _RFC3339.match(value)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    microsecond = int((match.group(7) or "").ljust(6, "0")[:6])
    zone = match.group(8)
    if zone == "Z":
        tz = datetime.UTC
    else:
        sign = -1 if zone[0] == "-" else 1
        tz = datetime.timezone(sign * datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    try:
        moment = datetime.datetime(year, month, day, hour, minute, second, microsecond, tzinfo=tz)
    except ValueError:
        return None
    return moment.astimezone(datetime.UTC)


def _aws_state_data(**fields: Any) -> dict[str, Any]:
    entered = parse_rfc3339(fields.get("EnteredTime"))
    if entered is not None:
        fields["EnteredTime"] = aws_timestamp(entered + state.current().clock_offset)
    return fields


def install_timestamps(patch: Patch) -> None:
    import moto.stepfunctions.parser.asl.component.state.state as state_module
    from moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations.is_operator import (
        IsTimestamp,
    )

    patch.set(IsTimestamp, "string_to_timestamp", staticmethod(parse_rfc3339))
    patch.set(state_module, "StateData", _aws_state_data)
