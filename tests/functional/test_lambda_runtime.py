"""The local Lambda runtime (idemflow.engine.services.lambda_.runtime), driven directly with test-only handlers.

The handlers live in ``tests/functional/fixtures/functions/<name>/app.py``; these are runtime tests, not
the product's stack. No handler here calls AWS, so the endpoint URL is never connected to. Nothing
sleeps real seconds: function timeouts are scaled (``timeout_scale``), and a handler that "runs for
30 s" is killed after a few tens of milliseconds.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from idemflow.engine.errors import LambdaServiceError, UnknownFunctionError
from idemflow.engine.faults import Faults
from idemflow.engine.services.lambda_ import forkserver
from idemflow.engine.services.lambda_ import runtime as lambda_runtime
from idemflow.engine.services.lambda_.runtime import Function, LambdaRuntime
from tests.polling import wait_until

FIXTURES = Path(__file__).parent / "fixtures" / "functions"
REGION = "eu-west-3"
ACCOUNT = "123456789012"
ENDPOINT = "http://127.0.0.1:9"  # never connected to: these handlers do not call AWS
SCALE = 0.02
"""Every function timeout is multiplied by this: Timeout 3 → 60 ms, Timeout 300 → 6 s."""


def function(
    name: str = "basic",
    code: str = "basic",
    handler: str = "app.handler",
    timeout: int = 300,
    environment: dict[str, str] | None = None,
    sdk_services: tuple[str, ...] = (),
) -> Function:
    fn_name = f"rt-{name}"
    return Function(
        logical_id=f"{name.title().replace('-', '')}Function",
        name=fn_name,
        arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{fn_name}",
        code_dir=FIXTURES / code,
        handler=handler,
        runtime="python3.11",
        timeout=timeout,
        memory_mb=128,
        environment=dict(environment or {}),
        sdk_services=sdk_services,
    )


def worker_children() -> dict[int, str]:
    """This process's live or unreaped (zombie) workers: pid -> process state letter. A worker is a child
    of this process (started as a new interpreter) or of a fork server (forked: every child it has)."""
    found: dict[int, str] = {}
    me, servers = os.getpid(), set(forkserver.server_pids())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) in servers or (int(ppid) == me and b"idemflow.engine.services.lambda_.worker" in cmdline):
            found[int(entry.name)] = state
        elif int(ppid) == me and state == "Z":
            found[int(entry.name)] = state  # a zombie's cmdline is empty
    return found


def process_state(pid: int) -> str | None:
    """The state letter of a process (``Z`` for a zombie), None once it no longer exists."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def process_gone(pid: int) -> bool:
    """Whether ``pid`` has exited *and* been reaped (no zombie left behind)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def runtime() -> Iterator[LambdaRuntime]:
    had_proc = Path("/proc/self/stat").exists()
    before = worker_children() if had_proc else {}
    rt = LambdaRuntime(ENDPOINT, REGION, Faults(), max_workers_per_function=3, timeout_scale=SCALE)
    yield rt
    rt.close()
    if had_proc:
        # Every worker this runtime started is gone and reaped: no orphans, no zombies.
        wait_until(lambda: not (set(worker_children()) - set(before)), 5, what="this runtime's workers to be reaped")


def call(rt: LambdaRuntime, name: str, event: Any = None) -> tuple[Any, str | None]:
    result = rt.invoke(name, json.dumps({} if event is None else event).encode())
    return json.loads(result.payload), result.function_error


def call_concurrently(rt: LambdaRuntime, name: str, events: list[Any], timeout: float = 10) -> list[Any]:
    """Invoke once per event, all at once, on daemon threads: an invocation that hangs fails the test
    instead of hanging the test run."""
    results: dict[int, tuple[Any, str | None]] = {}

    def invoke(index: int, event: Any) -> None:
        results[index] = call(rt, name, event)

    threads = [threading.Thread(target=invoke, args=(i, e), daemon=True) for i, e in enumerate(events)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "an invocation is still waiting"
    return [results[i] for i in range(len(events))]


# -- results, warm workers, isolation ---------------------------------------------------------------
def test_result_is_returned_as_json_by_one_warm_worker(runtime: LambdaRuntime) -> None:
    fn = function()
    runtime.register(fn, warm=True)
    assert runtime.worker_count(fn.name) == 1

    results = [call(runtime, fn.name, {"n": n}) for n in range(3)]

    assert [error for _, error in results] == [None, None, None]
    payloads = [payload for payload, _ in results]
    assert [p["event"] for p in payloads] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert len({p["pid"] for p in payloads}) == 1, "the warm worker was not reused"
    assert payloads[0]["pid"] != os.getpid()
    assert [p["calls"] for p in payloads] == [1, 2, 3], "module globals did not survive between invocations"
    assert payloads[0]["function_name"] == fn.name
    assert 0 < payloads[0]["remaining_ms"] <= 300 * SCALE * 1000
    assert runtime.worker_count(fn.name) == 1
    invocations = runtime.invocations(fn.name)
    assert [(i.outcome, i.ran) for i in invocations] == [("ok", True)] * 3
    assert [i.request_id for i in invocations] == [p["request_id"] for p in payloads]
    assert [i.event for i in invocations] == [{"n": 0}, {"n": 1}, {"n": 2}]


def test_a_function_registered_again_ends_the_workers_of_its_previous_registration(runtime: LambdaRuntime) -> None:
    # As Lambda retires an updated function's sandboxes: no worker of the replaced registration is left
    # idle until the engine's process ends.
    runtime.register(function())
    old = call(runtime, "rt-basic", {"action": "whoami"})[0]["pid"]

    runtime.register(function(environment={"GREETING": "again"}))
    seen = call(runtime, "rt-basic", {"action": "whoami"})[0]

    assert seen["pid"] != old and seen["env"]["GREETING"] == "again"
    wait_until(lambda: process_gone(old), 5, what="the replaced registration's worker to end")


def test_an_invocation_under_way_when_its_function_is_registered_again_answers_first(
    runtime: LambdaRuntime, tmp_path: Path
) -> None:
    runtime.register(function())
    ready = tmp_path / "ready"
    answered: list[tuple[Any, str | None]] = []
    invoking = threading.Thread(
        target=lambda: answered.append(
            call(runtime, "rt-basic", {"action": "sleep", "seconds": 0.3, "ready": str(ready)})
        )
    )
    invoking.start()
    wait_until(ready.exists, 10, what="the handler to start")

    runtime.register(function())
    invoking.join(timeout=10)

    ((result, error),) = answered
    assert error is None and result["slept"] == 0.3
    wait_until(lambda: process_gone(result["pid"]), 5, what="the replaced registration's busy worker to end")


def test_empty_payload_is_the_empty_event(runtime: LambdaRuntime) -> None:
    fn = function()
    runtime.register(fn)

    result = runtime.invoke(fn.name, b'{"action": "remember", "value": "x"}')
    empty = runtime.invoke(fn.name, b"")

    assert json.loads(result.payload)["seen"] == "x"
    assert json.loads(empty.payload)["event"] == {}, "an empty payload is the event {}"


def test_each_function_has_its_own_environment_and_modules(
    runtime: LambdaRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_PROFILE", "my-real-admin-profile")  # the host's AWS settings must not leak in
    basic = function("basic", environment={"GREETING": "hi", "COLOUR": "blue"})
    other = function("other", code="other", environment={"GREETING": "hello"})
    runtime.register(basic)
    runtime.register(other)

    remembered, _ = call(runtime, basic.name, {"action": "remember", "value": "only in basic"})
    seen_basic, _ = call(runtime, basic.name)
    seen_other, _ = call(runtime, other.name)

    assert remembered["seen"] == "only in basic"
    assert (seen_basic["mark"], seen_basic["seen"]) == ("basic", "only in basic")
    assert (seen_other["mark"], seen_other["seen"]) == ("other", None), "modules named app leaked across functions"
    assert seen_other["module_file"] == str(FIXTURES / "other" / "app.py")
    assert seen_basic["pid"] != seen_other["pid"]
    assert seen_basic["env"] == {
        "AWS_LAMBDA_FUNCTION_NAME": basic.name,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL": ENDPOINT,
        "AWS_PROFILE": None,
        "GREETING": "hi",
        "COLOUR": "blue",
        # Lambda Developer Guide, "Defined runtime environment variables": "LAMBDA_TASK_ROOT - The path to
        # your Lambda function code", "_HANDLER - The handler location configured on the function",
        # AWS_LAMBDA_FUNCTION_VERSION ($LATEST unpublished), AWS_LAMBDA_INITIALIZATION_TYPE "on-demand or
        # provisioned-concurrency".
        "LAMBDA_TASK_ROOT": str(FIXTURES / "basic"),
        "_HANDLER": "app.handler",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
    }
    assert seen_other["env"] == {"AWS_LAMBDA_FUNCTION_NAME": other.name, "GREETING": "hello", "COLOUR": None}


def test_the_xray_sdk_takes_its_lambda_path_as_on_lambda(runtime: LambdaRuntime) -> None:
    # aws_xray_sdk.core.lambda_launcher.check_in_lambda: with LAMBDA_TASK_ROOT set the recorder uses a
    # LocalSampler (Lambda samples for it); without, a DefaultSampler that builds an X-Ray client at import.
    fn = function()
    runtime.register(fn)

    seen, _ = call(runtime, fn.name, {"action": "xray"})

    assert seen == {"sampler": "LocalSampler"}


# -- handler errors and logs ------------------------------------------------------------------------
def test_handler_exception_returns_lambdas_error_shape(runtime: LambdaRuntime) -> None:
    fn = function()
    runtime.register(fn)

    payload, error = call(runtime, fn.name, {"action": "raise", "message": "amount must be positive"})

    assert error == "Unhandled"
    assert set(payload) == {"errorType", "errorMessage", "stackTrace"}
    assert payload["errorType"] == "ValueError"
    assert payload["errorMessage"] == "amount must be positive"
    assert isinstance(payload["stackTrace"], list) and payload["stackTrace"]
    assert any("app.py" in frame and "handler" in frame for frame in payload["stackTrace"])
    assert runtime.invocations(fn.name)[-1].outcome == "error"
    assert runtime.invocations(fn.name)[-1].ran is True
    # An exception does not cost the worker: the next invocation reuses it.
    first_pid = call(runtime, fn.name)[0]["pid"]
    assert call(runtime, fn.name)[0]["pid"] == first_pid
    assert runtime.worker_count(fn.name) == 1


def test_prints_go_to_the_logs_not_into_the_protocol(runtime: LambdaRuntime) -> None:
    fn = function()
    runtime.register(fn)

    payload, error = call(runtime, fn.name, {"action": "print"})

    assert error is None
    assert payload["printed"] is True
    request_id = runtime.invocations(fn.name)[-1].request_id
    expected = [
        f"START RequestId: {request_id} Version: $LATEST",
        "hello from print",
        "hello from sys.stdout",
        "hello from fd 1",
        "hello from stderr",
        '{"ok": false, "looks": "like a protocol line"}',
        f"END RequestId: {request_id}",
    ]
    logs = runtime.logs(fn.name)
    assert [line for line in logs if line in expected] == expected, logs
    assert any(line.startswith(f"REPORT RequestId: {request_id}\tDuration: ") for line in logs), logs
    # The worker still speaks the protocol afterwards.
    assert call(runtime, fn.name)[0]["pid"] == payload["pid"]


def test_logs_of_an_invocation_are_complete_when_it_returns(runtime: LambdaRuntime) -> None:
    fn = function()
    runtime.register(fn, warm=True)

    for _ in range(20):
        call(runtime, fn.name, {"action": "print"})
        request_id = runtime.invocations(fn.name)[-1].request_id
        logs = runtime.logs(fn.name)
        assert any(line.startswith(f"REPORT RequestId: {request_id}") for line in logs), logs[-8:]


# -- timeouts and crashes ---------------------------------------------------------------------------
def test_function_past_its_timeout_is_killed_and_replaced(runtime: LambdaRuntime) -> None:
    fn = function("slow", timeout=3)  # 3 s x 0.02 = 60 ms
    runtime.register(fn)
    first_pid = call(runtime, fn.name)[0]["pid"]

    started = time.monotonic()
    payload, error = call(runtime, fn.name, {"action": "sleep", "seconds": 30})
    elapsed = time.monotonic() - started

    assert elapsed < 1.0
    assert error == "Unhandled"
    assert payload["errorType"] == "Sandbox.Timedout"
    assert payload["errorMessage"] == "Task timed out after 3.00 seconds"
    assert process_gone(first_pid), "the timed-out worker is still running (or was not reaped)"
    assert runtime.worker_count(fn.name) == 0
    last = runtime.invocations(fn.name)[-1]
    assert (last.outcome, last.ran) == ("timeout", True)
    assert any(line.endswith("Task timed out after 3.00 seconds") for line in runtime.logs(fn.name))

    after, after_error = call(runtime, fn.name)
    assert after_error is None
    assert after["pid"] != first_pid
    assert after["calls"] == 1, "a fresh worker starts from a fresh module"
    assert runtime.worker_count(fn.name) == 1


def test_worker_that_exits_is_reported_and_replaced(runtime: LambdaRuntime) -> None:
    fn = function()
    runtime.register(fn)
    first_pid = call(runtime, fn.name)[0]["pid"]

    payload, error = call(runtime, fn.name, {"action": "exit", "status": 3})

    assert error == "Unhandled"
    assert payload["errorType"] == "Runtime.ExitError"
    assert "exit status 3" in payload["errorMessage"]
    assert runtime.invocations(fn.name)[-1].request_id in payload["errorMessage"]
    assert (runtime.invocations(fn.name)[-1].outcome, runtime.invocations(fn.name)[-1].ran) == ("crash", True)
    assert process_gone(first_pid)
    assert runtime.worker_count(fn.name) == 0

    after, after_error = call(runtime, fn.name)
    assert after_error is None and after["pid"] != first_pid
    assert runtime.worker_count(fn.name) == 1


def test_worker_that_died_while_idle_is_replaced_before_the_next_invocation(runtime: LambdaRuntime) -> None:
    # e.g. killed by the OOM killer, or by a thread the handler left behind: Lambda starts a new
    # sandbox; the invocation itself must not fail.
    fn = function()
    runtime.register(fn)
    first_pid = call(runtime, fn.name)[0]["pid"]
    os.kill(first_pid, signal.SIGKILL)
    wait_until(lambda: process_state(first_pid) in (None, "Z"), 5, what="the idle worker to die")

    payload, error = call(runtime, fn.name)

    assert error is None, payload
    assert payload["pid"] != first_pid
    assert runtime.worker_count(fn.name) == 1
    assert process_gone(first_pid)


@pytest.mark.parametrize(
    ("handler", "code", "names"),
    [
        ("nosuchmodule.handler", "basic", "nosuchmodule"),
        ("app.handler", "badimport", "fails at import time"),
    ],
    ids=["missing-module", "module-raises"],
)
def test_handler_that_cannot_be_imported(runtime: LambdaRuntime, handler: str, code: str, names: str) -> None:
    fn = function("broken", code=code, handler=handler)
    runtime.register(fn)

    for _ in range(2):  # reported again on the next invocation (a new init), never a hang
        started = time.monotonic()
        payload, error = call(runtime, fn.name)
        assert time.monotonic() - started < 5
        assert error == "Unhandled"
        assert payload["errorType"] == "Runtime.ImportModuleError"
        assert f"Unable to import module '{handler.rpartition('.')[0]}'" in payload["errorMessage"]
        assert names in payload["errorMessage"]
        assert runtime.worker_count(fn.name) == 0
    assert [(i.outcome, i.ran) for i in runtime.invocations(fn.name)] == [("error", False)] * 2


def test_warming_a_broken_function_does_not_raise_or_leak(runtime: LambdaRuntime) -> None:
    fn = function("broken", handler="nosuchmodule.handler")
    runtime.register(fn, warm=True)

    assert runtime.worker_count(fn.name) == 0
    assert call(runtime, fn.name)[0]["errorType"] == "Runtime.ImportModuleError"
    assert runtime.worker_count(fn.name) == 0


def test_result_that_is_not_json_serialisable_is_an_error_not_a_hang(runtime: LambdaRuntime) -> None:
    fn = function()
    runtime.register(fn)
    pid = call(runtime, fn.name)[0]["pid"]

    started = time.monotonic()
    payload, error = call(runtime, fn.name, {"action": "unserialisable"})

    assert time.monotonic() - started < 2
    assert error == "Unhandled"
    assert payload["errorType"] == "Runtime.MarshalError"  # what Lambda's Python runtime reports
    assert "Unable to marshal response" in payload["errorMessage"]
    assert "set" in payload["errorMessage"]
    assert call(runtime, fn.name)[0]["pid"] == pid, "the worker survives a marshal error"


# -- concurrency ------------------------------------------------------------------------------------
def test_concurrent_invocations_scale_out_up_to_the_cap(runtime: LambdaRuntime) -> None:
    fn = function()
    runtime.register(fn)

    results = call_concurrently(runtime, fn.name, [{"action": "sleep", "seconds": 0.15, "n": n} for n in range(8)])

    assert [error for _, error in results] == [None] * 8
    assert sorted(payload["slept"] for payload, _ in results) == [0.15] * 8
    pids = {payload["pid"] for payload, _ in results}
    assert 1 < len(pids) <= runtime.max_workers_per_function, pids
    assert runtime.worker_count(fn.name) == len(pids)
    assert len(runtime.invocations(fn.name)) == 8


def test_waiting_invocation_is_served_when_a_busy_worker_is_discarded(runtime: LambdaRuntime) -> None:
    # One worker allowed; both invocations time out. The second waits for a worker: it must get a new
    # one when the first is killed, not wait forever for one to come back idle.
    runtime.max_workers_per_function = 1
    fn = function("slow", timeout=3)
    runtime.register(fn, warm=True)

    results = call_concurrently(runtime, fn.name, [{"action": "sleep", "seconds": 30}] * 2, timeout=5)

    assert [payload["errorType"] for payload, _ in results] == ["Sandbox.Timedout"] * 2
    assert runtime.worker_count(fn.name) == 0


def test_close_stops_a_worker_in_the_middle_of_an_invocation(runtime: LambdaRuntime, tmp_path: Path) -> None:
    fn = function("busy", timeout=3000)  # 60 s once scaled: close() must not wait for it
    runtime.register(fn)
    ready = tmp_path / "ready"
    outcome: list[tuple[Any, str | None]] = []
    thread = threading.Thread(
        target=lambda: outcome.append(call(runtime, fn.name, {"action": "sleep", "seconds": 30, "ready": str(ready)})),
        daemon=True,
    )
    thread.start()
    wait_until(ready.exists, 5, what="the handler to start")
    pid = int(ready.read_text())

    runtime.close()
    thread.join(timeout=5)

    assert not thread.is_alive(), "the invocation is still waiting for a worker that close() left running"
    assert outcome and outcome[0][1] == "Unhandled"
    wait_until(lambda: process_gone(pid), 5, what="the worker to exit and be reaped")
    with pytest.raises(LambdaServiceError):
        runtime.invoke(fn.name, b"{}")  # a closed runtime starts no new workers


# -- faults -----------------------------------------------------------------------------------------
def test_fail_next_as_a_function_error(runtime: LambdaRuntime) -> None:
    fn = function()
    runtime.register(fn)
    runtime.faults.fail_next(fn.name, count=2, error="PaymentProviderUnavailableError", message="down")

    first = call(runtime, fn.name)
    second = call(runtime, fn.name)
    third = call(runtime, fn.name)

    for payload, error in (first, second):
        assert error == "Unhandled"
        assert (payload["errorType"], payload["errorMessage"]) == ("PaymentProviderUnavailableError", "down")
    assert third[1] is None and third[0]["calls"] == 1, "the handler ran during an injected failure"
    assert [(i.outcome, i.ran) for i in runtime.invocations(fn.name)] == [
        ("injected", False),
        ("injected", False),
        ("ok", True),
    ]
    assert runtime.faults.pending() == {}


def test_fail_next_by_logical_id(runtime: LambdaRuntime) -> None:
    fn = function()
    runtime.register(fn)
    runtime.faults.fail_next(fn.logical_id, error="Boom")

    assert call(runtime, fn.arn)[0]["errorType"] == "Boom"


@pytest.mark.parametrize(
    ("error", "code", "status"),
    [
        ("Lambda.TooManyRequestsException", "TooManyRequestsException", 429),
        ("Lambda.ServiceException", "ServiceException", 500),
    ],
)
def test_fail_next_as_a_lambda_service_error(runtime: LambdaRuntime, error: str, code: str, status: int) -> None:
    fn = function()
    runtime.register(fn)
    runtime.faults.fail_next(fn.name, error=error, message="slow down")

    with pytest.raises(LambdaServiceError) as raised:
        runtime.invoke(fn.name, b"{}")

    assert (raised.value.code, raised.value.message, raised.value.status) == (code, "slow down", status)
    assert [(i.outcome, i.ran) for i in runtime.invocations(fn.name)] == [("injected", False)]
    assert call(runtime, fn.name)[1] is None


def test_timeout_next(runtime: LambdaRuntime) -> None:
    fn = function("slow", timeout=3)
    runtime.register(fn)
    runtime.faults.timeout_next(fn.name)

    started = time.monotonic()
    payload, error = call(runtime, fn.name)

    assert time.monotonic() - started < 1
    assert error == "Unhandled"
    assert payload["errorType"] == "Sandbox.Timedout"
    assert payload["errorMessage"] == "Task timed out after 3.00 seconds"
    assert [(i.outcome, i.ran) for i in runtime.invocations(fn.name)] == [("timeout", False)]
    assert call(runtime, fn.name)[0]["calls"] == 1


def test_lose_response_next_runs_the_handler_then_fails(runtime: LambdaRuntime, tmp_path: Path) -> None:
    fn = function()
    runtime.register(fn)
    marker = tmp_path / "ran"
    runtime.faults.lose_response_next(fn.name)

    with pytest.raises(LambdaServiceError) as raised:
        runtime.invoke(fn.name, json.dumps({"touch": str(marker)}).encode())

    assert (raised.value.code, raised.value.status) == ("ServiceException", 500)
    assert marker.exists(), "the handler did not run"
    last = runtime.invocations(fn.name)[-1]
    assert (last.outcome, last.ran) == ("lost", True)
    after, _ = call(runtime, fn.name)
    assert after["calls"] == 2, "the worker was not reused after a lost response"


def test_crash_next(runtime: LambdaRuntime, tmp_path: Path) -> None:
    fn = function()
    runtime.register(fn)
    first_pid = call(runtime, fn.name)[0]["pid"]
    marker = tmp_path / "ran"
    runtime.faults.crash_next(fn.name, count=2)

    results = [call(runtime, fn.name, {"touch": str(marker)}) for _ in range(2)]

    for payload, error in results:
        assert error == "Unhandled"
        assert payload["errorType"] == "Runtime.ExitError"
        assert "Runtime exited with error" in payload["errorMessage"]
    assert [(i.outcome, i.ran) for i in runtime.invocations(fn.name)[1:]] == [("crash", False)] * 2
    assert not marker.exists(), "the handler ran although its worker was killed first"
    assert process_gone(first_pid)
    assert runtime.worker_count(fn.name) == 0
    after, after_error = call(runtime, fn.name)
    assert after_error is None and after["pid"] != first_pid
    assert runtime.worker_count(fn.name) == 1


def test_replace_response_next(runtime: LambdaRuntime, tmp_path: Path) -> None:
    fn = function()
    runtime.register(fn)
    marker = tmp_path / "ran"
    runtime.faults.replace_response_next(fn.name, {"huge": "x" * 1000})

    payload, error = call(runtime, fn.name, {"touch": str(marker)})

    assert error is None
    assert payload == {"huge": "x" * 1000}
    assert marker.exists()
    assert (runtime.invocations(fn.name)[-1].outcome, runtime.invocations(fn.name)[-1].ran) == ("ok", True)
    assert call(runtime, fn.name)[0]["calls"] == 2


# -- names ------------------------------------------------------------------------------------------
def test_function_is_found_by_name_arn_and_qualified_arn(runtime: LambdaRuntime) -> None:
    fn = function()
    runtime.register(fn)
    partial = f"{fn.arn.split(':')[4]}:function:{fn.name}"  # Lambda Invoke accepts a partial ARN too

    names = (fn.name, fn.arn, f"{fn.arn}:$LATEST", f"{fn.arn}:live", f"{fn.name}:live", partial, f"{partial}:1")
    for name in names:
        payload, error = call(runtime, name)
        assert error is None and payload["function_name"] == fn.name
    assert len(runtime.invocations(fn.arn)) == len(names)


def test_a_handler_missing_from_its_module_is_handler_not_found(runtime: LambdaRuntime) -> None:
    # AWS's Python runtime (awslambdaric bootstrap.py): Runtime.HandlerNotFound, "Handler '<function>'
    # missing on module '<module>'" (tests/conformance/test_errors.py checks it through a state machine).
    fn = function("broken", code="basic", handler="app.no_such_function")
    runtime.register(fn)
    payload, error = call(runtime, fn.name)
    assert error == "Unhandled" and payload["errorType"] == "Runtime.HandlerNotFound"
    assert payload["errorMessage"] == "Handler 'no_such_function' missing on module 'app'"


@pytest.mark.parametrize(
    "name",
    [
        "rt-nope",
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:rt-nope",
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:rt-nope:$LATEST",
    ],
)
def test_unknown_function(runtime: LambdaRuntime, name: str) -> None:
    runtime.register(function())

    with pytest.raises(UnknownFunctionError) as raised:
        runtime.invoke(name, b"{}")

    assert (raised.value.code, raised.value.status) == ("ResourceNotFoundException", 404)
    assert name in raised.value.message
    with pytest.raises(UnknownFunctionError):
        runtime.invocations(name)


def test_payload_that_is_not_json_is_a_service_error(runtime: LambdaRuntime) -> None:
    fn = function()
    runtime.register(fn)

    with pytest.raises(LambdaServiceError) as raised:
        runtime.invoke(fn.name, b"{not json")

    assert (raised.value.code, raised.value.status) == ("InvalidRequestContentException", 400)
    assert runtime.invocations(fn.name) == []


def test_only_the_most_recent_invocations_are_kept(runtime: LambdaRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lambda_runtime, "MAX_INVOCATIONS_KEPT", 3)
    fn = function()
    runtime.register(fn, warm=True)

    for n in range(5):
        call(runtime, fn.name, {"n": n})

    assert [i.event for i in runtime.invocations(fn.name)] == [{"n": 2}, {"n": 3}, {"n": 4}]


def test_invocations_kept_are_bounded_in_bytes(runtime: LambdaRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each event's text is about 1,000 characters: a budget of 3.5 records keeps the last 3.
    weight = 1000 + lambda_runtime._INVOCATION_OVERHEAD
    monkeypatch.setattr(lambda_runtime, "MAX_INVOCATION_BYTES", weight * 7 // 2)
    fn = function()
    runtime.register(fn, warm=True)

    for n in range(5):
        call(runtime, fn.name, {"n": n, "pad": "x" * (1000 - len(json.dumps({"n": n, "pad": ""})) + 2)})

    assert [i.event["n"] for i in runtime.invocations(fn.name)] == [2, 3, 4]


def test_log_lines_kept_are_bounded_in_bytes(runtime: LambdaRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lambda_runtime, "MAX_LOG_BYTES", 4000)
    fn = function()
    runtime.register(fn, warm=True)

    for _ in range(20):
        call(runtime, fn.name, {"action": "print"})

    logs = runtime.logs(fn.name)
    request_id = runtime.invocations(fn.name)[-1].request_id
    assert sum(len(line) + lambda_runtime._LOG_LINE_OVERHEAD for line in logs) <= 4000
    assert any(line.startswith(f"REPORT RequestId: {request_id}") for line in logs), logs
    assert not any(line.startswith(f"START RequestId: {runtime.invocations(fn.name)[0].request_id}") for line in logs)
