"""How long the engine keeps an execution once it has closed: what AWS keeps, bounded as the user sets.

AWS keeps a Standard execution's history for 90 days after it closes, then removes it, and its name may be
used again ("Execution history data removed after 90 days. Workflow names can be reused after removal of
out-of-date execution data", Step Functions developer guide, Execution guarantees); from then on
DescribeExecution, GetExecutionHistory and RedriveExecution answer ``ExecutionDoesNotExist`` for its ARN (API
reference). Express executions are not kept at all ("Execution history is not captured by Step Functions",
the same page): a synchronous one is never listed (StartSyncExecution), and an asynchronous one is kept under
the same bound as a Standard one, for a parent's ``.sync`` task reads its end through DescribeExecution in
moto's interpreter.

moto keeps every execution, with its history and a copy of its state machine, for as long as the process
lives. The engine keeps closed Standard executions up to a count and for at most an age
(:class:`~idemflow.engine.state.Retention`, which ``idemflow serve`` and ``Engine`` set): the oldest closed
one goes first, a running one never (a redriven execution is open again until it closes again). An evicted
execution answers as one past AWS's retention does: ``ExecutionDoesNotExist``, and its name is free. A
shorter retention than AWS's also shortens redrive's window (14 days on AWS): an evicted execution cannot be
redriven. Nothing else is touched: the workflow's records, queues and tables are the user's data.
"""

from __future__ import annotations

import contextlib
import datetime
import threading
from collections import OrderedDict
from typing import Any

from idemflow.engine import state

_lock = threading.Lock()
# Closed Standard executions, oldest close first: ARN -> (the list that holds it, the execution, when it closed
# on the engine's clock).
_closed: OrderedDict[str, tuple[Any, Any, datetime.datetime]] = OrderedDict()
_OPEN = frozenset({"RUNNING", "PENDING_REDRIVE"})


def _status(execution: Any) -> str:
    status = execution.exec_status
    return str(getattr(status, "value", status))


def _holder(execution: Any) -> Any:
    """The list of the state machine (or version) that keeps ``execution``, or None (a sync Express one)."""
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    backend: Any = stepfunctions_parser_backends[execution.account_id][execution.region_name]
    arn = execution.exec_arn
    for machine in list(backend.state_machines):
        candidates: list[Any] = [machine, *list(machine.versions.values())]
        for candidate in candidates:
            executions = candidate.executions
            # The execution index's lookup (execution-index); moto's own list is walked without it.
            indexed = getattr(executions, "by_arn", None)
            if indexed.get(arn) if indexed is not None else next((e for e in executions if e is execution), None):
                return executions
    return None


def closed(execution: Any) -> list[str]:
    """Keep ``execution``, which has just closed, as the retention says; the ARNs evicted."""
    retention = state.current().retention
    if retention is None:
        return []  # moto's own behaviour: every execution kept
    holder = _holder(execution)
    if holder is None:
        return []  # a sync Express execution: never listed
    arn = str(execution.exec_arn)
    with _lock:
        _closed[arn] = (holder, execution, _now())
        _closed.move_to_end(arn)
        return _sweep(retention)


def sweep() -> list[str]:
    """Evict the closed executions past the retention's age (a start calls it: time passes without closes);
    their ARNs."""
    retention = state.current().retention
    if retention is None or retention.seconds is None:
        return []
    with _lock:
        return _sweep(retention)


def _now() -> datetime.datetime:
    """The engine's clock: real time plus the offset a test sets to let time pass without waiting."""
    return datetime.datetime.now(tz=datetime.UTC) + state.current().clock_offset


def _sweep(retention: state.Retention) -> list[str]:
    evicted: list[str] = []
    now = _now()
    while _closed:
        arn, (holder, execution, closed_at) = next(iter(_closed.items()))
        over_count = retention.executions is not None and len(_closed) > retention.executions
        over_age = retention.seconds is not None and (now - closed_at).total_seconds() > retention.seconds
        if not (over_count or over_age):
            break
        del _closed[arn]
        if _status(execution) in _OPEN:
            continue  # redriven since it closed: kept, and listed again when it closes again
        evicted.append(_evict(holder, execution))
    return evicted


def _evict(holder: Any, execution: Any) -> str:
    with contextlib.suppress(ValueError):  # already gone (the engine's forget_ended_executions, a reset)
        holder.remove(execution)
    return str(execution.exec_arn)


def forget(arns: list[str]) -> None:
    """Forget these executions (let go of elsewhere: the engine's forget_ended_executions)."""
    with _lock:
        for arn in arns:
            _closed.pop(arn, None)


def forget_all() -> None:
    """Forget what is kept (the backends are being reset)."""
    with _lock:
        _closed.clear()


def kept() -> int:
    """How many closed Standard executions the retention holds."""
    with _lock:
        return len(_closed)
