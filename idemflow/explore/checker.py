"""The interleaving checker: every order of requests of 2 or 3 executions of one key, with faults.

A schedule starts N executions of the same key and payload on the embedded engine. The
:class:`~idemflow.explore.scheduler.Scheduler` holds each execution before every DynamoDB, Lambda and
StartExecution request (and holds the side effect's answer before the state sees it), so at each step the
checker picks what happens next: one execution's request goes through, or an event happens at that point.
The side effect is the workflow's, of either kind (:class:`SideEffect`): a function, or a state machine
(``SideEffectStateMachineArn``, its child's end being the answer). The events:

* for a function, ``fail``: the side effect fails with the function's own (non-retryable) error;
  ``transient``: with its declared transient error; ``lose``: it runs, and its response is lost;
  ``timeout``: it times out;
* for a state machine, ``fail``: Step Functions refuses its StartExecution (StateMachineDoesNotExist: no
  child runs, the key is released); ``transient``: refuses it once (ExecutionLimitExceeded, retried);
* ``stop``: the execution is stopped there (StopExecution, a crash of the workflow's own run);
* ``redrive``: an operator redrives an execution that was stopped or failed (RedriveExecution: it continues
  at the state it stopped in, with the same ARN, so the record still names it as the owner);
* ``lease``: time passes beyond every lease; ``expiry``: beyond every lease and every record's expiry.
  Time moves the executions' clock (``$$.State.EnteredTime``), never a real sleep. Unless
  ``slow_owners`` is set, time only passes while no running execution is inside a lease it computed:
  the template's rule that a lease outlasts the side effect (a rule of the definition's unit tests).
  With ``slow_owners`` that rule is broken on purpose, so exclusivity (the first two invariants) is
  not checked, only what must hold without it: a completed record is never changed before it expires,
  every success returns the record's result, no orphan lock, only documented errors.

After each step and at the end, the invariants of docs/protocol.md ("The protocol on one page") are
checked. The exhaustive strategy enumerates every choice sequence (stateless model checking: a schedule is
replayed from its start with a fresh key); the random one draws choices from a seeded generator.
"""

from __future__ import annotations

import datetime
import json
import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from idemflow.contract import STATE_MACHINE_LOGICAL_ID, RecordStatus, WorkflowError, sample_payload
from idemflow.engine import Engine
from idemflow.engine.faults import Faults
from idemflow.engine.services.stepfunctions.clock import parse_rfc3339
from idemflow.engine.services.stepfunctions.execution_end import execution_done
from idemflow.engine.state import TaskRequest
from idemflow.explore.errors import ReductionAssumptionError
from idemflow.explore.scheduler import Pending, Scheduler
from idemflow.workflow import default_template

LAMBDA_EVENTS = ("fail", "transient", "lose", "timeout")
STATE_MACHINE_EVENTS = ("fail", "transient")
"""A child whose StartExecution is refused: for good, or once. (A start whose response is lost is not
explored: whether its retry finds the child still running, which the child's own thread decides, is timing.)"""
ALL_EVENTS = (*LAMBDA_EVENTS, "stop", "redrive", "lease", "expiry")
PERMANENT_ERROR = "SideEffectDeclinedError"
"""The function's own error the ``fail`` event raises (any errorType the definition does not retry): it
says the side effect did not happen."""
REFUSED_START = "StateMachineDoesNotExist"
"""The Step Functions error of a StartExecution the ``fail`` event refuses, for a state machine: no child ran.
The workflow fails with the task's name for it, ``StepFunctions.StateMachineDoesNotExistException``."""
THROTTLED_START = "ExecutionLimitExceeded"
"""The Step Functions error of a StartExecution the ``transient`` event refuses once, for a state machine."""
KEPT_LOCK_ERRORS = {WorkflowError.OUTCOME_UNKNOWN.value, WorkflowError.RESULT_NOT_SAVED.value}
"""Documented failures that keep the lock until its lease ends."""
SIDE_EFFECT_STATE = "RunSideEffect"
"""The state that invokes a function side effect: redriven, it invokes it again with the lease it held."""
SIDE_EFFECT_STATE_MACHINE_STATE = "RunSideEffectStateMachine"
"""The state that runs a state machine side effect (``startExecution.sync:2``)."""
CLOCK_SUBSTITUTION = "ClockFunctionArn"
"""The definition's clock function (functions/clock): it only adds to the time it is given, reading and
writing nothing else, which is what lets the exhaustive strategy treat its invocations as independent."""


def workflow_effects(engine: Engine, key: str) -> int:
    """The effects the workflow's side effect left for a key, where its template says they are."""
    return engine.workflow.effects(key)


@dataclass(frozen=True)
class SideEffect:
    """The workflow's side effect as the checker orders and faults it: the state that runs it, the request that
    starts it, the events it can suffer there and the error its ``fail`` event ends an execution with."""

    state: str
    service: str
    target: str
    """The function's name, or the state machine's ARN."""
    events: tuple[str, ...]
    permanent_error: str
    transient_error: str

    @classmethod
    def of(cls, engine: Engine) -> SideEffect:
        """The side effect of the engine's workflow, of either kind."""
        workflow = engine.workflow
        transient = workflow.stack.parameters["SideEffectTransientError"]
        if workflow.side_effect_is_state_machine:
            return cls(
                SIDE_EFFECT_STATE_MACHINE_STATE,
                "states",
                workflow.side_effect_state_machine.arn,
                STATE_MACHINE_EVENTS,
                f"StepFunctions.{REFUSED_START}Exception",
                transient,
            )
        function = workflow.side_effect_function
        return cls(SIDE_EFFECT_STATE, "lambda", function, LAMBDA_EVENTS, PERMANENT_ERROR, transient)

    def is_request(self, request: TaskRequest) -> bool:
        return request.service == self.service and _target(request) == self.target

    def inject(self, faults: Faults, kind: str) -> None:
        """Make the next run of the side effect suffer the event ``kind`` (one of :attr:`events`)."""
        if self.service == "states":
            code = REFUSED_START if kind == "fail" else THROTTLED_START
            faults.refuse_start_next(self.state, 1, code)
        elif kind == "fail":
            faults.fail_next(self.target, 1, PERMANENT_ERROR, "the side effect declined (checker)")
        elif kind == "transient":
            faults.fail_next(self.target, 1, self.transient_error, "transient failure (checker)")
        elif kind == "lose":
            faults.lose_response_next(self.target)
        elif kind == "timeout":
            faults.timeout_next(self.target)


@dataclass(frozen=True)
class Option:
    kind: str
    """``go``, one of the events, ``lease``/``expiry`` (no execution), or ``end`` (every execution has ended
    and none is redriven)."""
    execution: int | None = None


@dataclass
class Step:
    option: Option
    what: str


@dataclass(frozen=True)
class Violation:
    invariant: str
    message: str
    schedule: tuple[str, ...]
    choices: tuple[int, ...]


@dataclass
class ScheduleRun:
    choices: list[int] = field(default_factory=list)
    widths: list[int] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)


@dataclass
class Settings:
    executions: int = 2
    events: tuple[str, ...] = ALL_EVENTS
    max_events: int = 1
    slow_owners: bool = False
    payload: Any = field(default_factory=lambda: sample_payload(default_template()))
    """What every execution of a schedule sends: a payload the side effect under test accepts."""
    effects: Callable[[Engine, str], int] | None = None
    """How many effects the side effect left for a key, read from its own table (None: not counted).
    For a function that does not guard itself, this is where a second run shows, whichever execution
    (or retry of one execution) made it."""


@dataclass
class Report:
    schedules: int = 0
    complete: bool = False
    """True when the exhaustive strategy enumerated every schedule within its bounds."""
    violations: dict[str, Violation] = field(default_factory=dict)
    """The shortest schedule found for each invariant."""
    outcomes: dict[str, int] = field(default_factory=dict)
    seed: int | None = None
    replayed: bool = False
    """True for the one schedule ``--replay`` ran."""

    def add(self, run: ScheduleRun) -> None:
        self.schedules += 1
        for outcome, count in run.outcomes.items():
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + count
        for violation in run.violations:
            known = self.violations.get(violation.invariant)
            if known is None or len(violation.schedule) < len(known.schedule):
                self.violations[violation.invariant] = violation


def _letter(index: int) -> str:
    return "ABCDEFGH"[index]


class Checker:
    """Runs schedules of one key's executions on a started engine and checks the protocol's invariants."""

    def __init__(self, engine: Engine, settings: Settings):
        self.engine = engine
        self.settings = settings
        stack = engine.stack
        assert stack is not None, "start the engine first"
        workflow = engine.workflow.stack
        self.lease_seconds = int(workflow.parameters["LockLeaseSeconds"])
        self.window_seconds = int(workflow.parameters["IdempotencyWindowSeconds"])
        self.side_effect = SideEffect.of(engine)
        clock_arn = workflow.state_machines[STATE_MACHINE_LOGICAL_ID].substitutions.get(CLOCK_SUBSTITUTION, "")
        clock = stack.function_by_name(clock_arn) if clock_arn else None
        self.clock = None if clock is None else clock.name
        self.scheduler = Scheduler(self.is_side_effect)
        # What a schedule leaves behind (its executions, its key's items) is let go once it has ended: a
        # tier runs thousands of schedules in one engine (let_go says why).
        self.tables = [t.name for t in stack.all_tables()]
        self.baseline = {name: engine.tables.keys(name) for name in self.tables}
        engine.set_gate(self.scheduler)

    def close(self) -> None:
        self.engine.set_gate(None)
        self.engine.set_clock_offset(0)

    def let_go(self) -> None:
        """Forget what the schedules so far left: their ended executions (with what moto tracks of them)
        and every item written to the template's tables since the checker started. Each schedule has a
        key of its own, so nothing it left is read again. Kept, a full tier grew past 12 GB, each schedule
        slower than the last: moto scans every execution on each start and describe, the effects count
        scans the whole effects table, and moto tracked each item a scan copied for ever (quadratic)."""
        for table in self.tables:
            self.engine.tables.delete(table, self.engine.tables.keys(table) - self.baseline[table])
        self.engine.forget_ended_executions()  # last: it also empties moto's tracker of the items reads copied

    def is_side_effect(self, request: TaskRequest) -> bool:
        return self.side_effect.is_request(request)

    def is_side_effect_state(self, state: str) -> bool:
        return state == self.side_effect.state

    def is_clock(self, request: TaskRequest) -> bool:
        # Never the side effect, even if a template made one function both: side effects are ordered.
        return (
            self.clock is not None
            and request.service == "lambda"
            and _target(request) == self.clock
            and not self.is_side_effect(request)
        )

    def independent(self, a: Pending, b: Pending) -> bool:
        """Whether letting two executions' waiting requests through in either order ends in the same state,
        every check on the way seeing the same thing: a clock invocation with anything (it reads and writes
        nothing shared, and its execution does not succeed right after it: checked as it runs), two reads
        with each other. Conservative: every other pair, events and time included, is dependent."""
        if a.request.execution_arn == b.request.execution_arn:
            return False
        if self.is_clock(a.request) or self.is_clock(b.request):
            return True
        return all(p.request.service == "dynamodb" and p.request.action == "get_item" for p in (a, b))

    # -- strategies ---------------------------------------------------------------------------------
    def exhaustive(
        self, limit: int | None = None, *, progress: Callable[[int], None] | None = None, reduced: bool = True
    ) -> Report:
        """Every schedule (depth-first over the choices), or the first ``limit`` of them; ``progress`` is
        called with the number of schedules done after each.

        Every order, up to the order of independent requests (sleep sets, Godefroid 1996): after a subtree
        has been explored with one request going first, its siblings do not let that request through before
        something dependent on it has happened, since those orders only swap two independent steps of one
        already explored. Every state the full enumeration reaches is still reached, so every invariant is
        checked on each; what shrinks is the number of schedules. The choices a violation prints are
        indices among the requests left awake: replay them with ``reduced=True``. ``reduced=False``
        enumerates every order (the explorer's tests compare what both reach)."""
        report = Report()
        prefix: list[int] = []
        while True:
            run = self.replay(tuple(prefix), reduced=reduced)
            report.add(run)
            if progress is not None:
                progress(report.schedules)
            prefix = _next_prefix(run)
            if not prefix:
                report.complete = True
                return report
            if limit is not None and report.schedules >= limit:
                return report

    def sample(
        self,
        schedules: int,
        seed: int,
        *,
        stop_at_first: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> Report:
        """``schedules`` schedules whose every choice is drawn from a generator seeded with ``seed``."""
        report = Report(seed=seed)
        rng = random.Random(seed)
        for _ in range(schedules):
            report.add(self.run(lambda depth, width: rng.randrange(width)))
            if progress is not None:
                progress(report.schedules)
            if stop_at_first and report.violations:
                break
        return report

    def replay(self, choices: tuple[int, ...], *, reduced: bool = False) -> ScheduleRun:
        """The schedule of ``choices``, indices among every option (``reduced``: among those the
        exhaustive strategy's reduction leaves awake, as its violations print them)."""
        return self.run(lambda depth, width: choices[depth] if depth < len(choices) else 0, reduced=reduced)

    # -- one schedule -------------------------------------------------------------------------------
    def run(self, choose: Callable[[int, int], int], *, reduced: bool = False) -> ScheduleRun:
        out = _Schedule(self, choose, reduced).run()
        self.let_go()  # not after a failed schedule: its executions may still run, and the run ends anyway
        return out


def _target(request: TaskRequest) -> str:
    """What a request acts on: the name of the function a Lambda request invokes (its ARN's last part), the ARN
    of the state machine a StartExecution starts, the action of a DynamoDB request."""
    return request.action.rsplit(":", 1)[-1] if request.service == "lambda" else request.action


def _next_prefix(run: ScheduleRun) -> list[int]:
    """The next choice sequence in depth-first order after ``run``'s (empty: all done)."""
    for depth in range(len(run.choices) - 1, -1, -1):
        if run.choices[depth] + 1 < run.widths[depth]:
            return [*run.choices[:depth], run.choices[depth] + 1]
    return []


class _Schedule:
    """The state of one schedule while it runs."""

    def __init__(self, checker: Checker, choose: Callable[[int, int], int], reduced: bool = False):
        self.c = checker
        self.reduced = reduced
        self.asleep: set[Option] = set()
        """Options the reduction holds back here: orders an explored sibling subtree already stands for."""
        self.clocked: int | None = None
        """The execution whose clock invocation was just let through (checked not to succeed right after)."""
        self.broken: str | None = None
        """Why the reduction's assumption does not hold: raised once the schedule's executions have ended."""
        self.engine = checker.engine
        self.choose = choose
        self.out = ScheduleRun()
        self.key = f"explore-{uuid.uuid4()}"
        self.tag = uuid.uuid4().hex[:12]
        self.arns: list[str] = []
        self.stopped: set[int] = set()
        self.redriven: set[int] = set()
        self.stopped_at: dict[int, tuple[str, str, float]] = {}
        """Where each stopped execution was: its state, the phase of its held request, the clock offset."""
        self.events_used = 0
        self.offset = 0.0
        self.in_lease_window: set[int] = set()
        self.inside: set[int] = set()
        self.lifetime = 0
        self.lifetime_invokers: set[int] = set()
        self.invoked_lifetimes = 0
        self.lost_responses = 0
        self.lifetime_records: dict[int, dict[str, Any] | None] = {}
        self.ended_in: dict[int, int] = {}
        self.record: dict[str, Any] | None = None

    # -- driving --------------------------------------------------------------------------------------
    def run(self) -> ScheduleRun:
        scheduler = self.c.scheduler
        scheduler.reset(self.tag)
        self.engine.set_clock_offset(0)
        execution_input = {
            "idempotencyKey": self.key,
            "payload": self.c.settings.payload,
        }
        try:
            for i in range(self.c.settings.executions):
                self.arns.append(self.engine.start_execution(execution_input, name=f"x{i}-{self.tag}"))
            while True:
                pending = scheduler.quiescent(self.arns)
                self._check_record()
                self._note_ended()
                self._track_lease_windows(pending)
                options = list(self._options(pending))
                if not pending:
                    # Every execution has ended: the schedule ends, unless an operator redrives one.
                    if not any(o.kind == "redrive" for o in options):
                        break
                    options = [Option("end"), *options]
                if self.reduced:
                    self._check_clocked(pending)
                    options = self._awake(options)
                choice = self.choose(len(self.out.choices), len(options))
                self.out.choices.append(choice)
                self.out.widths.append(len(options))
                if self.reduced:
                    self._fall_asleep(options, choice, pending)
                if options[choice].kind == "end":
                    break
                self._apply(options[choice], pending)
            self._final_checks()
            if self.broken is not None:
                raise ReductionAssumptionError(self.broken)
        finally:
            scheduler.release_stopped()
            for i in self.stopped:
                execution_done(self.arns[i]).wait(30)
            scheduler.reset("")
            self.engine.set_clock_offset(0)
        return self.out

    # -- the exhaustive strategy's reduction ---------------------------------------------------------
    def _awake(self, options: list[Option]) -> list[Option]:
        """The options the reduction explores here. When every one is asleep, the orders from here on all
        stand for explored ones: the schedule still runs to its end (its executions must end), by the
        first option and with no alternative."""
        awake = [o for o in options if o not in self.asleep]
        return awake or options[:1]

    def _fall_asleep(self, options: list[Option], choice: int, pending: dict[str, Pending]) -> None:
        chosen = options[choice]

        def independent(other: Option) -> bool:
            if chosen.kind != "go" or other.kind != "go" or chosen.execution is None or other.execution is None:
                return False
            return self.c.independent(pending[self.arns[chosen.execution]], pending[self.arns[other.execution]])

        # Kept asleep: what stays independent of the chosen step. Put to sleep: the siblings explored
        # before it (depth-first, lower indices first) that it does not depend on.
        self.asleep = {o for o in self.asleep if independent(o)} | {o for o in options[:choice] if independent(o)}
        if chosen.kind == "go" and chosen.execution is not None:
            self.clocked = chosen.execution if self.c.is_clock(pending[self.arns[chosen.execution]].request) else None

    def _check_clocked(self, pending: dict[str, Pending]) -> None:
        """A clock invocation commutes with the other executions' steps only if its execution does not
        succeed right after it: a success is judged by the record of the moment it ended. (A failure there,
        the clock's own error, is judged by its error alone, whatever the order.)"""
        i, self.clocked = self.clocked, None
        if (
            i is not None
            and self.arns[i] not in pending
            and i not in self.stopped
            and self.engine.describe(self.arns[i], with_path=False).status == "SUCCEEDED"
        ):
            self.broken = (
                f"{_letter(i)} succeeded right after its clock invocation: the exhaustive strategy's reduction "
                "assumes an execution does not (run the random strategy)"
            )

    def _track_lease_windows(self, pending: dict[str, Pending]) -> None:
        """An execution that computed a lease is inside it until it ends, unless it is back to reading a
        record that someone else owns (it lost the race: it computes a new lease if it acquires). The
        window opens when the execution enters the clock's state: the lease counts from that state's
        $$.State.EnteredTime, not from when the request is sent."""
        owner = (self.record or {}).get("owner")
        for arn, p in pending.items():
            i = self.arns.index(arn)
            if p.request.service == "lambda" and not self.c.is_side_effect(p.request):
                self.in_lease_window.add(i)
            elif p.request.action == "get_item" and owner != arn:
                self.in_lease_window.discard(i)

    def _options(self, pending: dict[str, Pending]) -> Iterator[Option]:
        waiting = sorted(self.arns.index(a) for a in pending)
        events = self.events_used < self.c.settings.max_events
        allowed = set(self.c.settings.events) if events else set()
        for i in waiting:
            yield Option("go", i)
        for i in waiting:
            p = pending[self.arns[i]]
            if p.phase == "before" and self.c.is_side_effect(p.request):
                for kind in self.c.side_effect.events:
                    if kind in allowed:
                        yield Option(kind, i)
            if "stop" in allowed:
                yield Option("stop", i)
        if "redrive" in allowed:
            for i in range(len(self.arns)):
                if i not in self.redriven and (i in self.stopped or self._failed(i)) and self._may_redrive(i):
                    yield Option("redrive", i)
        time_may_pass = self.c.settings.slow_owners or not (self.in_lease_window - self.stopped)
        for kind in ("lease", "expiry"):
            if kind in allowed and time_may_pass:
                yield Option(kind)

    def _apply(self, option: Option, pending: dict[str, Pending]) -> None:
        if option.execution is None:
            jump = self.c.lease_seconds + 1 + (self.c.window_seconds if option.kind == "expiry" else 0)
            self.offset += jump
            self.engine.set_clock_offset(self.offset)
            self.events_used += 1
            self._new_lifetime()
            # An execution stopped while its side effect ran never hears the response (the checker holds it
            # for ever), but the invocation itself ends within the function's Timeout, which the lease
            # outlasts (a rule of the definition's unit tests): past every lease, it is no longer inside.
            self.inside -= self.stopped
            self.out.steps.append(Step(option, f"time passes {jump} s ({option.kind})"))
            return
        i = option.execution
        arn = self.arns[i]
        if option.kind == "redrive":
            self._redrive(i)
            return
        p = pending[arn]
        request = p.request
        what = (
            f"{_letter(i)}: {request.state} {'response' if p.phase == 'after' else request.action.rsplit(':', 1)[-1]}"
        )
        if option.kind == "stop":
            self.events_used += 1
            self.stopped.add(i)
            self.stopped_at[i] = (request.state, p.phase, self.offset)
            self.c.scheduler.stop(arn)
            self.engine.client("stepfunctions").stop_execution(executionArn=arn, error="Stopped", cause="checker")
            self.out.steps.append(Step(option, f"{_letter(i)} is stopped before {request.state}"))
            return
        if option.kind != "go":
            self.events_used += 1
            self._inject(option.kind)
            what += f" [{option.kind}]"
        self.out.steps.append(Step(option, what))
        if self.c.is_side_effect(request):
            if p.phase == "before":
                self._check_side_effect_start(i)
                self.inside.add(i)
            else:
                self.inside.discard(i)
        self.c.scheduler.grant(arn)

    def _failed(self, i: int) -> bool:
        """Whether execution ``i`` has ended unsuccessfully (a redrive continues it)."""
        if i not in self.ended_in:
            return False
        return self.engine.describe(self.arns[i], with_path=False).status != "SUCCEEDED"

    def _may_redrive(self, i: int) -> bool:
        """The operator's rule (docs/protocol.md, "Redrive"): an execution stopped in the side effect's state is
        redriven only while the lease it holds lives (here: before time passes); any other, at any time."""
        where = self.stopped_at.get(i)
        return where is None or not self.c.is_side_effect_state(where[0]) or where[2] == self.offset

    def _redrive(self, i: int) -> None:
        arn = self.arns[i]
        self.events_used += 1
        self.redriven.add(i)
        if i in self.stopped:
            # Its held request is never sent (or its held response never heard): its run ends ABORTED.
            self.c.scheduler.release(arn)
            if not execution_done(arn).wait(30):
                raise RuntimeError(f"{arn} did not end once stopped")
            self.stopped.discard(i)
            self.inside.discard(i)  # a response held was the end of its invocation
            state, phase, _ = self.stopped_at.pop(i)
            if self.c.is_side_effect_state(state) and phase == "after":
                # The side effect ran and the state runs again: a second run, as after a lost response.
                self.lost_responses += 1
        self.ended_in.pop(i, None)
        self.c.scheduler.revive(arn)
        self.engine.client("stepfunctions").redrive_execution(executionArn=arn)
        self.out.steps.append(Step(Option("redrive", i), f"{_letter(i)} is redriven"))

    def _inject(self, kind: str) -> None:
        self.c.side_effect.inject(self.engine.faults, kind)
        if kind == "lose":
            self.lost_responses += 1

    def _note_ended(self) -> None:
        for i, arn in enumerate(self.arns):
            if i not in self.ended_in and i not in self.stopped and self.c.scheduler.has_ended(arn):
                self.ended_in[i] = self.lifetime
                self.in_lease_window.discard(i)

    # -- invariants -----------------------------------------------------------------------------------
    def _violation(self, invariant: str, message: str) -> None:
        steps = tuple(s.what for s in self.out.steps)
        self.out.violations.append(Violation(invariant, message, steps, tuple(self.out.choices)))

    def _now(self) -> datetime.datetime:
        """The executions' clock: real time moved by the time events so far."""
        return datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=self.offset)

    def _read(self) -> dict[str, Any] | None:
        return self.engine.workflow.record(self.key)

    def _new_lifetime(self) -> None:
        self.lifetime_records[self.lifetime] = self.record
        self.lifetime += 1
        self.lifetime_invokers = set()

    def _check_side_effect_start(self, i: int) -> None:
        record = self._read()
        arn = self.arns[i]
        licensed = (
            record is not None
            and record.get("owner") == arn
            and record.get("status") == RecordStatus.IN_PROGRESS
            and _later(record.get("leaseExpiresAt"), self._now())
        )
        if not licensed and not self.c.settings.slow_owners:
            self._violation(
                "side effect without a live lock",
                f"{_letter(i)} invokes the side effect but the record is {_brief(record)}",
            )
        others = self.inside - {i}
        if others and not self.c.settings.slow_owners:
            self._violation(
                "two side effects at once",
                f"{_letter(i)} invokes the side effect while {', '.join(_letter(o) for o in others)} is inside it",
            )
        if not self.lifetime_invokers:
            self.invoked_lifetimes += 1
        self.lifetime_invokers.add(i)
        if len(self.lifetime_invokers) > 1 and not self.c.settings.slow_owners:
            self._violation(
                "two executions ran the side effect",
                f"{', '.join(_letter(o) for o in sorted(self.lifetime_invokers))} invoked the side effect while "
                "one record lived (no release, no expiry in between)",
            )

    def _check_record(self) -> None:
        before, after = self.record, self._read()
        if (
            before is not None
            and before.get("status") == RecordStatus.COMPLETED
            and _later(before.get("expiresAt"), self._now())
            and after != before
        ):
            self._violation(
                "completed record changed",
                f"a COMPLETED record was {'deleted' if after is None else 'overwritten'} before it expired: "
                f"{_brief(before)} -> {_brief(after)}",
            )
        if before is not None and after is None:
            self._new_lifetime()  # released: a new run may follow
        elif (
            before is not None
            and after is not None
            and before.get("status") == RecordStatus.COMPLETED
            and not _later(before.get("expiresAt"), self._now())
            and after.get("lockToken") != before.get("lockToken")
        ):
            # An expired result replaced by a new run: a new lifetime, as after a release. Its expiry may
            # have passed with no time event in between: an owner whose ComputeLease entered before a
            # time event computed its lease from that earlier time (slow owners), so its record can be
            # completed already expired, and the next execution runs again, as the guarantees allow.
            self._new_lifetime()
        self.record = after

    def _final_checks(self) -> None:
        self.lifetime_records[self.lifetime] = self.record
        documented = {e.value for e in WorkflowError} | {self.c.side_effect.permanent_error}
        errors: dict[int, str | None] = {}
        for i, arn in enumerate(self.arns):
            if i in self.stopped:
                self.out.outcomes["STOPPED"] = self.out.outcomes.get("STOPPED", 0) + 1
                continue
            outcome = self.engine.describe(arn, with_path=False)
            errors[i] = outcome.error
            label = outcome.status if outcome.status == "SUCCEEDED" else str(outcome.error)
            self.out.outcomes[label] = self.out.outcomes.get(label, 0) + 1
            if outcome.status == "SUCCEEDED":
                self._check_result(i, outcome.output)
            elif outcome.error not in documented:
                self._violation("undocumented failure", f"{_letter(i)} failed {outcome.error}: {outcome.cause}")
        record = self.record
        if record is not None and record.get("status") == RecordStatus.IN_PROGRESS:
            if not record.get("leaseExpiresAt") or not record.get("ttl"):
                self._violation("lock without lease or ttl", f"left {_brief(record)}")
            owner = record.get("owner")
            holders = [i for i, a in enumerate(self.arns) if a == owner]
            kept = holders and (holders[0] in self.stopped or errors.get(holders[0]) in KEPT_LOCK_ERRORS)
            if not kept:
                self._violation("orphan lock", f"every execution ended and left {_brief(record)}")
        self._check_effects()

    def _check_effects(self) -> None:
        """At most one effect per record lifetime in which the side effect was invoked, plus one per lost
        response (the contract's documented case: the handler ran, its response never came back, the
        retry runs it again). A lease that ends while the function runs is the other documented case:
        with ``slow_owners`` the count is not judged."""
        count = self.c.settings.effects
        if count is None or self.c.settings.slow_owners:
            return
        effects, allowed = count(self.engine, self.key), self.invoked_lifetimes + self.lost_responses
        if effects > allowed:
            self._violation(
                "more effects than the protocol allows",
                f"{effects} effects for the key, at most {allowed} allowed ({self.invoked_lifetimes} record "
                f"lifetimes with an invocation, {self.lost_responses} lost responses)",
            )

    def _check_result(self, i: int, output: Any) -> None:
        record = self.lifetime_records.get(self.ended_in.get(i, self.lifetime))
        if record is None or record.get("status") != RecordStatus.COMPLETED:
            self._violation("result not from the record", f"{_letter(i)} succeeded but the record is {_brief(record)}")
            return
        expected = json.loads(record["result"]) if record.get("resultStored") else None
        if output.get("result") != expected:
            self._violation(
                "result not from the record",
                f"{_letter(i)} returned {output.get('result')!r}, the record holds {expected!r}",
            )


def _later(timestamp: Any, now: datetime.datetime) -> bool:
    """Whether a stored timestamp is after ``now`` (a missing or malformed one is not)."""
    moment = parse_rfc3339(timestamp)
    return moment is not None and moment > now


def _brief(record: dict[str, Any] | None) -> str:
    if record is None:
        return "absent"
    owner = str(record.get("owner", "")).rsplit(":", 1)[-1]
    return (
        f"{record.get('status')} owner={owner} lease={record.get('leaseExpiresAt')} expires={record.get('expiresAt')}"
    )
