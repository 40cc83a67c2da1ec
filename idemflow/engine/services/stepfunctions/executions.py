"""Executions: their names (``execution-names``), output (``execution-output``), start time
(``start-time``), stop date (``stop-date``) and threads (``worker-thread``, ``thread-list``).

``execution-names`` (fix): AWS, StartExecution, ``name``: "If you don't provide a name for the execution,
Step Functions automatically generates a universally unique identifier (UUID) as the execution name"
(API reference). moto 5.2.5 passes the missing name on as None: the execution ARN ends in ":None", and
the second nameless start of a state machine fails ExecutionAlreadyExists (same name, other input) or
returns the first execution (same input). The name is generated where every start arrives, the
backend's start_execution (moto's HTTP handler, the engine's in-process start and the ``mock-config``
hook's #TestCase starts all call it).

``execution-output`` (fix): DescribeExecution's output is the execution's output as JSON text (API
reference: "output: The JSON output data of the execution"). moto's handler passes a str output through
as it is, so an execution whose output is the string "abc" answers output=abc (not JSON), and it writes
other values with json.dumps' defaults: ", " separators and non-ASCII escaped, where AWS's recorded
outputs are compact (LocalStack's AWS-validated snapshots, e.g. express/test_express_sync.py::test_base).
The parser backend keeps every output as a value (``env.states.get_input()``), so it is always encoded.

``start-time`` (fix): moto's Execution passes its ``start_date`` (a datetime) as
ExecutionDetails.start_time, and the interpreter copies it as is into the context object. A definition
that reads $$.Execution.StartTime then puts a datetime into the state data: describe_execution fails with
"Object of type datetime is not JSON serializable" (or the run fails with States.Runtime).
ExecutionDetails is the one place every execution (async, sync, Map/Parallel frames share the same
context) gets its start time from, so it is converted there, to AWS's format: UTC, milliseconds, "Z".

``atomic-starts`` (fix): AWS, StartExecution, ``name``: "When you make multiple StartExecution calls with
the same name, the new execution doesn't run": an open execution with the same input answers Success
(the same execution), any other ExecutionAlreadyExists (API reference). moto 5.2.5 appends the new
execution to its state machine's list *before* it sets its status (``exec_status`` stays None while its
worker is built), and checks the name and appends without a lock. So a ListExecutions or a start of the
same name that reads the list in that window fails with an internal error (500: ``None.value``), and two
concurrent starts of one name can both run. An execution is RUNNING from the moment it is listed, and
the check and the append are one step per backend.

``worker-thread`` (engine): moto's ExecutionWorker.start starts an anonymous thread (and appends it to
LocalStack's TMP_THREADS list, which moto never empties). Keeping the thread on the worker instead lets
a caller join it (:func:`wait_for_execution`): no polling, which starves the interpreter of the GIL. The
workers still running are kept too, so that an engine that stops ends them (:func:`stop_running`): moto's
backends are the process's, and an execution left running past its engine's stop goes on against the next
engine's resources of the same names (its task sends to "the" dead-letter queue of the next test's stack).

``thread-list`` (engine): the interpreter (code from LocalStack) appends every thread it starts to the
module-level list ``moto.stepfunctions.parser.utils.TMP_THREADS``; LocalStack joins them at shutdown,
moto never reads or empties it. A Task state's thread keeps its closure, i.e. the state's evaluation
frame (input, parameters, the service's response): an engine grew with every execution, for ever.
Each module imported the list by name, so every module's name is pointed at one list that drops
finished threads whenever it has grown by PRUNE_EVERY since the last pass (amortised O(1)).
"""

from __future__ import annotations

import datetime
import functools
import importlib
import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from idemflow.engine.services.stepfunctions import retention
from idemflow.engine.services.stepfunctions.clock import aws_timestamp
from idemflow.engine.services.stepfunctions.execution_end import forget_execution

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

# -- execution-names ----------------------------------------------------------------------------------


def install_execution_names(patch: Patch) -> None:
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    start: Callable[..., Any] = StepFunctionsParserBackend.__dict__["start_execution"]

    @functools.wraps(start)
    def start_execution(self: Any, state_machine_arn: str, name: Any = None, *args: Any, **kwargs: Any) -> Any:
        return start(self, state_machine_arn, str(uuid.uuid4()) if name is None else name, *args, **kwargs)

    patch.set(StepFunctionsParserBackend, "start_execution", start_execution)


# -- atomic-starts -------------------------------------------------------------------------------------

_start_lock = threading.RLock()


def install_atomic_starts(patch: Patch) -> None:
    from moto.stepfunctions.parser.api import ExecutionStatus
    from moto.stepfunctions.parser.backend.execution import Execution
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    init: Callable[..., None] = Execution.__dict__["__init__"]
    start: Callable[..., Any] = StepFunctionsParserBackend.start_execution

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.exec_status = ExecutionStatus.RUNNING  # listed from here on: never without a status

    @functools.wraps(start)
    def start_execution(self: Any, *args: Any, **kwargs: Any) -> Any:
        # What has outlived the engine's retention is gone before the name is checked, as on AWS, where a
        # removed execution's name may be used again.
        for evicted in retention.sweep():
            forget_execution(evicted)
        with _start_lock:  # the name check and the append: one start at a time
            return start(self, *args, **kwargs)

    patch.set(Execution, "__init__", __init__)
    patch.set(StepFunctionsParserBackend, "start_execution", start_execution)


# -- execution-output ---------------------------------------------------------------------------------


def execution_output_text(output: Any) -> str:
    """An execution's output as DescribeExecution returns it."""
    return json.dumps(output, separators=(",", ":"), ensure_ascii=False)


def install_execution_output(patch: Patch) -> None:
    from moto.stepfunctions.responses import StepFunctionResponse

    describe: Callable[..., Any] = StepFunctionResponse.__dict__["describe_execution"]

    @functools.wraps(describe)
    def describe_execution(self: Any) -> Any:
        answer = describe(self)
        response = answer.result
        if isinstance(response, dict) and "output" in response:
            execution = self.stepfunction_backend.describe_execution(response["executionArn"])
            response["output"] = execution_output_text(execution.output)
        return answer

    patch.set(StepFunctionResponse, "describe_execution", describe_execution)


# -- stop-date ---------------------------------------------------------------------------------------


def install_stop_date(patch: Patch) -> None:
    """StopExecution answers its ``stopDate`` (a required member of its response: API reference, StopExecution;
    recorded on AWS in LocalStack's tests/aws/services/stepfunctions/v2/test_sfn_api.snapshot.json,
    ``test_stop_execution``: ``"stop_res": {"stopDate": "datetime"}``). moto 5.2.5 answers the execution's
    ``stop_date``, which its worker sets only when the stopped run ends, after the answer: the response is
    empty, and an ``aws-sdk:sfn:stopExecution`` task's output is ``{}``."""
    from moto.core.responses import ActionResult
    from moto.core.utils import utcnow
    from moto.stepfunctions.responses import StepFunctionResponse

    def stop_execution(self: Any) -> Any:
        execution = self.stepfunction_backend.stop_execution(self._get_param("executionArn"))
        return ActionResult({"stopDate": execution.stop_date or utcnow()})

    patch.set(StepFunctionResponse, "stop_execution", stop_execution)


# -- start-time ---------------------------------------------------------------------------------------


def install_start_time(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.eval.evaluation_details import ExecutionDetails

    original: Callable[..., None] = ExecutionDetails.__dict__["__init__"]

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if "start_time" in kwargs:
            if isinstance(kwargs["start_time"], datetime.datetime):
                kwargs["start_time"] = aws_timestamp(kwargs["start_time"])
        elif len(args) >= 5 and isinstance(args[4], datetime.datetime):
            args = (*args[:4], aws_timestamp(args[4]), *args[5:])
        original(self, *args, **kwargs)

    patch.set(ExecutionDetails, "__init__", __init__)


# -- worker-thread ------------------------------------------------------------------------------------

THREAD_ATTR: Final[str] = "_idemflow_thread"


_running: dict[int, Any] = {}
"""The workers whose thread has not ended, by id: what :func:`stop_running` ends."""
_running_lock = threading.Lock()


def install_worker_thread(patch: Patch) -> None:
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    def start(self: Any) -> None:
        def run() -> None:
            try:
                self._execution_logic()
            finally:
                # Ended: the status says so from now on (wait_for_execution reads it when there is no
                # thread), and a finished thread kept on every execution would be kept for ever.
                self.__dict__.pop(THREAD_ATTR, None)
                with _running_lock:
                    _running.pop(id(self), None)

        thread = threading.Thread(target=run, name="sfn-execution", daemon=True)
        setattr(self, THREAD_ATTR, thread)
        with _running_lock:
            _running[id(self)] = self
        thread.start()

    patch.set(ExecutionWorker, "start", start)


def stop_running(timeout: float) -> list[str]:
    """Stop every execution still running, as StopExecution does (ABORTED: no state after the one in progress
    runs, a Catch included), and wait up to ``timeout`` seconds in all for their threads to end; the names of
    the threads still alive then (a task blocked in a call that does not return)."""
    from moto.core.utils import utcnow

    with _running_lock:
        workers = list(_running.values())
    now = utcnow()  # as moto's StopExecution stops one
    deadline = time.monotonic() + timeout
    stopped: set[int] = set()
    while True:
        for worker in workers:
            # A worker's environment is made by its thread, once started: one just started has none yet, and is
            # stopped on a later pass.
            if id(worker) not in stopped and getattr(worker, "env", None) is not None:
                worker.stop(stop_date=now, error=None, cause=None)
                stopped.add(id(worker))
        threads = [getattr(worker, THREAD_ATTR, None) for worker in workers]
        alive = [thread for thread in threads if thread is not None and thread.is_alive()]
        remaining = deadline - time.monotonic()
        if not alive or remaining <= 0:
            return [thread.name for thread in alive]
        alive[0].join(min(remaining, 0.05))


def _parse_execution_arn(execution_arn: str) -> tuple[str, str]:
    parts = execution_arn.split(":")
    if len(parts) < 8 or parts[2] != "states":
        raise ValueError(f"not an execution ARN: {execution_arn!r}")
    return parts[4], parts[3]  # account, region


def find_execution(execution_arn: str) -> Any:
    """moto's Execution for an ARN of this process's moto (in-process or its server)."""
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    account, region = _parse_execution_arn(execution_arn)
    backend: Any = stepfunctions_parser_backends[account][region]
    return backend.describe_execution(execution_arn)


def join_execution(execution: Any, timeout: float) -> bool:
    """Wait until moto's ``execution`` ends; returns whether it did.

    Joins its worker thread when ``worker-thread`` kept it; otherwise (the change left out, or an
    execution started before it) polls its status, sleeping a twentieth of a second between reads.
    """
    deadline = time.monotonic() + timeout
    thread: threading.Thread | None = getattr(execution.exec_worker, THREAD_ATTR, None)
    if thread is not None:
        thread.join(max(0.0, deadline - time.monotonic()))
        return not thread.is_alive()
    while execution.status == "RUNNING":
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(0.05, remaining))
    return True


def wait_for_execution(execution_arn: str, timeout: float = 30.0) -> bool:
    """Wait until an execution started by this process's moto (in-process or its server) ends.

    Returns whether it ended. StartSyncExecution's executions have always ended when their response is
    returned.
    """
    if ":express:" in execution_arn:
        return True
    return join_execution(find_execution(execution_arn), timeout)


# -- thread-list --------------------------------------------------------------------------------------

PRUNE_EVERY: Final = 256


class _LiveThreads(list[Any]):
    """A list of threads that forgets the finished ones as it grows."""

    def __init__(self, threads: list[Any]):
        super().__init__(threads)
        self._pruned_at = len(self)

    def append(self, thread: Any) -> None:
        super().append(thread)
        if len(self) - self._pruned_at >= PRUNE_EVERY:  # read at call time: tests lower it
            self[:] = [t for t in self if t.is_alive()]
            self._pruned_at = len(self)


_THREAD_LIST_MODULES: Final = (
    "moto.stepfunctions.parser.utils",
    "moto.stepfunctions.parser.asl.component.program.program",
    "moto.stepfunctions.parser.asl.component.test_state.program.test_state_program",
    "moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.inline_iteration_component",
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback",
    "moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branch_worker",
    "moto.stepfunctions.parser.asl.component.state.exec.execute_state",
    "moto.stepfunctions.parser.backend.execution_worker",
)


def install_thread_list(patch: Patch) -> None:
    modules = [importlib.import_module(name) for name in _THREAD_LIST_MODULES]
    live = _LiveThreads(modules[0].TMP_THREADS)
    for module in modules:
        if hasattr(module, "TMP_THREADS"):
            patch.set(module, "TMP_THREADS", live)
