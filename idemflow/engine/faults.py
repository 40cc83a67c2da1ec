"""Fault injection for tests and demos, kept outside production code.

The reliability tests provoke faults here instead of putting test hooks in the functions or the
definition: the next N invocations of a function fail, time out or lose their response; the next N
DynamoDB calls of a given state are throttled; the next N StartExecution calls of a given state are refused,
or lose their response once the child has started.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

LambdaFaultKind = Literal["error", "timeout", "lose_response", "crash", "replace_response"]


@dataclass(frozen=True)
class LambdaFault:
    kind: LambdaFaultKind
    error: str
    message: str
    payload: Any = None


class Faults:
    """Thread-safe queues of faults, consumed one per matching call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lambda: dict[str, list[LambdaFault]] = defaultdict(list)
        self._dynamodb: dict[str, list[str]] = defaultdict(list)
        self._dynamodb_lost: dict[str, int] = defaultdict(int)
        self._before: dict[str, list[Callable[[], None]]] = defaultdict(list)
        self._batches_kept: dict[str, int] = defaultdict(int)
        self._delivered_again: dict[str, int] = defaultdict(int)
        self._starts_refused: dict[str, list[str]] = defaultdict(list)
        self._starts_lost: dict[str, int] = defaultdict(int)

    def fail_next(
        self,
        function: str,
        count: int = 1,
        error: str = "InjectedError",
        message: str = "injected failure",
    ) -> None:
        """The next ``count`` invocations of ``function`` (a name, ARN or logical id) fail with ``error``
        without running it. Which errors the workflow retries is the template's business: pass its
        ``SideEffectTransientError`` for a retried failure, any other name for the function's own error.

        A name starting with ``Lambda.`` (``Lambda.ServiceException``, ``Lambda.TooManyRequestsException``)
        is raised as the Lambda service's own error; any other name as the function's errorType.
        """
        self._add_lambda(function, count, LambdaFault("error", error, message))

    def timeout_next(self, function: str, count: int = 1) -> None:
        """The next ``count`` invocations are reported as ``Sandbox.Timedout`` before the handler runs."""
        self._add_lambda(function, count, LambdaFault("timeout", "Sandbox.Timedout", "Task timed out"))

    def lose_response_next(self, function: str, count: int = 1, error: str = "Lambda.ServiceException") -> None:
        """The next ``count`` invocations run the handler for real, then their response is lost."""
        self._add_lambda(function, count, LambdaFault("lose_response", error, "response lost after the handler ran"))

    def replace_response_next(self, function: str, payload: Any, count: int = 1) -> None:
        """The next ``count`` invocations run the handler, then return ``payload`` instead of its result
        (e.g. a result too large for a DynamoDB item)."""
        self._add_lambda(function, count, LambdaFault("replace_response", "", "response replaced", payload))

    def crash_next(self, function: str, count: int = 1) -> None:
        """The worker process of the next ``count`` invocations dies as the invocation reaches it, before
        the handler runs (``Runtime.ExitError``; the worker is replaced)."""
        self._add_lambda(function, count, LambdaFault("crash", "Runtime.ExitError", "worker crashed"))

    def throttle_next(self, state: str, count: int = 1, error: str = "ProvisionedThroughputExceededException") -> None:
        """The next ``count`` DynamoDB calls made by the state named ``state`` fail with ``error``."""
        with self._lock:
            self._dynamodb[state].extend([error] * count)

    def lose_dynamodb_response_next(self, state: str, count: int = 1) -> None:
        """The next ``count`` DynamoDB calls of ``state`` take effect, then fail with a 500 as if the
        response was lost on the way back (the state's Retry then repeats a write that happened)."""
        with self._lock:
            self._dynamodb_lost[state] += count

    def before_dynamodb(self, state: str, action: Callable[[], None]) -> None:
        """Run ``action`` once, just before the next DynamoDB call of ``state`` (another actor's write
        at the worst moment, for tests of races that timing alone cannot produce reliably)."""
        with self._lock:
            self._before[state].append(action)

    def take_before_dynamodb(self, state: str) -> Callable[[], None] | None:
        with self._lock:
            actions = self._before.get(state)
            return actions.pop(0) if actions else None

    def take_dynamodb_lost(self, state: str) -> bool:
        return self._take_one(self._dynamodb_lost, state)

    def refuse_start_next(self, state: str, count: int = 1, code: str = "ExecutionLimitExceeded") -> None:
        """The next ``count`` StartExecution calls of the ``states:startExecution`` task ``state`` are refused with
        the Step Functions API's error ``code`` (``ExecutionLimitExceeded``, ``StateMachineDoesNotExist``...): no
        child starts, and the task fails as AWS names that refusal (``StepFunctions.<code>Exception``)."""
        if count < 1:
            raise ValueError("count must be at least 1")
        with self._lock:
            self._starts_refused[state].extend([code] * count)

    def lose_start_response_next(self, state: str, count: int = 1) -> None:
        """The next ``count`` StartExecution calls of the task ``state`` start their child, then their response is
        lost on the way back: the task fails ``StepFunctions.AWSStepFunctionsException`` (a 500 the SDK has no class
        for), and its Retry starts the same name again."""
        if count < 1:
            raise ValueError("count must be at least 1")
        with self._lock:
            self._starts_lost[state] += count

    def take_start_refused(self, state: str) -> str | None:
        with self._lock:
            queue = self._starts_refused.get(state)
            return queue.pop(0) if queue else None

    def take_start_lost(self, state: str) -> bool:
        return self._take_one(self._starts_lost, state)

    def keep_batch_next(self, pipe: str, count: int = 1) -> None:
        """The next ``count`` batches that the pipe ``pipe`` (its name or logical id) hands to its target are
        not deleted from the queue, as when a pipe stops between the two: each of their messages is received
        again once its visibility timeout ends, and delivered again."""
        if count < 1:
            raise ValueError("count must be at least 1")
        with self._lock:
            self._batches_kept[pipe] += count

    def deliver_again_next(self, rule: str, count: int = 1) -> None:
        """The next ``count`` events the rule ``rule`` (its name or logical id) delivers to its target are delivered
        a second time, as EventBridge's at-least-once delivery may ("EventBridge ... delivers each event at least
        once": an event can reach its target twice, and the target must not mind)."""
        if count < 1:
            raise ValueError("count must be at least 1")
        with self._lock:
            self._delivered_again[rule] += count

    def take_delivered_again(self, *names: str) -> bool:
        return self._take_one(self._delivered_again, *names)

    def take_batch_kept(self, *names: str) -> bool:
        return self._take_one(self._batches_kept, *names)

    def _take_one(self, counts: dict[str, int], *names: str) -> bool:
        """One of the faults counted for the first of ``names`` (a resource's name, then its logical id) that has
        any left: True if there was one."""
        with self._lock:
            for name in names:
                if counts.get(name, 0) > 0:
                    counts[name] -= 1
                    return True
            return False

    def _add_lambda(self, function: str, count: int, fault: LambdaFault) -> None:
        if count < 1:
            raise ValueError("count must be at least 1")
        with self._lock:
            self._lambda[function].extend([fault] * count)

    def take_lambda(self, *names: str) -> LambdaFault | None:
        with self._lock:
            for name in names:
                if self._lambda.get(name):
                    return self._lambda[name].pop(0)
        return None

    def take_dynamodb(self, state: str) -> str | None:
        with self._lock:
            queue = self._dynamodb.get(state)
            return queue.pop(0) if queue else None

    def pending(self) -> dict[str, int]:
        with self._lock:
            counts = {f"lambda:{k}": len(v) for k, v in self._lambda.items() if v}
            counts.update({f"dynamodb:{k}": len(v) for k, v in self._dynamodb.items() if v})
            counts.update({f"dynamodb-lost:{k}": v for k, v in self._dynamodb_lost.items() if v})
            counts.update({f"before:{k}": len(v) for k, v in self._before.items() if v})
            counts.update({f"batch-kept:{k}": v for k, v in self._batches_kept.items() if v})
            counts.update({f"delivered-again:{k}": v for k, v in self._delivered_again.items() if v})
            counts.update({f"start-refused:{k}": len(v) for k, v in self._starts_refused.items() if v})
            counts.update({f"start-lost:{k}": v for k, v in self._starts_lost.items() if v})
            return counts

    def clear(self) -> None:
        with self._lock:
            self._lambda.clear()
            self._dynamodb.clear()
            self._dynamodb_lost.clear()
            self._before.clear()
            self._batches_kept.clear()
            self._delivered_again.clear()
            self._starts_refused.clear()
            self._starts_lost.clear()
