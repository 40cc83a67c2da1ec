"""A local Lambda runtime: every function runs in warm worker processes of its own.

As on Lambda, each worker has the function's environment variables and its own imported modules, and
serves one invocation at a time; concurrent invocations get more workers (up to a cap). Handlers reach
DynamoDB through the engine's endpoint (``AWS_ENDPOINT_URL``). A handler exception is returned in
Lambda's error shape; a worker that runs past the function's Timeout is killed and reported as
``Sandbox.Timedout``; a worker that dies is replaced and reported as ``Runtime.ExitError``.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from idemflow.engine.errors import LambdaServiceError, UnknownFunctionError
from idemflow.engine.faults import Faults
from idemflow.engine.services.iam.service import ENGINE_SECRET_KEY
from idemflow.engine.services.lambda_ import forkserver

_EOF = object()


def _function_name(reference: str) -> str:
    """The function's name in any form Lambda's Invoke accepts (its qualifier, if any, dropped).

    Lambda API reference, Invoke, FunctionName: a name (``my-function``, ``my-function:v1``), an ARN
    (``arn:aws:lambda:us-west-2:123456789012:function:my-function``) or a partial ARN
    (``123456789012:function:my-function``); "You can append a version number or alias to any of the formats."
    """
    parts = reference.split(":")
    if parts[0] == "arn" and len(parts) in (7, 8):
        return parts[6]
    if len(parts) in (3, 4) and parts[1] == "function":
        return parts[2]
    if len(parts) in (1, 2):
        return parts[0]
    return reference


#: A long-running engine (``idemflow serve``) keeps the most recent invocation records and log lines
#: of each function, not all of them: tests and ``idemflow run`` read the recent ones. Each kind is bounded in
#: entries and in bytes (the text it keeps plus a record's fixed overhead), so that a function with large events
#: or chatty logs holds no more memory than one with small ones.
MAX_INVOCATIONS_KEPT = 10_000
MAX_LOG_LINES = 5_000
MAX_INVOCATION_BYTES = 2 * 1024 * 1024
MAX_LOG_BYTES = 1024 * 1024
_INVOCATION_OVERHEAD = 350
"""About what an :class:`Invocation` weighs besides its event's text (the object, its request id, its fields, its
place in the deque), as tracemalloc counts it."""
_LOG_LINE_OVERHEAD = 110
"""About what a kept log line weighs besides its characters (its ``str`` object, its place in the deque), as
tracemalloc counts it."""

_T = TypeVar("_T")


class _Recent(Generic[_T]):
    """The most recent entries appended, at most ``max_entries`` of them weighing at most ``max_bytes`` (each
    entry's weight as ``weigh`` tells it); the oldest go first. Appends come from several threads."""

    def __init__(self, max_entries: int, max_bytes: int, weigh: Callable[[_T], int]) -> None:
        self._entries: deque[tuple[_T, int]] = deque()
        self._max_entries, self._max_bytes, self._weigh = max_entries, max_bytes, weigh
        self._bytes = 0
        self._lock = threading.Lock()

    def extend(self, entries: Iterable[_T]) -> None:
        weighed = [(e, self._weigh(e)) for e in entries]
        with self._lock:
            self._entries.extend(weighed)
            self._bytes += sum(w for _, w in weighed)
            while self._entries and (len(self._entries) > self._max_entries or self._bytes > self._max_bytes):
                self._bytes -= self._entries.popleft()[1]

    def append(self, entry: _T) -> None:
        self.extend((entry,))

    def __iter__(self) -> Iterator[_T]:
        with self._lock:
            return iter([e for e, _ in self._entries])


@dataclass(frozen=True)
class InvokeResult:
    payload: bytes
    function_error: str | None = None
    """``Unhandled`` when the payload is an error (Lambda's ``X-Amz-Function-Error`` header)."""


@dataclass(frozen=True)
class Invocation:
    function: str
    request_id: str
    event_json: str
    """The event as compact JSON text: a kept record weighs its text, not a tree of Python objects."""
    outcome: str
    """ok, error (handler raised), timeout, crash, injected (a fault, handler not run), lost (ran, response lost)."""
    ran: bool
    """Whether the handler code ran (the side effect may have happened)."""
    duration_ms: float

    @property
    def event(self) -> Any:
        """The event the function was invoked with (a new copy on each read)."""
        return json.loads(self.event_json)


@dataclass(eq=False)  # compared and hashed by identity: kept in a set
class _Worker:
    process: subprocess.Popen[str] | forkserver.ForkedProcess
    responses: queue.Queue[Any] = field(default_factory=queue.Queue)


def _error_payload(error_type: str, message: str) -> bytes:
    return json.dumps({"errorType": error_type, "errorMessage": message}).encode()


def _exit_error(request_id: str, code: int) -> InvokeResult:
    """What Lambda reports when the runtime process dies during an invocation."""
    message = f"RequestId: {request_id} Error: Runtime exited with error: exit status {code}"
    return InvokeResult(_error_payload("Runtime.ExitError", message), "Unhandled")


@dataclass(frozen=True)
class Function:
    """A function as the runtime runs it (the Lambda service reads it from the template)."""

    logical_id: str
    name: str
    arn: str
    code_dir: Path
    handler: str
    runtime: str
    timeout: int
    memory_mb: int
    environment: dict[str, str]
    sdk_services: tuple[str, ...] = ()
    """The AWS services (botocore's names) the function's policies let it call: their models are loaded before a
    worker is forked (:func:`idemflow.engine.services.lambda_.forkserver.load_models`)."""
    access_key: str = "local"
    """The access key id its workers sign their SDK calls with: its execution role's, when the engine decides
    that role's calls (:mod:`idemflow.engine.services.iam.permissions`)."""


def _timeout_error(function: Function) -> InvokeResult:
    """What Lambda reports when an invocation runs past the function's Timeout."""
    return InvokeResult(
        _error_payload("Sandbox.Timedout", f"Task timed out after {function.timeout:.2f} seconds"), "Unhandled"
    )


class _FunctionPool:
    def __init__(self, runtime: LambdaRuntime, function: Function):
        self.runtime, self.function = runtime, function
        self.idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self.count = 0
        """Live workers, idle or busy, plus those being started (reserved under the lock first)."""
        self.lock = threading.Lock()
        self.available = threading.Condition(self.lock)
        """Notified when a worker goes back to idle or is discarded (a waiting invocation may proceed)."""
        self.workers: set[_Worker] = set()
        self.closed = False
        self.logs: _Recent[str] = _Recent(MAX_LOG_LINES, MAX_LOG_BYTES, lambda line: len(line) + _LOG_LINE_OVERHEAD)
        self.reported = threading.Condition()
        """Notified when a worker's REPORT line has been read: stderr is read apart from the responses."""
        self.reported_ids: set[str] = set()
        self.invocations: _Recent[Invocation] = _Recent(
            MAX_INVOCATIONS_KEPT, MAX_INVOCATION_BYTES, lambda i: len(i.event_json) + _INVOCATION_OVERHEAD
        )

    def _spawn(self) -> _Worker:
        fn = self.function
        # What every worker of this process shares: the engine's environment without its AWS settings
        # (the host's credentials and profile must not leak in) and the interpreter's settings.
        base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POWERTOOLS_", "MOTO_"))}
        base.update({"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"})
        env = {
            **base,
            "AWS_ENDPOINT_URL": self.runtime.endpoint_url,
            "AWS_DEFAULT_REGION": self.runtime.region,
            "AWS_REGION": self.runtime.region,
            "AWS_ACCESS_KEY_ID": fn.access_key,
            "AWS_SECRET_ACCESS_KEY": ENGINE_SECRET_KEY,
            "AWS_LAMBDA_FUNCTION_NAME": fn.name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(fn.memory_mb),
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(fn.timeout),
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{fn.runtime}",
            # Lambda Developer Guide, "Defined runtime environment variables". LAMBDA_TASK_ROOT is how
            # libraries tell they run in Lambda: the X-Ray SDK then samples locally instead of building
            # an X-Ray client at import.
            "LAMBDA_TASK_ROOT": str(fn.code_dir),
            "_HANDLER": fn.handler,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            "POWERTOOLS_TRACE_DISABLED": "true",  # no X-Ray daemon locally
            **fn.environment,
        }
        process = forkserver.launch([str(fn.code_dir), fn.handler], base, env, str(fn.code_dir), fn.sdk_services)
        worker = _Worker(process)
        threading.Thread(target=self._read_responses, args=(worker,), daemon=True).start()
        threading.Thread(target=self._read_logs, args=(process,), daemon=True).start()
        with self.lock:
            self.workers.add(worker)
        return worker

    def _spawn_reserved(self) -> _Worker:
        """Start a worker for which the caller has already counted one (``count += 1`` under the lock)."""
        try:
            return self._spawn()
        except BaseException:
            with self.available:
                self.count -= 1
                self.available.notify()
            raise

    def _read_responses(self, worker: _Worker) -> None:
        assert worker.process.stdout is not None
        for line in worker.process.stdout:
            worker.responses.put(json.loads(line))
        worker.responses.put(_EOF)

    def _read_logs(self, process: subprocess.Popen[str] | forkserver.ForkedProcess) -> None:
        # Chunked reads: a handler logs several lines per invocation, and a thread waking up per line
        # costs the engine's process GIL time.
        assert process.stderr is not None
        fd, pending = process.stderr.fileno(), b""
        while chunk := os.read(fd, 65536):
            *complete, pending = (pending + chunk).split(b"\n")
            self._log_lines([line.decode("utf-8", "replace") for line in complete])
        if pending:
            self._log_lines([pending.decode("utf-8", "replace")])

    def _log_lines(self, lines: list[str]) -> None:
        self.logs.extend(lines)
        reported = [line.split()[2] for line in lines if line.startswith("REPORT RequestId: ")]
        if reported:
            with self.reported:
                self.reported_ids.update(reported)
                self.reported.notify_all()

    def _discard(self, worker: _Worker) -> None:
        if worker.process.poll() is None:
            worker.process.kill()
        worker.process.wait()
        with self.available:
            self.count -= 1
            self.workers.discard(worker)
            self.available.notify()

    def _release(self, worker: _Worker) -> None:
        with self.available:
            if not self.closed:
                self.idle.put(worker)
                self.available.notify()
                return
        self._discard(worker)  # the runtime was closed during the invocation

    def _take_idle(self) -> _Worker | None:
        """An idle worker that is still alive; one that died while idle is dropped. Caller holds the lock."""
        while True:
            try:
                worker = self.idle.get_nowait()
            except queue.Empty:
                return None
            if worker.process.poll() is None:
                return worker
            worker.process.wait()
            self.count -= 1
            self.workers.discard(worker)

    def _acquire(self) -> tuple[_Worker, bool]:
        with self.available:
            while True:
                if self.closed:
                    raise LambdaServiceError("ServiceException", "the local Lambda runtime is closed")
                worker = self._take_idle()
                if worker is not None:
                    return worker, False
                if self.count < self.runtime.max_workers_per_function:
                    # Counted before the (slow) start, so concurrent invocations cannot overshoot the cap.
                    self.count += 1
                    break
                self.available.wait()
        return self._spawn_reserved(), True

    def warm(self) -> None:
        with self.lock:
            self.count += 1
        worker = self._spawn_reserved()
        if self._await_ready(worker, timeout=60) is None:  # a failed init is reported by the first invocation
            self._release(worker)

    def _await_ready(self, worker: _Worker, timeout: float) -> dict[str, Any] | None:
        try:
            first = worker.responses.get(timeout=timeout)
        except queue.Empty:
            first = None
        if first is _EOF or not isinstance(first, dict) or not first.get("ready"):
            self._discard(worker)
            return (
                first
                if isinstance(first, dict)
                else {"error": {"errorType": "Runtime.ExitError", "errorMessage": "worker failed to start"}}
            )
        return None

    def invoke(self, event: Any, fault: Any) -> InvokeResult:
        fn = self.function
        request_id = str(uuid.uuid4())
        started = time.perf_counter()

        def record(outcome: str, ran: bool) -> None:
            self.invocations.append(
                Invocation(fn.name, request_id, text, outcome, ran, (time.perf_counter() - started) * 1000)
            )

        text = json.dumps(event, separators=(",", ":"), ensure_ascii=False)

        if fault is not None and fault.kind == "error":
            record("injected", False)
            if fault.error.startswith("Lambda."):
                raise LambdaServiceError(
                    fault.error.removeprefix("Lambda."), fault.message, 429 if "TooManyRequests" in fault.error else 500
                )
            return InvokeResult(_error_payload(fault.error, fault.message), "Unhandled")
        if fault is not None and fault.kind == "timeout":
            record("timeout", False)
            return _timeout_error(fn)

        worker, fresh = self._acquire()
        if fresh:
            init_error = self._await_ready(worker, timeout=60)
            if init_error is not None:
                record("error", False)
                err = init_error.get("error", {})
                return InvokeResult(json.dumps(err).encode(), "Unhandled")
        timeout = max(fn.timeout * self.runtime.timeout_scale, 0.05)
        message = {
            "id": next(self.runtime.ids),
            "event": event,
            "context": {
                "function_name": fn.name,
                "function_arn": fn.arn,
                "memory_mb": fn.memory_mb,
                "request_id": request_id,
                "deadline_ms": int((time.time() + timeout) * 1000),
            },
        }
        if fault is not None and fault.kind == "crash":
            # Killed as the request arrives, before the handler runs: a kill after the write raced with a
            # fast handler, whose response then arrived from a worker that was returned to the pool dead.
            worker.process.kill()
            code = worker.process.wait()
            self._discard(worker)
            record("crash", False)
            return _exit_error(request_id, code)
        assert worker.process.stdin is not None
        try:
            worker.process.stdin.write(json.dumps(message) + "\n")
            worker.process.stdin.flush()
        except OSError:
            self._discard(worker)
            record("crash", False)
            return InvokeResult(_error_payload("Runtime.ExitError", "worker exited before the invocation"), "Unhandled")
        try:
            response = worker.responses.get(timeout=timeout)
        except queue.Empty:
            self._discard(worker)  # killed: a timed-out sandbox is never reused
            record("timeout", True)
            self.logs.append(f"{request_id} Task timed out after {fn.timeout:.2f} seconds")
            return _timeout_error(fn)
        if response is _EOF:
            code = worker.process.wait()
            self._discard(worker)
            record("crash", True)
            return _exit_error(request_id, code)
        with self.reported:  # so that logs() has the whole invocation once it returns
            self.reported.wait_for(lambda: request_id in self.reported_ids, timeout=1.0)
            self.reported_ids.discard(request_id)
        self._release(worker)
        if fault is not None and fault.kind == "lose_response":
            record("lost", True)
            raise LambdaServiceError(fault.error.removeprefix("Lambda."), fault.message)
        if response.get("ok") and fault is not None and fault.kind == "replace_response":
            record("ok", True)
            return InvokeResult(json.dumps(fault.payload).encode())
        if response.get("ok"):
            record("ok", True)
            return InvokeResult(json.dumps(response.get("payload")).encode())
        record("error", True)
        return InvokeResult(json.dumps(response["error"]).encode(), "Unhandled")

    def close(self, finish_busy: bool = False) -> None:
        """Stop every worker: idle ones are asked to exit, busy ones are killed (their invocation then
        reports ``Runtime.ExitError``), or with ``finish_busy`` end once their invocation has answered; no
        new worker is started afterwards."""
        with self.available:
            self.closed = True
            idle: list[_Worker] = []
            while (worker := self._take_idle()) is not None:
                idle.append(worker)
            busy = [] if finish_busy else [w for w in self.workers if w not in idle]
            self.available.notify_all()
        for worker in busy:
            if worker.process.poll() is None:
                worker.process.kill()
        for worker in idle:
            if worker.process.stdin is not None:
                worker.process.stdin.close()  # the worker's loop ends: it exits
        for worker in idle:
            try:
                worker.process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
            with self.lock:
                self.count -= 1
                self.workers.discard(worker)


class LambdaRuntime:
    """Runs the template's functions locally; the engine routes Lambda Invoke calls here."""

    def __init__(
        self,
        endpoint_url: str,
        region: str,
        faults: Faults | None = None,
        *,
        max_workers_per_function: int = 4,
        timeout_scale: float = 1.0,
    ):
        self.endpoint_url, self.region = endpoint_url, region
        self.faults = faults or Faults()
        self.max_workers_per_function = max_workers_per_function
        self.timeout_scale = timeout_scale
        self.ids = itertools.count(1)
        self._pools: dict[str, _FunctionPool] = {}
        self._aliases: dict[str, str] = {}

    def register(self, function: Function, warm: bool = False) -> None:
        """Run ``function`` from now on; a function registered again under its name ends the workers of
        its previous registration, a busy one once its invocation has answered (as Lambda retires an
        updated function's sandboxes)."""
        pool = _FunctionPool(self, function)
        replaced = self._pools.get(function.name)
        self._pools[function.name] = pool
        for alias in (function.name, function.arn, function.logical_id):
            self._aliases[alias] = function.name
        if replaced is not None:
            replaced.close(finish_busy=True)  # an invocation under way answers first
        if warm:
            pool.warm()

    def _pool(self, name: str) -> _FunctionPool:
        key = self._aliases.get(name)
        if key is None:
            # The engine deploys no versions or aliases: any qualifier (a SAM AutoPublishAlias, say) runs
            # the function's one local copy.
            key = self._aliases.get(_function_name(name))
        if key is None:
            raise UnknownFunctionError(name)
        return self._pools[key]

    def invoke(self, function: str, payload: bytes | str | None) -> InvokeResult:
        pool = self._pool(function)
        try:
            event = json.loads(payload or b"{}")
        except ValueError as exc:
            raise LambdaServiceError(
                "InvalidRequestContentException", f"Could not parse request body: {exc}", 400
            ) from exc
        fault = self.faults.take_lambda(pool.function.name, pool.function.logical_id)
        return pool.invoke(event, fault)

    def invocations(self, function: str) -> list[Invocation]:
        return list(self._pool(function).invocations)

    def logs(self, function: str) -> list[str]:
        return list(self._pool(function).logs)

    def worker_count(self, function: str) -> int:
        return self._pool(function).count

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
