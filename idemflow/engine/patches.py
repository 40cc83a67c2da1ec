"""Fixes for moto 5.2.5's Step Functions interpreter, used by the embedded engine.

Everything here monkeypatches moto internals that were read and tested against ``moto==5.2.5``
(pinned in pyproject.toml). :func:`apply` installs every patch exactly once (idempotent and
thread-safe); :func:`remove` restores moto's original functions, which the unit tests use to show
that each patch is still needed.

Patches (each is explained next to its code):

1. atomic DynamoDB writes: one re-entrant lock around ``DynamoDBBackend``'s item operations;
2. ``$$.Execution.StartTime`` as an AWS-formatted string (``2026-11-23T08:26:00.123Z``);
3. ``StartSyncExecution`` for EXPRESS state machines (in-process and through moto's server);
4. a cache of parsed definitions (moto re-runs the ANTLR parser on every execution);
5. a wait-time scale for Wait states and Retry intervals (like Step Functions Local's
   ``WAIT_TIME_SCALE``), with every requested delay recorded, and delays that end promptly when
   an execution is stopped;
6. timestamps like AWS's: ``$$.State.EnteredTime`` written as ``...SS.sssZ``, and Choice rules
   ``Timestamp*`` accepting RFC 3339 timestamps with fractional seconds and offsets;
7. finished interpreter threads let go: moto keeps every thread it starts (one per Task state) in
   a list it never empties, and each thread holds its state's whole evaluation frame (~50 KB per run);
8. payload sizes as AWS measures them: UTF-8 bytes of compact JSON, at most 262,144, and also a task's
   input after ``Parameters`` processing;
9. a StartExecution without a name gets a UUID, as on AWS (moto names it ``None``);
10. DynamoDB task errors named after the AWS SDK for Java's exception classes, as AWS names them;
11. ``States.Runtime`` never caught nor retried (``States.ALL`` and its own name included);
12. ``States.JsonToString`` writes non-ASCII text as it is, not as ``\\uXXXX`` escapes.

Also installed: each execution's worker thread is kept on its worker, so that
:func:`wait_for_execution` can join it instead of polling ``describe_execution``.

StartSyncExecution through a server: the operation carries the endpoint trait
``hostPrefix: "sync-"``, so botocore sends it to ``http://sync-127.0.0.1:PORT/`` (or
``sync-localhost``) when given ``endpoint_url="http://127.0.0.1:PORT"``, which does not resolve.
Clients of a local endpoint need ``botocore.config.Config(inject_host_prefix=False)``: see
:data:`LOCAL_ENDPOINT_CLIENT_CONFIG`. In-process (``mock_aws``, no ``endpoint_url``) no option is
needed: the ``sync-states.<region>.amazonaws.com`` host is routed to Step Functions by this module.
"""

from __future__ import annotations

import collections
import copy
import datetime
import functools
import json
import math
import re
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any, Final, Literal

from botocore.config import Config
from moto.core.exceptions import AWSError

from idemflow.contract import MAX_STATE_PAYLOAD_BYTES

__all__ = [
    "LOCAL_ENDPOINT_CLIENT_CONFIG",
    "SYNC_EXECUTION_TIMEOUT_SECONDS",
    "RecordedDelay",
    "StateMachineTypeNotSupported",
    "apply",
    "aws_timestamp",
    "clear_recorded_delays",
    "get_wait_time_scale",
    "is_applied",
    "parse_cache_info",
    "parse_rfc3339",
    "recorded_delays",
    "remove",
    "restore_attributes",
    "set_attribute",
    "set_wait_time_scale",
    "wait_for_execution",
]

#: botocore options a Step Functions client needs when it talks to a local endpoint
#: (``endpoint_url=...``): without ``inject_host_prefix=False`` StartSyncExecution goes to
#: ``sync-<host>``. Merge it into the client's config: ``config.merge(LOCAL_ENDPOINT_CLIENT_CONFIG)``.
LOCAL_ENDPOINT_CLIENT_CONFIG: Final[Config] = Config(inject_host_prefix=False)

#: Longest a StartSyncExecution waits for its execution (real seconds): AWS's limit for an Express
#: execution is five minutes. Past it the execution is told to time out and TIMED_OUT is returned.
SYNC_EXECUTION_TIMEOUT_SECONDS: float = 300.0

# How long a scaled delay waits at most between two checks that the execution is still running.
# moto signals a stop by pulsing (set + clear) ``Environment.program_state_event``; a pulse that
# fires just before the wait starts is missed, so the wait also re-checks on this period.
_STOP_CHECK_SECONDS: Final[float] = 0.1

# Bounds on what this module keeps in memory for a long-lived engine.
_MAX_RECORDED_DELAYS: Final[int] = 10_000
_MAX_CACHED_PROGRAMS: Final[int] = 64

_SYNC_STATES_URL_BASE: Final[str] = r"https?://sync-states\.(.+)\.amazonaws.com"


# --------------------------------------------------------------------------------------------
# Public state: wait-time scale and recorded delays
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedDelay:
    """One delay the interpreter asked for: a Wait state or the interval before a retry."""

    execution_arn: str
    state_name: str
    kind: Literal["wait", "retry"]
    requested_seconds: float  # as the definition asked (retries: after BackoffRate, MaxDelaySeconds, jitter)
    slept_seconds: float  # real time spent (scaled; shorter when the execution was stopped)


_state_lock = threading.Lock()
_wait_time_scale: float = 1.0
_recorded: collections.deque[RecordedDelay] = collections.deque(maxlen=_MAX_RECORDED_DELAYS)


def set_wait_time_scale(scale: float) -> None:
    """Scale real waiting (Wait states, Retry intervals): 1.0 = real time, 0 = no waiting at all."""
    value = float(scale)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"wait time scale must be a finite number >= 0, got {scale!r}")
    global _wait_time_scale
    with _state_lock:
        _wait_time_scale = value


def get_wait_time_scale() -> float:
    return _wait_time_scale


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


# --------------------------------------------------------------------------------------------
# Patch bookkeeping
# --------------------------------------------------------------------------------------------

_MISSING: Final = object()
_patch_lock = threading.RLock()
# (owner, attribute, original value in owner.__dict__ or _MISSING), in installation order.
_installed: list[tuple[Any, str, Any]] = []
# (list, item) appended to moto's URL tables.
_appended: list[tuple[list[Any], Any]] = []
_applied = False
_applied_without: frozenset[str] = frozenset()


def _set_attr(owner: Any, name: str, value: Any) -> None:
    set_attribute(_installed, owner, name, value)


def _append(target: list[Any], item: Any) -> None:
    if item not in target:
        target.append(item)
        _appended.append((target, item))


def is_applied() -> bool:
    return _applied


def apply(without: Collection[str] = ()) -> None:
    """Install every patch but those named in ``without`` (tests that show one is needed).

    Once: a later call with the same ``without`` does nothing; with another, the patches are put
    back first. Safe to call from several threads. The names are :data:`PATCHES`' keys.
    """
    global _applied, _applied_without
    skipped = frozenset(without)
    unknown = skipped - PATCHES.keys()
    if unknown:
        raise KeyError(f"no such patch: {', '.join(sorted(unknown))} (patches: {', '.join(PATCHES)})")
    with _patch_lock:
        if _applied and skipped == _applied_without:
            return
        _undo()
        try:
            for name, install in PATCHES.items():
                if name not in skipped:
                    install()
        except BaseException:
            _undo()
            _applied = False
            raise
        _applied, _applied_without = True, skipped


def remove() -> None:
    """Restore moto's original functions (and forget the parse cache)."""
    global _applied
    with _patch_lock:
        _undo()
        _applied = False


def set_attribute(installed: list[tuple[Any, str, Any]], owner: Any, name: str, value: Any) -> None:
    """setattr, remembering in ``installed`` what ``owner`` itself held (for :func:`restore_attributes`).
    Shared with ``speedups.py``."""
    installed.append((owner, name, owner.__dict__.get(name, _MISSING)))
    setattr(owner, name, value)


def restore_attributes(installed: list[tuple[Any, str, Any]]) -> None:
    """Undo :func:`set_attribute` calls, newest first: an attribute the owner did not hold is deleted."""
    while installed:
        owner, name, original = installed.pop()
        if original is _MISSING:
            if name in owner.__dict__:
                delattr(owner, name)
        else:
            setattr(owner, name, original)


def _undo() -> None:
    restore_attributes(_installed)
    while _appended:
        target, item = _appended.pop()
        if item in target:
            target.remove(item)
    with _program_cache_lock:
        _program_cache.clear()


# --------------------------------------------------------------------------------------------
# 1. Atomic conditional writes
# --------------------------------------------------------------------------------------------
# moto's Table.put_item reads the current item, evaluates the ConditionExpression and then
# stores the new item, with nothing in between to stop another thread (moto's server and the
# interpreter both run requests on threads): two concurrent `attribute_not_exists` puts can both
# see "no item" and both succeed. One process-wide re-entrant lock around every backend method
# that reads or writes items makes each of them atomic (re-entrant: transact_write_items calls
# get_item/put_item/... itself). A single lock rather than one per table: transactions span
# tables, and moto's transact_write_items deep-copies every table it touches and puts the copies
# back when one of its conditions fails, which without the lock also wipes out any write made to
# those tables meanwhile. The cost (DynamoDB calls serialised) is small next to the GIL these
# calls share anyway. Caveat: a table stream with a Lambda event source mapping invokes the
# function inside put_item, i.e. under the lock (same thread: fine, it is re-entrant).

_DYNAMODB_LOCK: Final = threading.RLock()
_DYNAMODB_METHODS: Final[tuple[str, ...]] = (
    "put_item",
    "update_item",
    "delete_item",
    "get_item",
    "transact_write_items",
    "batch_write_item",
    "execute_statement",
    "execute_transaction",
    "batch_execute_statement",
)


def _locked(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with _DYNAMODB_LOCK:
            return fn(*args, **kwargs)

    return locked


def _patch_dynamodb_lock() -> None:
    from moto.dynamodb.models import DynamoDBBackend

    for name in _DYNAMODB_METHODS:
        original = DynamoDBBackend.__dict__.get(name)
        if callable(original):
            _set_attr(DynamoDBBackend, name, _locked(original))


# --------------------------------------------------------------------------------------------
# 2. $$.Execution.StartTime
# --------------------------------------------------------------------------------------------
# moto's Execution passes its `start_date` (a datetime) as ExecutionDetails.start_time, and the
# interpreter copies it as is into the context object. A definition that reads
# $$.Execution.StartTime then puts a datetime into the state data: describe_execution fails with
# "Object of type datetime is not JSON serializable" (or the run fails with States.Runtime).
# ExecutionDetails is the one place every execution (async, sync, Map/Parallel frames share the
# same context) gets its start time from, so it is converted there, to AWS's format: UTC,
# milliseconds, "Z".


def aws_timestamp(value: datetime.datetime) -> str:
    """``2026-11-23T08:26:00.123Z``: how Step Functions writes times in the context object."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    value = value.astimezone(datetime.UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def _patch_execution_start_time() -> None:
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

    _set_attr(ExecutionDetails, "__init__", __init__)


# --------------------------------------------------------------------------------------------
# Worker threads (used by StartSyncExecution and wait_for_execution)
# --------------------------------------------------------------------------------------------
# moto's ExecutionWorker.start starts an anonymous thread (and appends it to LocalStack's
# TMP_THREADS list, which moto never empties). Keeping the thread on the worker instead lets a
# caller join it: no polling, which starves the interpreter of the GIL.

_THREAD_ATTR: Final[str] = "_idemflow_thread"


def _patch_worker_thread() -> None:
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    def start(self: Any) -> None:
        def run() -> None:
            try:
                self._execution_logic()
            finally:
                # Ended: the status says so from now on (wait_for_execution reads it when there is no
                # thread), and a finished thread kept on every execution is ~2 KB each for ever.
                self.__dict__.pop(_THREAD_ATTR, None)

        thread = threading.Thread(target=run, name="sfn-execution", daemon=True)
        setattr(self, _THREAD_ATTR, thread)
        thread.start()

    _set_attr(ExecutionWorker, "start", start)


def _parse_execution_arn(execution_arn: str) -> tuple[str, str]:
    parts = execution_arn.split(":")
    if len(parts) < 8 or parts[2] != "states":
        raise ValueError(f"not an execution ARN: {execution_arn!r}")
    return parts[4], parts[3]  # account, region


def _find_execution(execution_arn: str) -> Any:
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    account, region = _parse_execution_arn(execution_arn)
    backend: Any = stepfunctions_parser_backends[account][region]
    return backend.describe_execution(execution_arn)


def wait_for_execution(execution_arn: str, timeout: float = 30.0) -> bool:
    """Wait until an execution started by this process's moto (in-process or its server) ends.

    Joins the execution's worker thread (see above); for an execution whose thread is unknown
    (started before :func:`apply`), polls its status every 50 ms. Returns whether it ended.
    StartSyncExecution's executions have always ended when their response is returned.
    """
    if ":express:" in execution_arn:
        return True
    deadline = time.monotonic() + timeout
    execution = _find_execution(execution_arn)
    thread: threading.Thread | None = getattr(execution.exec_worker, _THREAD_ATTR, None)
    if thread is not None:
        thread.join(max(0.0, deadline - time.monotonic()))
        return not thread.is_alive()
    while execution.status == "RUNNING":
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(0.05, remaining))
    return True


# --------------------------------------------------------------------------------------------
# 3. StartSyncExecution
# --------------------------------------------------------------------------------------------
# moto's StepFunctionResponse has no `start_sync_execution`, so its dispatcher answers 404
# "Not yet implemented" (the LocalStack provider code vendored in moto/stepfunctions/parser/
# provider.py is never wired in). The handler added here starts a normal interpreter execution
# on its own worker thread and joins that thread with a deadline. Routing: on AWS the operation
# lives on the host `sync-states.<region>.amazonaws.com`, which matches none of moto's URL
# patterns, so in-process (mock_aws) requests fell through to moto's catch-all 404; the host is
# added to the Step Functions URL bases and to moto's backend index. moto's server picks the
# service from the request signature (`.../states/aws4_request`), not the host, so it needs no
# routing change, but clients must not prefix the host (see LOCAL_ENDPOINT_CLIENT_CONFIG).
# Sync executions get AWS's Express ARN (`...:express:<machine>:<name>:<uuid>`) and are not kept
# in the state machine's execution list: AWS has no DescribeExecution/ListExecutions for them,
# their names need not be unique, and moto would keep ~50 KB of history for each.


class StateMachineTypeNotSupported(AWSError):
    """AWS's answer to StartSyncExecution on a STANDARD state machine."""

    TYPE = "StateMachineTypeNotSupported"
    STATUS = 400


def _billed(start: datetime.datetime, stop: datetime.datetime) -> dict[str, int]:
    # Express billing: duration rounded up to 100 ms, memory in 64 MB steps (small payloads: 64).
    milliseconds = max(1, math.ceil((stop - start).total_seconds() * 1000))
    return {
        "billedMemoryUsedInMB": 64,
        "billedDurationInMilliseconds": math.ceil(milliseconds / 100) * 100,
    }


def _backend_start_sync_execution(
    self: Any,
    state_machine_arn: str,
    name: str | None = None,
    execution_input: str | None = None,
    trace_header: str | None = None,
) -> dict[str, Any]:
    from moto.stepfunctions.exceptions import InvalidExecutionInput
    from moto.stepfunctions.parser.api import ExecutionStatus, StateMachineType
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str
    from moto.stepfunctions.parser.backend.execution import Execution

    state_machine: Any = self.describe_state_machine(state_machine_arn)
    if state_machine.type != StateMachineType.EXPRESS.value:
        raise StateMachineTypeNotSupported("This operation is not supported by this type of state machine")
    if name:
        self._validate_name(name)
    exec_name = name or str(uuid.uuid4())
    input_text = "{}" if execution_input is None else execution_input
    try:
        json.loads(input_text)
    except ValueError as error:
        raise InvalidExecutionInput(f"Invalid State Machine Execution Input: '{error}'") from error

    # Same snapshot as moto's start_execution: without the executions (live threads, locks)
    # and sharing the backend.
    clone: Any = copy.deepcopy(
        state_machine,
        {id(state_machine.executions): [], id(state_machine.backend): state_machine.backend},
    )
    # moto sets every state machine's `sm_type` to STANDARD (the real type is `type`).
    clone.sm_type = StateMachineType.EXPRESS
    execution_arn = (
        f"arn:{self.partition}:states:{self.region_name}:{self.account_id}:"
        f"express:{state_machine.name}:{exec_name}:{uuid.uuid4()}"
    )
    execution: Any = Execution(
        name=exec_name,
        sm_type=clone.sm_type,
        role_arn=clone.roleArn,
        exec_arn=execution_arn,
        account_id=self.account_id,
        region_name=self.region_name,
        state_machine=clone,
        start_date=datetime.datetime.now(tz=datetime.UTC),
        cloud_watch_logging_session=None,
        input_data=input_text,
        trace_header=trace_header,
        activity_store={},
    )
    execution.start()
    thread: threading.Thread | None = getattr(execution.exec_worker, _THREAD_ATTR, None)  # None: ended already
    if thread is not None:
        thread.join(SYNC_EXECUTION_TIMEOUT_SECONDS)
    if thread is not None and thread.is_alive():
        env = execution.exec_worker.env
        if env is not None:
            env.set_timed_out()
        thread.join(1.0)
        if thread.is_alive():  # stuck in a call that ignores the interpreter's state
            execution.exec_status = ExecutionStatus.TIMED_OUT
            execution.stop_date = datetime.datetime.now(tz=datetime.UTC)

    status = execution.exec_status
    stop_date: datetime.datetime = execution.stop_date or datetime.datetime.now(tz=datetime.UTC)
    if status == ExecutionStatus.SUCCEEDED:
        sync_status = "SUCCEEDED"
    elif status == ExecutionStatus.TIMED_OUT:
        sync_status = "TIMED_OUT"
    else:  # FAILED, ABORTED, or a worker thread that died without reporting
        sync_status = "FAILED"
        if status == ExecutionStatus.RUNNING and execution.error is None:
            execution.error = "States.Runtime"
            execution.cause = "The execution's interpreter thread ended without a result."
    response: dict[str, Any] = {
        "executionArn": execution_arn,
        "stateMachineArn": state_machine.arn,
        "name": exec_name,
        "startDate": execution.start_date,
        "stopDate": stop_date,
        "status": sync_status,
        "input": input_text,
        "inputDetails": {"included": True},
        "billingDetails": _billed(execution.start_date, stop_date),
    }
    if sync_status == "SUCCEEDED":
        response["output"] = to_json_str(execution.output, separators=(",", ":"))
        response["outputDetails"] = {"included": True}
    if execution.error is not None:
        response["error"] = execution.error
    if execution.cause is not None:
        response["cause"] = execution.cause
    if trace_header:
        response["traceHeader"] = trace_header
    return response


def _response_start_sync_execution(self: Any) -> Any:
    from moto.core.responses import ActionResult
    from moto.stepfunctions.exceptions import ValidationException

    backend = self.stepfunction_backend
    start_sync = getattr(backend, "start_sync_execution", None)
    if start_sync is None:
        raise ValidationException(
            "StartSyncExecution needs moto's config {'stepfunctions': {'execute_state_machine': True}}"
        )
    result = start_sync(
        state_machine_arn=self._get_param("stateMachineArn"),
        name=self._get_param("name"),
        execution_input=self._get_param("input"),
        trace_header=self._get_param("traceHeader"),
    )
    return ActionResult(result)


def _patch_start_sync_execution() -> None:
    import moto.backend_index as backend_index
    import moto.stepfunctions.urls as sfn_urls
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend
    from moto.stepfunctions.responses import StepFunctionResponse

    _set_attr(StepFunctionsParserBackend, "start_sync_execution", _backend_start_sync_execution)
    _set_attr(StepFunctionResponse, "start_sync_execution", _response_start_sync_execution)
    _append(sfn_urls.url_bases, _SYNC_STATES_URL_BASE)
    # re.Pattern objects compare equal by pattern and flags, so _append adds this only once.
    _append(backend_index.backend_url_patterns, ("stepfunctions", re.compile(_SYNC_STATES_URL_BASE)))
    # The Standard-only operations refuse an Express execution's ARN as AWS does (recorded: LocalStack's
    # AWS-validated test_sfn_api_express.py::test_start_async_describe_history_execution, 03-07-2024):
    # InvalidArn "Invalid Arn: 'Resource type not valid in this context: express'". moto looks the
    # ARN up among Standard executions and answers ExecutionDoesNotExist.
    for operation in ("describe_execution", "stop_execution", "get_execution_history"):
        _set_attr(
            StepFunctionsParserBackend, operation, _refusing_express(getattr(StepFunctionsParserBackend, operation))
        )


def _refusing_express(operation: Callable[..., Any]) -> Callable[..., Any]:
    from moto.stepfunctions.exceptions import InvalidArn

    @functools.wraps(operation)
    def refusing(self: Any, execution_arn: str, *args: Any, **kwargs: Any) -> Any:
        if execution_arn.split(":")[5:6] == ["express"]:
            raise InvalidArn("Invalid Arn: 'Resource type not valid in this context: express'")
        return operation(self, execution_arn, *args, **kwargs)

    return refusing


# --------------------------------------------------------------------------------------------
# 4. Parse cache
# --------------------------------------------------------------------------------------------
# ExecutionWorker._get_evaluation_entrypoint runs the ANTLR parser on the definition for every
# execution (about half of an execution's time). The parsed program is reused, keyed by the
# definition text. Checked safe to share between concurrent executions: every piece of
# per-execution state lives in the Environment (env.heap, env.stack, frames), and the only
# attribute a component writes after parsing is its lazily created `heap_key` (a random id used
# to key env.heap). Two executions creating the same component's key at once could each store
# state under a different key (a retry counter lost, say), so every key is created before the
# program is shared (_warm_heap_keys, ~4 ms once per definition). Measured on a 10-state
# definition: parse 44 ms, deep copy of the parsed program 1.3 ms; sharing costs nothing per
# execution, and since nothing else is written there is nothing a copy would protect.

_program_cache_lock = threading.Lock()
_program_cache: collections.OrderedDict[str, Any] = collections.OrderedDict()
_cache_stats = {"hits": 0, "misses": 0}


def _iter_components(root: Any) -> Iterator[Any]:
    seen: set[int] = set()
    todo = [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, list | tuple | set | frozenset):
            todo.extend(obj)
        elif isinstance(obj, dict):
            todo.extend(obj.values())
        elif type(obj).__module__.startswith("moto.stepfunctions.parser.") and hasattr(obj, "__dict__"):
            yield obj
            todo.extend(vars(obj).values())


def _warm_heap_keys(program: Any) -> None:
    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent

    for component in _iter_components(program):
        if isinstance(component, EvalComponent):
            _ = component.heap_key


def _cached_program(definition: str) -> Any:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    with _program_cache_lock:
        program = _program_cache.get(definition)
        if program is not None:
            _program_cache.move_to_end(definition)
            _cache_stats["hits"] += 1
            return program
        # Parsing under the lock: a concurrent first run of the same definition waits for this
        # parse instead of repeating it (threads would not parse faster side by side anyway).
        program = AmazonStateLanguageParser.parse(definition)[0]
        _warm_heap_keys(program)
        _program_cache[definition] = program
        _cache_stats["misses"] += 1
        while len(_program_cache) > _MAX_CACHED_PROGRAMS:
            _program_cache.popitem(last=False)
        return program


def parse_cache_info() -> dict[str, int]:
    """Hits, misses and size of the parse cache (for tests and benchmarks)."""
    with _program_cache_lock:
        return {**_cache_stats, "size": len(_program_cache)}


def _patch_parse_cache() -> None:
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    def _get_evaluation_entrypoint(self: Any) -> Any:
        return _cached_program(self._evaluation_details.state_machine_details.definition)

    _set_attr(ExecutionWorker, "_get_evaluation_entrypoint", _get_evaluation_entrypoint)


# --------------------------------------------------------------------------------------------
# 5. Wait-time scale
# --------------------------------------------------------------------------------------------
# Retry intervals (RetrierDecl._eval_body: time.sleep) and Wait states
# (WaitFunction._wait_interval: Event.wait) block for the real time requested, so a workflow
# with a 30 s Wait takes 30 s in a test. Both are replaced by _delay(), which records the
# requested delay, waits for `requested * scale` seconds (not at all for scale 0) and wakes up
# when the execution stops. The retrier's body is a copy of moto's with only the sleep changed,
# so the recorded value is exactly the interval moto computed (IntervalSeconds x BackoffRate^n,
# capped by MaxDelaySeconds, then JitterStrategy). moto's time.sleep also ignored
# stop_execution: a stopped execution kept sleeping out its retry interval.
# Wait "Timestamp"/"TimestampPath" also compared the UTC timestamp with the *local* naive time
# (datetime.now()), which is wrong by the host's UTC offset: compared with UTC now instead.
# Seconds, SecondsPath, Timestamp and TimestampPath all end in WaitFunction._wait_interval.


def _context_names(env: Any) -> tuple[str, str]:
    try:
        data = env.states.context_object.context_object_data
        return str(data["Execution"]["Id"]), str((data.get("State") or {}).get("Name", ""))
    except (AttributeError, KeyError, TypeError):
        return "", ""


def _delay(env: Any, kind: Literal["wait", "retry"], requested: float) -> None:
    requested = max(0.0, float(requested))
    started = time.monotonic()
    target = requested * _wait_time_scale
    if target > 0:
        deadline = started + target
        while env.is_running():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            env.program_state_event.wait(min(remaining, _STOP_CHECK_SECONDS))
    slept = time.monotonic() - started
    execution_arn, state_name = _context_names(env)
    with _state_lock:
        _recorded.append(RecordedDelay(execution_arn, state_name, kind, requested, slept))


def _retrier_eval_body(self: Any, env: Any) -> None:
    from moto.stepfunctions.parser.asl.component.common.retry.max_attempts_decl import (
        MaxAttemptsOutcome,
    )
    from moto.stepfunctions.parser.asl.component.common.retry.retrier_outcome import (
        RetrierOutcome,
    )

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
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEventException,
    )

    self.string.eval(env=env)
    timestamp_str: str = env.stack.pop()
    timestamp: datetime.datetime | None = self._from_timestamp_string(timestamp=timestamp_str)
    if timestamp is None:
        raise FailureEventException(self._create_failure_event(env, timestamp_str))
    now_utc = datetime.datetime.now(tz=datetime.UTC).replace(tzinfo=None)
    return max(0.0, (timestamp - now_utc).total_seconds())


def _patch_time_scale() -> None:
    from moto.stepfunctions.parser.asl.component.common.retry.retrier_decl import RetrierDecl
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import (
        Timestamp,
    )
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import (
        WaitFunction,
    )

    _set_attr(RetrierDecl, "_eval_body", _retrier_eval_body)
    _set_attr(WaitFunction, "_wait_interval", _wait_interval)
    _set_attr(Timestamp, "_get_wait_seconds", _timestamp_wait_seconds)


# --------------------------------------------------------------------------------------------
# 6. Timestamps like AWS's
# --------------------------------------------------------------------------------------------
# Choice rules Timestamp{Equals,LessThan,...}[Path] and IsTimestamp parse values with
# strptime("%Y-%m-%dT%H:%M:%SZ") (IsTimestamp.string_to_timestamp): any fractional seconds or
# numeric offset makes the value "not a timestamp", so `"2026-11-23T08:00:00.250Z" <
# "2026-11-23T09:00:00.000Z"` is false, and when only the compared value fails to parse the
# comparison raises TypeError (States.Runtime). AWS accepts RFC 3339 (uppercase T, Z or a numeric
# offset, any fraction) and compares instants. Replaced by parse_rfc3339, which returns an aware
# UTC datetime (every value of a comparison goes through it, so aware vs naive never meet).
# Also, moto writes $$.State.EnteredTime as datetime.isoformat() (`...07.638154+00:00`); AWS
# writes `...07.638Z`, like StartTime. Values compared as strings (DynamoDB conditions on stored
# times) only order correctly within one format, so EnteredTime is converted where moto builds
# it: the StateData constructor as named in moto's state.py, the one place that creates it.

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


_clock_offset = datetime.timedelta(0)


def set_clock_offset(seconds: float) -> None:
    """Move the executions' clock (``$$.State.EnteredTime``) by ``seconds`` from real time.

    How tests make a lease or a record expire without sleeping: every time the definition reads
    comes from the context object, so shifting it is the same as time passing.
    """
    global _clock_offset
    _clock_offset = datetime.timedelta(seconds=seconds)


def get_clock_offset() -> float:
    return _clock_offset.total_seconds()


def _aws_state_data(**fields: Any) -> dict[str, Any]:
    entered = parse_rfc3339(fields.get("EnteredTime"))
    if entered is not None:
        fields["EnteredTime"] = aws_timestamp(entered + _clock_offset)
    return fields


def _patch_timestamps() -> None:
    import moto.stepfunctions.parser.asl.component.state.state as state_module
    from moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations.is_operator import (
        IsTimestamp,
    )

    _set_attr(IsTimestamp, "string_to_timestamp", staticmethod(parse_rfc3339))
    _set_attr(state_module, "StateData", _aws_state_data)


# --------------------------------------------------------------------------------------------
# 7. Finished interpreter threads let go
# --------------------------------------------------------------------------------------------
# The interpreter (code from LocalStack) appends every thread it starts to the module-level list
# ``moto.stepfunctions.parser.utils.TMP_THREADS``; LocalStack joins them at shutdown, moto never
# reads or empties it. A Task state's thread keeps its closure, i.e. the state's evaluation frame
# (input, parameters, the service's response): an engine grew by ~75 KB per execution, for ever.
# Each module imported the list by name, so every module's name is pointed at one list that drops
# finished threads whenever it has grown by PRUNE_EVERY since the last pass (amortised O(1)).

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


def _thread_list_modules() -> list[Any]:
    import importlib

    names = [
        "moto.stepfunctions.parser.utils",
        "moto.stepfunctions.parser.asl.component.program.program",
        "moto.stepfunctions.parser.asl.component.test_state.program.test_state_program",
        "moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.inline_iteration_component",
        "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback",
        "moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branch_worker",
        "moto.stepfunctions.parser.asl.component.state.exec.execute_state",
        "moto.stepfunctions.parser.backend.execution_worker",
    ]
    return [importlib.import_module(name) for name in names]


def _patch_thread_list() -> None:
    modules = _thread_list_modules()
    live = _LiveThreads(modules[0].TMP_THREADS)
    for module in modules:
        if hasattr(module, "TMP_THREADS"):
            _set_attr(module, "TMP_THREADS", live)


# --------------------------------------------------------------------------------------------
# 8. Payload sizes as AWS measures them
# --------------------------------------------------------------------------------------------
# AWS: "262,144 bytes of data as a UTF-8 encoded string" for a task's, a state's or an execution's
# input or output (service quotas page), "Maximum length of 262144" bytes in UTF-8 (API reference,
# LambdaFunctionSucceededEventDetails), checked on a connector's output, a state's output and "after
# Parameters processing, the input of a state" (concepts-error-handling, States.DataLimitExceeded).
# moto measures json.dumps(value) with its defaults: non-ASCII escaped as \uXXXX (6 bytes for a
# 2-byte "é") and ", " / ": " separators, and requires strictly less than 262,144; and it never
# checks a task's input after Parameters. Both are corrected: quotas.is_within_size_quota (imported by
# name into the three modules that call it) measures compact UTF-8 JSON, and every optimized
# integration's parameters are checked before its request, as a TaskFailed States.DataLimitExceeded.


def payload_bytes(value: Any) -> int:
    """The size Step Functions counts: UTF-8 bytes of the value as compact JSON (a string as it is)."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return len(text.encode("utf-8"))


def _is_within_size_quota(value: Any) -> bool:
    return payload_bytes(value) <= MAX_STATE_PAYLOAD_BYTES


def _patch_payload_size() -> None:
    from moto.stepfunctions.parser import quotas
    from moto.stepfunctions.parser.asl.component.state import state as state_module
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import state_task_lambda
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service

    for module in (quotas, state_module, state_task_lambda, state_task_service):
        _set_attr(module, "is_within_size_quota", _is_within_size_quota)
    # Every optimized integration (DynamoDB, Lambda invoke) passes _before_eval_execution with its
    # effective input after Parameters, before its request: the place AWS's check fails the task.
    service = state_task_service.StateTaskService
    before: Callable[..., Any] = service.__dict__["_before_eval_execution"]

    @functools.wraps(before)
    def _before_eval_execution(self: Any, env: Any, resource_runtime_part: Any, raw_parameters: Any, **kw: Any) -> Any:
        self._verify_size_quota(env=env, value=raw_parameters)
        return before(self, env=env, resource_runtime_part=resource_runtime_part, raw_parameters=raw_parameters, **kw)

    _set_attr(service, "_before_eval_execution", _before_eval_execution)
    # The DynamoDB task turns every exception that is not a ClientError into
    # DynamoDB.AmazonDynamoDBException, the interpreter's own failure events included: those keep their
    # error, as the base class's _from_error (which the Lambda task falls back to) does.
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEventException
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_dynamodb

    dynamodb = state_task_service_dynamodb.StateTaskServiceDynamoDB
    from_error: Callable[..., Any] = dynamodb.__dict__["_from_error"]

    @functools.wraps(from_error)
    def _from_error(self: Any, env: Any, ex: Exception) -> Any:
        if isinstance(ex, FailureEventException):
            return ex.failure_event
        return from_error(self, env, ex)

    _set_attr(dynamodb, "_from_error", _from_error)


# --------------------------------------------------------------------------------------------
# 9. Nameless executions get a UUID
# --------------------------------------------------------------------------------------------
# AWS, StartExecution, `name`: "If you don't provide a name for the execution, Step Functions
# automatically generates a universally unique identifier (UUID) as the execution name" (API
# reference). moto 5.2.5 passes the missing name on as None: the execution ARN ends in ":None", and
# the second nameless start of a state machine fails ExecutionAlreadyExists (same name, other input)
# or returns the first execution (same input). The name is generated where every start arrives, the
# backend's start_execution (moto's HTTP handler, the engine's in-process start and mock_config's
# #TestCase starts all call it).


def _patch_execution_names() -> None:
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    start: Callable[..., Any] = StepFunctionsParserBackend.__dict__["start_execution"]

    @functools.wraps(start)
    def start_execution(self: Any, state_machine_arn: str, name: Any = None, *args: Any, **kwargs: Any) -> Any:
        return start(self, state_machine_arn, str(uuid.uuid4()) if name is None else name, *args, **kwargs)

    _set_attr(StepFunctionsParserBackend, "start_execution", start_execution)


# --------------------------------------------------------------------------------------------
# 10. DynamoDB error names as Step Functions writes them
# --------------------------------------------------------------------------------------------
# moto (like LocalStack) names a failed DynamoDB task `DynamoDB.<error code>`. Step Functions names it
# after the exception class of the AWS SDK for Java the integration uses, and a code without a class of
# its own becomes `DynamoDB.AmazonDynamoDBException` with the code in the Cause. Recorded on AWS
# (LocalStack's AWS-validated tests/aws/services/stepfunctions/v2/error_handling/
# test_task_service_dynamodb.snapshot.json: test_invalid_param and test_put_item_invalid_table_name,
# a ValidationException, fail `DynamoDB.AmazonDynamoDBException`; test_put_item_no_such_table fails
# `DynamoDB.ResourceNotFoundException`). The classes are those of com.amazonaws.services.dynamodbv2.model
# for the data-plane codes: two codes have a class with another name (RequestLimitExceeded,
# InternalServerError); ValidationException, ThrottlingException, AccessDeniedException and the like
# have none. The cause keeps moto's text, which has the recorded shape
# "<message> (Service: AmazonDynamoDBv2; Status Code: 400; Error Code: <code>; Request ID: ...; Proxy: null)".

#: DynamoDB error code -> the SDK for Java exception class Step Functions names the error after.
DYNAMODB_EXCEPTION_CLASSES: Final[dict[str, str]] = {
    "ConditionalCheckFailedException": "ConditionalCheckFailedException",
    "ProvisionedThroughputExceededException": "ProvisionedThroughputExceededException",
    "RequestLimitExceeded": "RequestLimitExceededException",
    "InternalServerError": "InternalServerErrorException",
    "ResourceNotFoundException": "ResourceNotFoundException",
    "ResourceInUseException": "ResourceInUseException",
    "LimitExceededException": "LimitExceededException",
    "ItemCollectionSizeLimitExceededException": "ItemCollectionSizeLimitExceededException",
    "TransactionConflictException": "TransactionConflictException",
    "TransactionCanceledException": "TransactionCanceledException",
    "TransactionInProgressException": "TransactionInProgressException",
    "IdempotentParameterMismatchException": "IdempotentParameterMismatchException",
}
DYNAMODB_FALLBACK_EXCEPTION: Final = "AmazonDynamoDBException"


def dynamodb_error_name(code: str) -> str:
    """The error a failed DynamoDB task reports on AWS for a DynamoDB error code."""
    return f"DynamoDB.{DYNAMODB_EXCEPTION_CLASSES.get(code, DYNAMODB_FALLBACK_EXCEPTION)}"


def _patch_dynamodb_error_names() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_dynamodb

    dynamodb = state_task_service_dynamodb.StateTaskServiceDynamoDB
    moto_names: Callable[[Any], tuple[str, str]] = dynamodb.__dict__["_error_cause_from_client_error"].__func__

    def error_cause(client_error: Any) -> tuple[str, str]:
        _, cause = moto_names(client_error)
        return dynamodb_error_name(str(client_error.response["Error"]["Code"])), cause

    _set_attr(dynamodb, "_error_cause_from_client_error", staticmethod(error_cause))


# --------------------------------------------------------------------------------------------
# 11. States.Runtime is never caught nor retried
# --------------------------------------------------------------------------------------------
# AWS docs (concepts-error-handling): "A retry or catch on States.ALL will not catch States.Runtime
# errors." Recorded on AWS: a Catch naming States.Runtime explicitly does not catch it either
# (LocalStack's AWS-validated v2/scenarios/test_base_scenarios.snapshot.json, test_catch_states_runtime:
# the execution fails with States.Runtime). moto matches it with States.ALL and by name, so a definition
# that leans on either passes on the engine and fails on AWS. States.DataLimitExceeded is left as it
# is: the docs say States.ALL does not catch it, but AWS's recorded executions show it caught by
# States.ALL (test_states_errors.snapshot.json, ..._catch_state_all_data_limit_exceeded...), and moto
# does the same.


def _patch_states_runtime() -> None:
    from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import ErrorEqualsDecl
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )

    matches: Callable[..., None] = ErrorEqualsDecl.__dict__["_eval_body"]

    @functools.wraps(matches)
    def _eval_body(self: Any, env: Any) -> None:
        error_name = env.stack[-1]
        if isinstance(error_name, StatesErrorName) and error_name.typ == StatesErrorNameType.StatesRuntime:
            env.stack.pop()
            env.stack.append(False)
            return
        matches(self, env)

    _set_attr(ErrorEqualsDecl, "_eval_body", _eval_body)


# --------------------------------------------------------------------------------------------
# 12. States.JsonToString writes text as it is
# --------------------------------------------------------------------------------------------
# moto writes json.dumps(value, separators=(",", ":")): compact (as recorded on AWS: LocalStack's
# AWS-validated v2/intrinsic_functions/test_json_manipulation.snapshot.json, {"Arg1": 1, "Arg2": []} ->
# "{\"Arg1\":1,\"Arg2\":[]}"), but with Python's ensure_ascii, so "é" becomes the six characters \u00e9.
# No AWS recording of non-ASCII output was found. Step Functions serialises with a Java JSON library
# (its States.Format writes an object Java's way, {Arg1=1, Arg2=[]}: test_generic.snapshot.json,
# test_format_2, in the same folder), whose default writes non-ASCII characters as they are; the
# engine does the same, and the client's length check (idemflow.keys.check_input) accepts only
# payloads that fit under both readings.


def _patch_json_to_string() -> None:
    from moto.stepfunctions.parser.asl.component.intrinsic.function.statesfunction.json_manipulation import (
        json_to_string,
    )

    JsonToString = json_to_string.JsonToString

    def _eval_body(self: Any, env: Any) -> None:
        self.argument_list.eval(env=env)
        args = env.stack.pop()
        env.stack.append(json.dumps(args.pop(), separators=(",", ":"), ensure_ascii=False))

    _set_attr(JsonToString, "_eval_body", _eval_body)


# --------------------------------------------------------------------------------------------
# 13. An execution's output is its JSON text
# --------------------------------------------------------------------------------------------
# DescribeExecution's output is the execution's output as JSON text (API reference: "output: The JSON
# output data of the execution"). moto's handler passes a str output through as it is, so an execution
# whose output is the string "abc" answers output=abc (not JSON), and it writes other values with
# json.dumps' defaults: ", " separators and non-ASCII escaped, where AWS's recorded outputs are compact
# (LocalStack's AWS-validated snapshots, e.g. express/test_express_sync.py::test_base). The parser
# backend keeps every output as a value (``env.states.get_input()``), so it is always encoded.


def execution_output_text(output: Any) -> str:
    """An execution's output as DescribeExecution returns it."""
    return json.dumps(output, separators=(",", ":"), ensure_ascii=False)


def _patch_execution_output() -> None:
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

    _set_attr(StepFunctionResponse, "describe_execution", describe_execution)


#: Every patch, by the name the registry (``registry.py``) and ``apply(without=...)`` use, in the
#: order they are installed.
PATCHES: Final[dict[str, Callable[[], None]]] = {
    "atomic-writes": _patch_dynamodb_lock,
    "start-time": _patch_execution_start_time,
    "worker-thread": _patch_worker_thread,
    "start-sync-execution": _patch_start_sync_execution,
    "parse-cache": _patch_parse_cache,
    "wait-time-scale": _patch_time_scale,
    "timestamps": _patch_timestamps,
    "thread-list": _patch_thread_list,
    "payload-size": _patch_payload_size,
    "execution-names": _patch_execution_names,
    "dynamodb-error-names": _patch_dynamodb_error_names,
    "states-runtime": _patch_states_runtime,
    "json-to-string": _patch_json_to_string,
    "execution-output": _patch_execution_output,
}
