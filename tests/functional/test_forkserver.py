"""Lambda workers forked from a server that has imported boto3 (idemflow/engine/services/lambda_/forkserver.py), and the
workers it must not fork: each is started as a new interpreter instead.

The runtime's own behaviour (results, isolation, timeouts, crashes, no orphan or zombie) is
tests/functional/test_lambda_runtime.py, which runs on forked workers; these tests pin how a worker is
started, with the same test-only handlers.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from idemflow.engine.services.lambda_ import forkserver
from idemflow.engine.services.lambda_.runtime import LambdaRuntime
from tests.polling import wait_until

from .test_lambda_runtime import FIXTURES, call, function, process_gone, process_state
from .test_lambda_runtime import runtime as runtime  # the fixture, by its name

pytestmark = [
    pytest.mark.functional,
    pytest.mark.skipif(not forkserver.enabled(), reason="the fork server runs on Linux only"),
]


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_worker_is_forked_from_a_server_as_the_worker_a_new_interpreter_would_be(runtime: LambdaRuntime) -> None:
    fn = function()
    runtime.register(fn)

    seen, error = call(runtime, fn.name, {"action": "process"})

    assert error is None, seen
    assert seen["ppid"] in forkserver.server_pids()
    assert seen["ppid"] != os.getpid()
    # What `python -m idemflow.engine.services.lambda_.worker CODE_DIR HANDLER` run from the code's folder has:
    # that folder first on sys.path (the worker puts it there once more), and the worker's argv.
    assert seen["sys_path"][:2] == [str(FIXTURES / "basic")] * 2
    assert seen["argv"][1:] == [str(FIXTURES / "basic"), "app.handler"]
    assert seen["argv"][0].endswith("idemflow/engine/services/lambda_/worker.py")


def forked_and_new(
    runtime: LambdaRuntime,
    monkeypatch: pytest.MonkeyPatch,
    action: str,
    sdk_services: tuple[str, ...] = (),
    **event: Any,
) -> tuple[Any, Any]:
    """What the test handler answers ``action`` (with ``event``) with in a forked worker, then in a new
    interpreter (of a function whose policies name ``sdk_services``)."""
    answers = []
    for fork in ("1", "0"):
        monkeypatch.setenv("IDEMFLOW_LAMBDA_FORK", fork)
        name = f"{action}-{'-'.join(sdk_services)}-{'forked' if fork == '1' else 'started'}"
        fn = function(name, code="basic", sdk_services=sdk_services)
        runtime.register(fn)
        answer, error = call(runtime, fn.name, {"action": action, **event})
        assert error is None, answer
        answers.append(answer)
    return answers[0], answers[1]


def test_a_forked_worker_collects_as_a_new_interpreter_and_never_walks_the_preloaded_sdk(
    runtime: LambdaRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server runs without the collector and freezes what its preload made (the gc module's recipe for a
    # process that forks without exec); each worker collects again, with a new interpreter's thresholds.
    forked, new = forked_and_new(runtime, monkeypatch, "gc")

    assert new == {"enabled": True, "thresholds": [700, 10, 10], "frozen": 0}
    assert forked["enabled"] is True and forked["thresholds"] == new["thresholds"]
    assert forked["frozen"] > 10_000  # boto3's modules, frozen before the fork


def test_a_forked_worker_reads_what_every_client_reads_from_its_server_and_each_model_once(
    runtime: LambdaRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A handler with two sessions' DynamoDB clients (Powertools' persistence layer makes a session of its own).
    forked, new = forked_and_new(runtime, monkeypatch, "botocore-reads")

    # A new interpreter reads endpoints.json and the DynamoDB model once per session; a forked worker never
    # reads the first (its server did), and the model once at most: its sessions share one loader (the server
    # loads it before it forks once a function allowed DynamoDB has had a worker: the next test).
    assert new["reads"].count("endpoints") == 2 and new["reads"].count("dynamodb/2012-08-10/service-2") == 2
    assert "endpoints" not in forked["reads"] and forked["reads"].count("dynamodb/2012-08-10/service-2") <= 1
    # The same clients either way.
    assert forked["clients"] == new["clients"] and forked["clients"][0] == runtime.endpoint_url
    assert forked["operations"] == new["operations"] and forked["put_item"] == new["put_item"]


def test_a_worker_of_a_function_allowed_dynamodb_is_forked_with_its_models_loaded(
    runtime: LambdaRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its policies name DynamoDB (Function.sdk_services): the server loaded what a client and a resource of it
    # read before it forked, so the worker reads no file of botocore's or boto3's data; a new interpreter reads
    # them as before, and builds the same clients.
    forked, new = forked_and_new(runtime, monkeypatch, "botocore-reads", sdk_services=("dynamodb",))

    assert forked["reads"] == [], forked["reads"]
    assert new["reads"].count("dynamodb/2012-08-10/service-2") == 2 and "endpoints" in new["reads"]
    assert forked["clients"] == new["clients"] and forked["clients"][0] == runtime.endpoint_url
    assert forked["operations"] == new["operations"] and forked["put_item"] == new["put_item"]


def test_models_are_loaded_without_reading_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the server loads for a worker must not depend on what differs between it and the worker.
    import botocore.loaders

    monkeypatch.setattr(forkserver, "_shared_loader", botocore.loaders.create_loader())
    monkeypatch.setattr(forkserver, "_models_loaded", set())
    monkeypatch.setattr(forkserver.gc, "freeze", lambda: None)  # the server's step, not this process's
    read, written = forkserver.import_recording((), then=lambda: forkserver.load_models(["dynamodb", "no-such"]))

    assert (read, written) == ({}, {})
    assert forkserver._models_loaded == {"dynamodb", "no-such"}


def test_a_forked_worker_finds_the_preloaded_modules_imported_which_a_new_interpreter_imports_itself(
    runtime: LambdaRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The test handler imports none of them: a new interpreter's worker has only boto3's core (the worker
    # imports nothing of the SDK either: it is what the handler's module imports). The preload reads only HOME
    # of the environment (test_a_worker_that_differs_on_what_the_preload_read_...), so a fork stands in for it.
    names = ["asyncio", "boto3.dynamodb.table", "boto3.dynamodb.conditions", "aws_xray_sdk"]
    forked, new = forked_and_new(runtime, monkeypatch, "modules", names=names)

    assert forked == {**dict.fromkeys(names[:3], True), "aws_xray_sdk": False}
    assert new == dict.fromkeys(names, False)


def test_with_forking_off_every_worker_is_a_new_interpreter(
    runtime: LambdaRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IDEMFLOW_LAMBDA_FORK", "0")
    fn = function()
    runtime.register(fn)

    seen, _ = call(runtime, fn.name, {"action": "process"})

    assert seen["ppid"] == os.getpid()


def test_a_function_that_sets_pythonpath_is_forked_from_a_server_started_with_it(
    runtime: LambdaRuntime, tmp_path: Path
) -> None:
    # The interpreter reads PYTHONPATH at its start: a server started without it would fork a worker
    # that does not have it on sys.path.
    plain, other = function(), function("other", code="other", environment={"PYTHONPATH": str(tmp_path)})
    runtime.register(plain)
    runtime.register(other)

    first, _ = call(runtime, plain.name, {"action": "process"})
    seen, _ = call(runtime, other.name, {"action": "whoami"})

    assert str(tmp_path) not in first["sys_path"]
    assert parent(seen["pid"]) in forkserver.server_pids()
    assert parent(seen["pid"]) != first["ppid"]
    assert (
        Path(f"/proc/{parent(seen['pid'])}/environ").read_bytes().split(b"\0").count(f"PYTHONPATH={tmp_path}".encode())
    )


def test_past_the_servers_cap_a_worker_is_a_new_interpreter(
    runtime: LambdaRuntime, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(forkserver, "MAX_SERVERS", len(forkserver.server_pids()))
    fn = function(environment={"PYTHONPATH": str(tmp_path)})  # what no running server agrees on
    runtime.register(fn)

    seen, _ = call(runtime, fn.name, {"action": "process"})

    assert seen["ppid"] == os.getpid()
    assert str(tmp_path) in seen["sys_path"]


def test_a_worker_that_differs_on_what_the_preload_read_is_forked_from_a_server_that_agrees(
    runtime: LambdaRuntime, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fn = function()
    runtime.register(fn)
    first = call(runtime, fn.name, {"action": "process"})[0]
    # boto3 reads HOME at import to place its SSO and credential caches (botocore.utils.JSONFileCache).
    assert forkserver._read == {"HOME"}

    monkeypatch.setenv("HOME", str(tmp_path))  # the engine's environment changes after the server started
    other = function("other", code="other")
    runtime.register(other)
    seen, _ = call(runtime, other.name, {"action": "whoami"})

    server = parent(seen["pid"])
    assert server in forkserver.server_pids()
    assert server != first["ppid"]
    assert f"HOME={tmp_path}".encode() in Path(f"/proc/{server}/environ").read_bytes().split(b"\0")


def test_a_server_that_dies_is_replaced_and_its_idle_workers_are_not_reused(runtime: LambdaRuntime) -> None:
    fn = function()
    runtime.register(fn)
    first = call(runtime, fn.name, {"action": "process"})[0]
    old_server = first["ppid"]

    os.kill(old_server, signal.SIGKILL)
    wait_until(lambda: old_server not in forkserver.server_pids(), 5, what="the runtime to see its server gone")

    seen, error = call(runtime, fn.name, {"action": "process"})

    assert error is None, seen
    assert seen["pid"] != first["pid"]
    assert seen["ppid"] in forkserver.server_pids()
    assert seen["ppid"] != old_server
    wait_until(lambda: process_gone(first["pid"]), 5, what="the dead server's worker to be gone")
    wait_until(lambda: process_gone(old_server), 5, what="the dead server to be reaped, not left a zombie")


@pytest.mark.parametrize("fork", ["1", "0"], ids=["forked", "new-interpreter"])
def test_a_worker_ends_at_once_when_the_runtime_closes_and_its_atexit_handlers_run(
    runtime: LambdaRuntime, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fork: str
) -> None:
    # worker.end: no interpreter teardown (Lambda stops a sandbox's process), but what the handler
    # registered with atexit runs.
    monkeypatch.setenv("IDEMFLOW_LAMBDA_FORK", fork)
    fn = function()
    runtime.register(fn)
    marker = tmp_path / "ended"
    pid = call(runtime, fn.name, {"action": "atexit", "path": str(marker)})[0]["pid"]

    runtime.close()

    wait_until(lambda: process_gone(pid), 5, what="the worker to end")
    assert marker.read_text(encoding="utf-8") == f"ended {pid}"


def test_a_spawn_on_a_server_that_has_ended_fails_and_leaves_no_descriptor_open(runtime: LambdaRuntime) -> None:
    fn = function()
    runtime.register(fn)
    server_pid = call(runtime, fn.name, {"action": "process"})[0]["ppid"]
    (server,) = [s for s in forkserver._servers.values() if s.alive and s.process.pid == server_pid]
    os.kill(server_pid, signal.SIGKILL)
    wait_until(lambda: not server.alive, 5, what="the runtime to see its server gone")
    before = len(os.listdir("/proc/self/fd"))

    with pytest.raises(OSError, match="has ended"):
        server.spawn([str(FIXTURES / "basic"), "app.handler"], dict(os.environ), str(FIXTURES / "basic"))

    assert len(os.listdir("/proc/self/fd")) == before
    server.kill(12345)  # a kill through a server that has ended is a no-op, not an error


def test_a_worker_that_has_exited_is_not_taken_for_alive_before_its_server_reaps_it(runtime: LambdaRuntime) -> None:
    # Popen.poll reaps a child that has exited; a forked worker is its server's child, so poll reads a
    # pidfd and waits for the server's word. Here the server is stopped while the worker dies: it cannot
    # reap it until it is continued.
    fn = function()
    runtime.register(fn, warm=True)
    (worker,) = runtime._pools[fn.name].workers
    process = worker.process
    assert isinstance(process, forkserver.ForkedProcess)
    server_pid = parent(process.pid)
    waiting = threading.Event()
    wait = process.wait

    def noting_wait(timeout: float | None = None) -> int:
        waiting.set()
        return wait(timeout)

    process.wait = noting_wait  # type: ignore[method-assign]
    answers: list[int | None] = []
    os.kill(server_pid, signal.SIGSTOP)
    try:
        os.kill(process.pid, signal.SIGKILL)
        wait_until(lambda: process_state(process.pid) == "Z", 5, what="the worker to be a zombie of its server")
        asking = threading.Thread(target=lambda: answers.append(process.poll()), daemon=True)
        asking.start()
        wait_until(lambda: waiting.is_set() or not asking.is_alive(), 5, what="poll to answer or to wait")
    finally:
        os.kill(server_pid, signal.SIGCONT)
    asking.join(10)

    assert answers == [-signal.SIGKILL]
