"""RedriveExecution: a failed, aborted or timed-out Standard execution continues where it stopped (``redrive``,
a fix).

moto 5.2.5 answers RedriveExecution with NotImplementedError (an HTTP 500 page after the client's retries), and
neither its DescribeExecution nor its ListExecutions says anything of redrives: an operator's "redrive the
intake" cannot be rehearsed. What AWS does, from the API reference (RedriveExecution, DescribeExecution,
ListExecutions, ExecutionRedrivenEventDetails), the developer guide ("Restarting state machine executions with
redrive", redrive-executions.html) and executions recorded on AWS in LocalStack's AWS-validated snapshots
(github.com/localstack/localstack, tests/aws/services/stepfunctions/v2/):

* **Who may be redriven.** Standard executions that are FAILED, ABORTED or TIMED_OUT, within 14 days of their
  stop, under a year open, with fewer than 24,999 history events (guide, "Redrive eligibility"). Any other is
  refused with ``ExecutionNotRedrivable`` (HTTP 400), and DescribeExecution's ``redriveStatus`` is
  ``NOT_REDRIVABLE`` exactly then, with ``redriveStatusReason`` one of the API reference's texts, as AWS
  records them, without a final full stop ("Execution is SUCCEEDED and cannot be redriven":
  ``test_sfn_api.py::TestSnfApi::test_describe_execution``); a FAILED or TIMED_OUT execution is
  ``REDRIVABLE``, with no reason (``base/test_base.py::test_state_fail``, ``timeouts/test_timeouts.py::
  test_global_timeout``). The message of ``ExecutionNotRedrivable`` is on no AWS record: here it is the reason.
  An Express execution's ARN is refused as DescribeExecution and StopExecution refuse it on AWS (``InvalidArn``
  "Invalid Arn: 'Resource type not valid in this context: express'", ``test_sfn_api_express.py::
  test_start_async_describe_history_execution``); RedriveExecution itself on an Express ARN is on no record.
  The eligibility clock is the engine's (real time moved by its clock offset): a test shows the 14 days.
* **What runs again.** "Step Functions continues the failed execution from the unsuccessful step and uses the
  same input ... the successful steps ... are not rerun"; "the same state machine definition and execution
  ARN"; a Fail state "reenters ... and fails again", a Choice is evaluated again, a Task scheduled again with
  its Retry counts back at 0; an Inline Map reruns "only those iterations that failed or aborted" unless it
  failed with ``States.DataLimitExceeded``, a Parallel state only its branches that failed or aborted (guide,
  "Redrive behavior of individual states"; API reference: "For workflows that include an Inline Map or Parallel
  state, RedriveExecution ... reschedules and redrives only the iterations and branches that failed or
  aborted"): a branch that succeeded hands back its first output, in its place; the state machine's
  ``TimeoutSeconds`` counts again from the redrive ("reset to 0"). The unsuccessful step is the top-level state
  entered and not exited (the Map Run page's rule: an Entered event with no Exited event); its input is the one
  its ``...StateEntered`` event recorded. An execution stopped between two states continues at the next one.
* **What it shows.** The history goes on: an ``ExecutionRedriven`` event with ``executionRedrivenEventDetails:
  {redriveCount}`` ("Redriven executions append their event history to the existing event history"), then the
  redriven states' events. DescribeExecution and ListExecutions carry ``redriveCount`` (0 until the first
  redrive: every recorded describe has it) and ``redriveDate`` (the last redrive; absent before one);
  ListExecutions takes ``redriveFilter`` (``REDRIVEN`` / ``NOT_REDRIVEN``). The context object's
  ``$$.Execution.RedriveCount`` is 0 on every execution (recorded: ``base/test_base.py::
  test_query_context_object_values``) and ``RedriveTime`` is there only once redriven (the context object page).
* **clientToken.** "The API will return idempotent responses for the last 10 client tokens used to successfully
  redrive the execution. These client tokens are valid for up to 15 minutes after they are first used": the
  same token again answers the same ``redriveDate`` and redrives nothing.

Not emulated (no state of this project's templates needs them): a Distributed Map redriven reruns its whole Map Run;
a Map or Parallel nested in a branch or an iteration reruns whole with it; RedriveExecution of a Map Run's child
executions; variables (``Assign``: the definitions here are JSONPath without them) start empty.

A TIMED_OUT execution (``wait-time-scale`` times it, and ends its history at ExecutionTimedOut) may still have a
request out when it is redriven: the thread of the state it timed out in finishes that request and writes nothing
more. The redrive does not wait for it (it waits for the execution's own thread, which writes its end), so the state
it continues at can run while that request is still out, which is what the workflow's lease is for.
"""

from __future__ import annotations

import copy
import datetime
import functools
import json
import re
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

from idemflow.engine import state
from idemflow.engine.services.stepfunctions.clock import aws_timestamp
from idemflow.engine.services.stepfunctions.executions import THREAD_ATTR

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

REDRIVES_ATTR: Final = "_idemflow_redrives"
"""On moto's Execution: its :class:`Redrives`."""
# Kept on the execution's EventManager: the one object its top-level environment, every frame of its Map
# iterations and Parallel branches, and its redriven runs share.
AT_ATTR: Final = "_idemflow_at"
"""``(state, index of its first history event)`` of the top-level state entered and not exited; ``(state,
None)`` for the next state when the last one exited."""
DONE_ATTR: Final = "_idemflow_done_iterations"
"""``{(state, index): output as JSON}``: the iterations of the top-level Inline Map, or the branches of the
top-level Parallel state, that succeeded."""
ENTERED_ATTR: Final = "_idemflow_redrive_entered"
"""Set once the redriven run has entered its first state (the plan's replay is for that state only)."""
PARALLEL_ATTR: Final = "_idemflow_parallel"
"""On the frame a Parallel state's branches run in: the state's name."""
PLAN_ATTR: Final = "_idemflow_redrive_plan"
"""The :class:`Plan` of the redriven run (also on its ExecutionWorker, which builds its context object)."""

REDRIVABLE_PERIOD: Final = datetime.timedelta(days=14)
MAX_OPEN_TIME: Final = datetime.timedelta(days=365)
MAX_HISTORY_EVENTS: Final = 24_999
TOKENS_KEPT: Final = 10
MAX_TOKEN_LENGTH: Final = 64
TOKEN_PATTERN: Final = re.compile(r"[!-~]+")
TOKEN_LIFETIME: Final = datetime.timedelta(minutes=15)

RUNNING_REASON: Final = "Execution is RUNNING and cannot be redriven"
SUCCEEDED_REASON: Final = "Execution is SUCCEEDED and cannot be redriven"
EVENT_LIMIT_REASON: Final = "Execution history event limit exceeded"
MAX_TIME_REASON: Final = "Execution has exceeded the max execution time"
PERIOD_REASON: Final = "Execution redrivable period exceeded"
EXPRESS_ARN_MESSAGE: Final = "Invalid Arn: 'Resource type not valid in this context: express'"
_INLINE_WORKERS: Final = frozenset({"InlineItemProcessorWorker", "InlineIteratorWorker"})

_lock = threading.Lock()  # one redrive decision at a time: the check and the new run are one step


@dataclass
class Redrives:
    """An execution's redrives so far."""

    count: int = 0
    date: datetime.datetime | None = None
    tokens: deque[tuple[str, datetime.datetime, datetime.datetime]] = field(
        default_factory=lambda: deque(maxlen=TOKENS_KEPT)
    )
    """``(clientToken, first used, the redriveDate it answered)``, the last :data:`TOKENS_KEPT`."""


@dataclass(frozen=True)
class Plan:
    """Where a redriven execution continues."""

    state: str
    input: Any
    count: int
    date: datetime.datetime
    iterations: dict[tuple[str, int], str]
    """The succeeded iterations of the Inline Map, or branches of the Parallel state, it continues at: not run
    again."""


def redrives(execution: Any) -> Redrives:
    found: Redrives | None = getattr(execution, REDRIVES_ATTR, None)
    return found if found is not None else Redrives()


def _now() -> datetime.datetime:
    """The engine's clock: real time moved by its clock offset."""
    return datetime.datetime.now(tz=datetime.UTC) + state.current().clock_offset


def _status(execution: Any) -> str:
    return str(getattr(execution.exec_status, "value", execution.exec_status))


def _history_length(execution: Any) -> int:
    env = getattr(execution.exec_worker, "env", None)
    return 0 if env is None else len(env.event_manager._history_event_list)


def not_redrivable(execution: Any, now: datetime.datetime | None = None) -> str | None:
    """Why RedriveExecution refuses the execution (DescribeExecution's ``redriveStatusReason``), or None."""
    status = _status(execution)
    if status in ("RUNNING", "PENDING_REDRIVE"):
        return RUNNING_REASON
    if status == "SUCCEEDED":
        return SUCCEEDED_REASON
    now = _now() if now is None else now
    if _history_length(execution) >= MAX_HISTORY_EVENTS:
        return EVENT_LIMIT_REASON
    if now - _aware(execution.start_date) > MAX_OPEN_TIME:
        return MAX_TIME_REASON
    if execution.stop_date is not None and now - _aware(execution.stop_date) > REDRIVABLE_PERIOD:
        return PERIOD_REASON
    return None


def _aware(value: datetime.datetime) -> datetime.datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)


def describe_fields(execution: Any) -> dict[str, Any]:
    """DescribeExecution's redrive fields for an execution."""
    done = redrives(execution)
    fields: dict[str, Any] = {"redriveCount": done.count}
    if done.date is not None:
        fields["redriveDate"] = done.date
    reason = not_redrivable(execution)
    fields["redriveStatus"] = "REDRIVABLE" if reason is None else "NOT_REDRIVABLE"
    if reason is not None:
        fields["redriveStatusReason"] = reason
    return fields


def _listed_time(execution: Any) -> datetime.datetime:
    """When ListExecutions places an execution: its start or last redrive while it runs, else its stop."""
    stopped = getattr(execution, "stop_date", None)
    if execution.status != "RUNNING" and stopped is not None:
        return _aware(stopped)
    return _aware(redrives(execution).date or execution.start_date)


def list_fields(execution: Any) -> dict[str, Any]:
    """ListExecutions' redrive fields for an execution (no status or reason: the API's item has none)."""
    done = redrives(execution)
    fields: dict[str, Any] = {"redriveCount": done.count}
    if done.date is not None:
        fields["redriveDate"] = done.date
    return fields


def _plan(execution: Any, count: int, date: datetime.datetime) -> Plan:
    """Where the execution continues: the top-level state it stopped in (its recorded input) or the next one."""
    env = execution.exec_worker.env
    events = env.event_manager
    at: tuple[str, int | None] | None = getattr(events, AT_ATTR, None)
    if at is None:  # stopped before its first state: from the start, with the execution's input
        definition = json.loads(execution.state_machine.definition)
        return Plan(definition["StartAt"], execution.input_data, count, date, {})
    name, first_event = at
    if first_event is None:  # stopped between two states: the next one, with the last one's output
        return Plan(name, copy.deepcopy(env.states.get_input()), count, date, {})
    entered = next(
        (
            e["stateEnteredEventDetails"]
            for e in events._history_event_list[first_event:]
            if "stateEnteredEventDetails" in e and e["stateEnteredEventDetails"].get("name") == name
        ),
        None,
    )
    if entered is None:  # its Entered event is the first it writes: never missing unless the history is cut
        raise RuntimeError(f"no StateEntered event of {name!r} in the history of {execution.exec_arn}")
    state_input = json.loads(entered["input"])
    # A Map that failed with States.DataLimitExceeded runs again whole (guide, Inline Map row).
    if execution.error == "States.DataLimitExceeded":
        events.__dict__.pop(DONE_ATTR, None)
    iterations = dict(getattr(events, DONE_ATTR, {}))
    return Plan(name, state_input, count, date, {k: v for k, v in iterations.items() if k[0] == name})


def install_redrive(patch: Patch) -> None:
    from moto.core.exceptions import JsonRESTError
    from moto.stepfunctions.exceptions import InvalidArn
    from moto.stepfunctions.parser.api import ExecutionAbortedEventDetails, ExecutionStatus, HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.flow.start_at import StartAt
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.iteration_worker import (
        IterationWorker,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branch_worker import BranchWorker
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branches_decl import (
        BranchesDecl,
        BranchWorkerPool,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.state_parallel import StateParallel
    from moto.stepfunctions.parser.asl.component.state.state import CommonStateField
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramEnded, ProgramStopped
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend
    from moto.stepfunctions.responses import StepFunctionResponse
    from moto.stepfunctions.utils import PAGINATION_MODEL
    from moto.utilities.paginator import paginate

    from idemflow.engine.services.stepfunctions import execution_end

    class ExecutionNotRedrivable(JsonRESTError):
        code = 400

        def __init__(self, message: str):
            super().__init__("ExecutionNotRedrivable", message)

    # -- where an execution is: the top-level state entered, and the Inline Map iterations that succeeded --
    state_eval_body = CommonStateField._eval_body

    def _eval_body(self: Any, env: Any) -> None:
        if env.is_frame():
            state_eval_body(self, env)
            return
        events = env.event_manager
        # A redrive's replay is for the first state it enters (the one it continues at), never a later visit.
        if PLAN_ATTR in events.__dict__:
            if events.__dict__.pop(ENTERED_ATTR, False):
                events.__dict__.pop(PLAN_ATTR)
            else:
                events.__dict__[ENTERED_ATTR] = True
        events.__dict__.pop(DONE_ATTR, None)  # what a Map's iterations did is per visit of the Map
        setattr(events, AT_ATTR, (self.name, len(events._history_event_list)))
        state_eval_body(self, env)
        if env.is_running():  # exited: the execution is between this state and the next
            setattr(events, AT_ATTR, (env.next_state_name, None))

    eval_job = IterationWorker._eval_job

    def _eval_job(self: Any, env: Any, job: Any) -> None:
        events = env.event_manager
        at = getattr(events, AT_ATTR, None)
        # Only the top-level Inline Map the execution is in (a Map nested in it by the same name is taken for it).
        if type(self).__name__ not in _INLINE_WORKERS or at is None or at[0] != self._work_name:
            eval_job(self, env, job)
            return
        key = (self._work_name, job.job_index)
        plan: Plan | None = getattr(events, PLAN_ATTR, None)
        if plan is not None and key in plan.iterations:  # succeeded before the redrive: not run again
            job.job_output = json.loads(plan.iterations[key])
            events.__dict__.setdefault(DONE_ATTR, {})[key] = plan.iterations[key]  # for a later redrive
            return
        eval_job(self, env, job)
        if not isinstance(job.job_output, Exception):
            events.__dict__.setdefault(DONE_ATTR, {})[key] = to_json_str(job.job_output)

    parallel_eval_execution = StateParallel._eval_execution

    def _parallel_eval_execution(self: Any, env: Any) -> None:
        # Its branches run in a frame of their own (moto's timeout frame): the frame is told whose they are.
        setattr(env, PARALLEL_ATTR, self.name)
        parallel_eval_execution(self, env)

    branches_eval_body = BranchesDecl._eval_body

    def _branches_eval_body(self: Any, env: Any) -> None:
        # moto 5.2.5's BranchesDecl._eval_body for the top-level Parallel state, with the branches that succeeded
        # before a redrive handed back instead of run, and each branch that succeeds noted for a later one.
        events = env.event_manager
        at = getattr(events, AT_ATTR, None)
        # Only the top-level Parallel the execution is in (one nested in it by the same name is taken for it).
        if at is None or getattr(env, PARALLEL_ATTR, None) != at[0]:
            branches_eval_body(self, env)
            return
        name = at[0]
        plan: Plan | None = getattr(events, PLAN_ATTR, None)
        kept = (
            {}
            if plan is None
            else {i: plan.iterations[(name, i)] for i in range(len(self.programs)) if (name, i) in plan.iterations}
        )
        succeeded: dict[tuple[str, int], str] = events.__dict__.setdefault(DONE_ATTR, {})
        succeeded.update({(name, i): text for i, text in kept.items()})  # for a later redrive
        input_val = env.stack.pop()
        pending = [(i, program) for i, program in enumerate(self.programs) if i not in kept]
        pool = BranchWorkerPool(workers_num=len(pending))
        workers: list[tuple[int, Any]] = []
        for i, program in pending:
            frame = env.open_inner_frame()
            frame.states.reset(input_value=input_val)
            worker = BranchWorker(branch_worker_comm=pool, program=program, env=frame)
            workers.append((i, worker))
            worker.start()  # type: ignore[no-untyped-call]
        if pending:  # a pool of no workers never ends its wait
            pool.wait()  # type: ignore[no-untyped-call]
        for i, worker in workers:
            if isinstance(worker.env.program_state(), ProgramEnded):
                succeeded[(name, i)] = to_json_str(worker.env.states.get_input())
        failed = pool.get_exit_event_details()
        if failed is not None:
            for _, worker in workers:
                worker.stop(stop_date=datetime.datetime.now(), cause=None, error=None)
                env.close_frame(worker.env)
            raise FailureEventException(
                failure_event=FailureEvent(
                    env=env,
                    error_name=CustomErrorName(error_name=failed.get("error")),
                    event_type=HistoryEventType.ExecutionFailed,
                    event_details=cast(Any, {"executionFailedEventDetails": failed}),
                )
            )
        outputs: dict[int, Any] = {i: json.loads(text) for i, text in kept.items()}
        for i, worker in workers:
            outputs[i] = worker.env.states.get_input()
            env.close_frame(worker.env)
        env.stack.append([outputs[i] for i in range(len(self.programs))])

    # -- the context object: RedriveCount on every execution, RedriveTime once redriven ----------------
    evaluation_environment = ExecutionWorker._get_evaluation_environment

    def _get_evaluation_environment(self: Any) -> Any:
        env = evaluation_environment(self)
        plan: Plan | None = getattr(self, PLAN_ATTR, None)
        execution = cast(dict[str, Any], env.states.context_object.context_object_data["Execution"])
        execution["RedriveCount"] = 0 if plan is None else plan.count
        if plan is not None:
            execution["RedriveTime"] = aws_timestamp(plan.date)
        return env

    def _redriven_environment(worker: Any, old_events: Any, plan: Plan) -> Any:
        """The redriven run's environment, made before its thread starts (so that its history is never seen
        empty): a context object with the redrive, and a history that goes on from the first run's, copied
        into an event manager of its own (a thread of the first run still ending, after a timeout, writes
        into the old one), then ``ExecutionRedriven``."""
        env = worker._get_evaluation_environment()
        events = env.event_manager
        with old_events._mutex:
            events._history_event_list.extend(old_events._history_event_list)
            events._event_id_gen._next_id = old_events._event_id_gen._next_id
        setattr(events, PLAN_ATTR, plan)
        # Until it enters that state it is before it, with its input (a redrive stopped at once continues there).
        setattr(events, AT_ATTR, (plan.state, None))
        last = events._history_event_list[-1]["id"] if events._history_event_list else 0
        env.event_history_context = EventHistoryContext(previous_event_id=last)
        events.add_event(
            context=env.event_history_context,
            event_type=HistoryEventType.ExecutionRedriven,
            # moto's EventDetails (a TypedDict) lacks this member of the API's HistoryEvent.
            event_details=cast(Any, {"executionRedrivenEventDetails": {"redriveCount": plan.count}}),
        )
        env.states.reset(input_value=plan.input)
        return env

    def _redriven_logic(self: Any) -> None:
        """The redriven run: its program from the plan's state, in the environment made for it."""
        plan: Plan = getattr(self, PLAN_ATTR)
        env = self.env
        ended = env.program_state()
        if isinstance(ended, ProgramStopped):  # stopped before its thread ran: the program would write nothing
            env.event_history_context.source_event_id = 0
            env.event_manager.add_event(
                context=env.event_history_context,
                event_type=HistoryEventType.ExecutionAborted,
                event_details=cast(
                    Any,
                    {
                        "executionAbortedEventDetails": ExecutionAbortedEventDetails(
                            error=ended.error, cause=ended.cause
                        )
                    },
                ),
            )
        else:
            redriven = copy.copy(self._get_evaluation_entrypoint())
            redriven.start_at = StartAt(start_at_name=plan.state)
            redriven.eval(env)
        self._execution_communication.terminated()

    # -- RedriveExecution ---------------------------------------------------------------------------
    def redrive_execution(self: Any, execution_arn: str, client_token: str | None = None) -> datetime.datetime:
        if execution_arn.split(":")[5:6] == ["express"]:
            raise InvalidArn(EXPRESS_ARN_MESSAGE)
        execution = self.describe_execution(execution_arn)  # InvalidArn, ExecutionDoesNotExist as moto answers
        machine = self.describe_state_machine(execution.state_machine_arn)
        if str(getattr(machine, "type", "")) == "EXPRESS":
            # moto runs StartExecution of an Express machine as a Standard execution (an ARN of its kind).
            raise InvalidArn(EXPRESS_ARN_MESSAGE)
        # Its end is written by its own thread after its status (moto's terminated(), then execution-end):
        # a redrive waits for that thread, so that nothing of the first run lands on the second.
        thread = getattr(execution.exec_worker, THREAD_ATTR, None)
        if thread is not None and thread.ident is not None and thread is not threading.current_thread():
            thread.join(timeout=5)  # started: a thread not started yet is a redriven run's, RUNNING
        with _lock:
            done = getattr(execution, REDRIVES_ATTR, None)
            if done is None:
                done = Redrives()
                setattr(execution, REDRIVES_ATTR, done)
            now = _now()
            while done.tokens and now - done.tokens[0][1] > TOKEN_LIFETIME:
                done.tokens.popleft()
            answered = next((date for token, _, date in done.tokens if token == client_token), None)
            if client_token is not None and answered is not None:
                return answered
            reason = not_redrivable(execution, now)
            if reason is not None:
                raise ExecutionNotRedrivable(reason)
            date = datetime.datetime.now(tz=datetime.UTC)
            plan = _plan(execution, done.count + 1, date)
            old = execution.exec_worker
            worker = execution._get_start_execution_worker()
            worker._mock_test_case = getattr(old, "_mock_test_case", None)  # a mocked start stays mocked
            setattr(worker, PLAN_ATTR, plan)
            worker.env = _redriven_environment(worker, old.env.event_manager, plan)
            worker._execution_logic = functools.partial(_redriven_logic, worker)
            done.count, done.date = plan.count, date
            if client_token is not None:
                done.tokens.append((client_token, now, date))
            execution.exec_worker = worker  # first: a StopExecution from now on reaches the redriven run
            execution.stop_date = execution.error = execution.cause = execution.output = None
            execution.exec_status = ExecutionStatus.RUNNING
            execution_end.forget_execution(execution_arn)  # its end is awaited anew
            worker.start()
        return date

    def response_redrive_execution(self: Any) -> Any:
        from moto.core.responses import ActionResult
        from moto.stepfunctions.exceptions import ValidationException

        token = self._get_param("clientToken")
        if token is not None and (len(token) > MAX_TOKEN_LENGTH or not TOKEN_PATTERN.fullmatch(token)):
            # The model's ClientToken: 1 to 64 characters of [!-~]+ (botocore checks only the minimum).
            constraint = (
                f"Member must have length less than or equal to {MAX_TOKEN_LENGTH}"
                if len(token) > MAX_TOKEN_LENGTH
                else "Member must satisfy regular expression pattern: [!-~]+"
            )
            raise ValidationException(
                f"1 validation error detected: Value '{token}' at 'clientToken' failed to satisfy constraint: "
                + constraint
            )
        date = self.stepfunction_backend.redrive_execution(self._get_param("executionArn"), client_token=token)
        return ActionResult({"redriveDate": date})

    # -- DescribeExecution and ListExecutions: the redrive fields, and the filter ---------------------
    describe_execution = StepFunctionResponse.describe_execution

    def response_describe_execution(self: Any) -> Any:
        answer = describe_execution(self)
        execution = self.stepfunction_backend.describe_execution(self._get_param("executionArn"))
        result = cast(dict[str, Any], answer.result)
        result.update(describe_fields(execution))
        # moto gives the stopDate of SUCCEEDED, FAILED and ABORTED ones; AWS of a TIMED_OUT one too (LS,
        # timeouts/test_timeouts.py::test_global_timeout), the one an operator redrives after a timeout.
        if execution.status == "TIMED_OUT" and execution.stop_date is not None:
            result["stopDate"] = execution.stop_date
        return answer

    @paginate(pagination_model=PAGINATION_MODEL)
    def list_executions(
        self: Any, state_machine_arn: str, status_filter: str | None = None, redrive_filter: str | None = None
    ) -> list[Any]:
        executions = list(self.describe_state_machine(state_machine_arn).executions)
        if status_filter:
            executions = [e for e in executions if e.status == status_filter]
        if redrive_filter == "REDRIVEN":
            executions = [e for e in executions if redrives(e).count > 0]
        elif redrive_filter == "NOT_REDRIVEN":
            executions = [e for e in executions if redrives(e).count == 0]
        # "Results are sorted by time, with the most recent execution first. Running executions are sorted by
        # their startDate or redriveDate, and other executions are sorted by their stopDate" (API reference).
        return sorted(executions, key=_listed_time, reverse=True)

    def response_list_executions(self: Any) -> Any:
        from moto.core.responses import ActionResult

        arn = self._get_param("stateMachineArn")
        state_machine = self.stepfunction_backend.describe_state_machine(arn)
        results, next_token = self.stepfunction_backend.list_executions(
            arn,
            status_filter=self._get_param("statusFilter"),
            redrive_filter=self._get_param("redriveFilter"),
            max_results=self._get_int_param("maxResults"),
            next_token=self._get_param("nextToken"),
        )
        executions = []
        for execution in results:
            item = {
                "executionArn": execution.execution_arn,
                "name": execution.name,
                "startDate": execution.start_date,
                "stateMachineArn": state_machine.arn,
                "status": execution.status,
                **list_fields(execution),
            }
            # "If the execution already ended, the date the execution stopped" (ExecutionListItem): TIMED_OUT too.
            if execution.status != "RUNNING" and execution.stop_date is not None:
                item["stopDate"] = execution.stop_date
            executions.append(item)
        return ActionResult({"executions": executions, "nextToken": next_token})

    patch.set(CommonStateField, "_eval_body", _eval_body)
    patch.set(IterationWorker, "_eval_job", _eval_job)
    patch.set(StateParallel, "_eval_execution", _parallel_eval_execution)
    patch.set(BranchesDecl, "_eval_body", _branches_eval_body)
    patch.set(ExecutionWorker, "_get_evaluation_environment", _get_evaluation_environment)
    patch.set(StepFunctionsParserBackend, "redrive_execution", redrive_execution)
    patch.set(StepFunctionsParserBackend, "list_executions", list_executions)
    patch.set(StepFunctionResponse, "redrive_execution", response_redrive_execution)
    patch.set(StepFunctionResponse, "describe_execution", response_describe_execution)
    patch.set(StepFunctionResponse, "list_executions", response_list_executions)
