"""Lambda workers forked from a process that has already imported boto3.

A worker started as a new interpreter spends most of its start importing boto3 (botocore, s3transfer,
urllib3), then each of its sessions parses the same botocore data again (endpoints.json, the service
list, each client's model). The fork server imports boto3 once and gives its process one data loader per
search path (:func:`share_botocore_loaders`), holding what every client reads; each worker is then a fork
of that process, which becomes the worker with the function's environment, folder and pipes, and imports
the handler as a started worker does (``worker.main``).

What a forked worker shares with its server is only what the preload imported before it knew the
function, so a fork stands in for a new interpreter only when that import cannot have depended on what
differs. The server records each environment variable the preload reads (boto3 reads ``HOME`` to place
its SSO and credential caches; nothing else) and reports them with its start; a worker is forked only
from a server that agrees with it on each of them and on every variable the interpreter reads at its own
start (``PYTHON*``, ``LANG``, ``LC_*``: ``PYTHONPATH`` a function sets, say). A worker that differs gets a
server of its own, started with its values, as a new interpreter would have read them (up to
:data:`MAX_SERVERS`; past that, and off Linux, :func:`launch` starts a new interpreter, a
:class:`subprocess.Popen`).

The servers are children of the engine's process, shared by every engine of the process (``idemflow
serve`` and each pytest worker start theirs). A server never starts a thread, so forking it is safe. It
ends when the engine's process does (its socket closes); the workers end with their stdin, as started
ones do. Set ``IDEMFLOW_LAMBDA_FORK=0`` to start every worker as a new interpreter.

Protocol: one JSON object per ``SOCK_SEQPACKET`` message. The engine sends ``spawn`` with the worker's
argv, environment and folder, and its stdin, stdout and stderr as file descriptors; the server answers
with the pid, and later with the exit code it read when it reaped the worker. ``kill`` goes through the
server, which signals only a worker it has not reaped yet: a pid is never signalled after its reuse.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import select
import selectors
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import IO, Any, Final, NoReturn

PRELOAD: Final = ("boto3", "boto3.dynamodb.table", "boto3.dynamodb.transform", "asyncio")
"""What the server imports for every worker: the AWS SDK, which the Lambda runtime provides, with the modules
its sessions name to be imported at a first DynamoDB resource (table methods, conditions, type helpers), and
the standard library's asyncio, which handlers import through their libraries (wrapt, so the X-Ray SDK that
Powertools' Tracer imports at its creation, even disabled). All are the runtime's own files, imported as a new
interpreter would import them; :func:`import_recording` shows that none reads anything of the environment."""

INTERPRETER_VARIABLES: Final = ("PYTHON", "LANG", "LC_")
"""Prefixes of the variables the interpreter reads at its own start, before any import can be recorded."""

_MESSAGE: Final = 1 << 20


def enabled() -> bool:
    return sys.platform == "linux" and os.environ.get("IDEMFLOW_LAMBDA_FORK", "1") != "0"


# -- the engine's side --------------------------------------------------------------------------------


class ForkedProcess:
    """A worker forked by the server: the part of :class:`subprocess.Popen` the Lambda runtime uses."""

    def __init__(self, server: _Server, pid: int, stdin: IO[str], stdout: IO[str], stderr: IO[str]):
        self._server, self.pid = server, pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.returncode: int | None = None
        self.pidfd: int | None = None
        """Readable once the worker has exited, before its server has reaped it and said so."""
        self._started = threading.Event()
        self._ended = threading.Event()

    def _close_pipes(self) -> None:
        for stream in (self.stdin, self.stdout, self.stderr):
            stream.close()

    def _exited(self, code: int) -> None:
        self.returncode = code
        self._ended.set()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None

    def poll(self) -> int | None:
        # As Popen.poll answers for a child that has exited but is not reaped yet: a worker killed while
        # idle must not be taken for alive until its server's word arrives.
        pidfd = self.pidfd
        if self.returncode is None and pidfd is not None:
            with contextlib.suppress(OSError, ValueError, subprocess.TimeoutExpired):
                if select.select([pidfd], [], [], 0)[0]:
                    return self.wait(timeout=5)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"lambda worker {self.pid}", timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            self._server.kill(self.pid)


class _Server:
    def __init__(self, environment: dict[str, str]):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "idemflow.engine.services.lambda_.forkserver", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            env=environment,
            cwd="/",
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self.socket = ours
        self.lock = threading.Lock()
        self.pending: dict[int, ForkedProcess] = {}
        self.live: dict[int, ForkedProcess] = {}
        self.ids = 0
        self.alive = True
        try:
            ours.settimeout(60)  # its import of boto3: a server that hangs there is given up
            hello = json.loads(ours.recv(_MESSAGE) or b"{}")
            ours.settimeout(None)
        except OSError as exc:
            hello = {"ready": False, "error": repr(exc)}
        if not hello.get("ready"):
            self.alive = False
            ours.close()
            self.process.kill()
            self.process.wait()
            raise OSError(f"the Lambda fork server did not start: {hello}")
        self.read: dict[str, str | None] = hello["read"]
        threading.Thread(target=self._listen, name="lambda-fork-server", daemon=True).start()

    def spawn(
        self, argv: list[str], environment: dict[str, str], cwd: str, models: Iterable[str] = ()
    ) -> ForkedProcess:
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        # The engine's ends, kept open for the worker's life as a Popen's pipes are (closed by the runtime).
        process = ForkedProcess(
            self,
            0,
            open(stdin_w, "w", encoding="utf-8"),  # noqa: SIM115
            open(stdout_r, encoding="utf-8"),  # noqa: SIM115
            open(stderr_r, encoding="utf-8"),  # noqa: SIM115
        )
        try:
            with self.lock:
                if not self.alive:
                    raise OSError("the Lambda fork server has ended")
                self.ids += 1
                self.pending[self.ids] = process
                request = {
                    "op": "spawn",
                    "id": self.ids,
                    "argv": argv,
                    "env": environment,
                    "cwd": cwd,
                    "models": sorted(models),
                }
                try:
                    socket.send_fds(self.socket, [json.dumps(request).encode()], [stdin_r, stdout_w, stderr_w])
                except BaseException:
                    del self.pending[self.ids]
                    raise
        except BaseException:
            process._close_pipes()
            raise
        finally:
            for fd in (stdin_r, stdout_w, stderr_w):  # the worker's ends: the server holds copies now
                os.close(fd)
        process._started.wait()
        if process.pid == 0:  # the server ended before it answered
            process._close_pipes()
            raise OSError("the Lambda fork server ended before it started the worker")
        return process

    def kill(self, pid: int) -> None:
        with self.lock, contextlib.suppress(OSError):  # a server gone meanwhile: _listen kills its workers
            if self.alive:
                self.socket.send(json.dumps({"op": "kill", "pid": pid}).encode())

    def _receive(self) -> bytes:
        try:
            return self.socket.recv(_MESSAGE)
        except OSError:
            return b""  # the connection reset: as good as closed

    def _listen(self) -> None:
        while message := self._receive():
            event = json.loads(message)
            if "exit" in event:
                process = self.live.pop(event["exit"], None)
                if process is not None:
                    process._exited(event["code"])
                continue
            with self.lock:
                process = self.pending.pop(event["id"])
            process.pid = event["pid"]
            with contextlib.suppress(OSError):  # gone already: its exit is the next message
                process.pidfd = os.pidfd_open(process.pid)
            self.live[process.pid] = process
            process._started.set()
        # The server ended (killed, say): its workers can no longer be reaped or signalled through it.
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)  # reaped here: no zombie left among the engine's children
        with self.lock:
            self.alive = False
            pending, self.pending = list(self.pending.values()), {}
        for process in pending:
            process._started.set()
        for pid, process in list(self.live.items()):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            process._exited(-signal.SIGKILL)
        self.live.clear()


_server_lock = threading.Lock()
_servers: dict[tuple[tuple[str, str | None], ...], _Server] = {}
_read: frozenset[str] | None = None
"""What the preload read, as the first server reported it: what, with the interpreter's variables, a
server and its workers must agree on."""
_failed = False
"""A server did not start (its preload failed): this process no longer tries."""

MAX_SERVERS: Final = 4
"""Servers kept at once (one per distinct value of what matters, most often one); others start workers as
new interpreters."""


def what_matters(read: Iterable[str], environment: Mapping[str, str]) -> tuple[tuple[str, str | None], ...]:
    """What a forking server and a process forked from it must agree on: the values of what the server's
    import read (``read``) and of every variable the interpreter reads at its start."""
    keys = set(read) | {k for k in environment if k.startswith(INTERPRETER_VARIABLES)}
    return tuple(sorted((k, environment.get(k)) for k in keys))


def _matters(environment: Mapping[str, str]) -> tuple[tuple[str, str | None], ...]:
    """What a server and its workers agree on (:func:`what_matters` of the preload's reads): the servers are
    kept by it."""
    return what_matters(_read or (), environment)


def _start(environment: dict[str, str]) -> _Server:
    """A new server, kept by what matters of its own environment. Caller holds the lock."""
    global _read, _failed
    try:
        server = _Server(environment)
    except OSError:
        _failed = True
        raise
    if _read is None:
        _read = frozenset(server.read)
    _servers[_matters(environment)] = server
    return server


def _server(base: dict[str, str], environment: Mapping[str, str]) -> _Server | None:
    """The server a worker with ``environment`` is forked from: one that agrees with it on what matters,
    started with ``base`` changed to the worker's values of it (a new interpreter would have read them).
    None when :data:`MAX_SERVERS` run for other values."""
    with _server_lock:
        if _failed:
            raise OSError("the Lambda fork server did not start")
        if _read is None:  # the first server tells what its preload reads
            _start(base)
        key = _matters(environment)
        server = _servers.get(key)
        if server is not None and server.alive:
            return server
        if server is None and sum(s.alive for s in _servers.values()) >= MAX_SERVERS:
            return None
        matters = {k for k, _ in key}
        own = {k: v for k, v in base.items() if not k.startswith(INTERPRETER_VARIABLES) and k not in matters}
        own.update({k: v for k, v in key if v is not None})
        return _start(own)


def server_pids() -> list[int]:
    """The pids of this process's fork servers, the parents of its forked workers."""
    with _server_lock:
        return [s.process.pid for s in _servers.values() if s.alive]


def launch(
    argv: list[str], base: dict[str, str], environment: dict[str, str], cwd: str, models: Iterable[str] = ()
) -> ForkedProcess | subprocess.Popen[str]:
    """Start ``python -m idemflow.engine.services.lambda_.worker`` + ``argv`` with ``environment`` in ``cwd``:
    forked from a server that agrees with it on what matters (started with ``base``, what every worker's environment
    shares, and the worker's own values of what matters), else as a new interpreter. ``models``: the AWS
    services whose models the server loads before it forks (:func:`load_models`), those the function's
    policies name."""
    if enabled():
        try:
            server = _server(base, environment)
            if server is not None:
                return server.spawn(argv, environment, cwd, models)
        except OSError:
            pass  # no server (it ended, or did not start): this worker starts as a new interpreter
    return subprocess.Popen(
        [sys.executable, "-m", "idemflow.engine.services.lambda_.worker", *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=environment,
        cwd=cwd,
    )


# -- the server's side --------------------------------------------------------------------------------


def import_recording(
    modules: Iterable[str], then: Callable[[], object] | None = None
) -> tuple[dict[str, str | None], dict[str, str]]:
    """Import ``modules`` (and call ``then``, what the process does with them before it forks), recording every
    environment variable read meanwhile: each with the value it had before the import, and the variables the
    import set (awscli adds its data folder to AWS_DATA_PATH). A process forked after it stands in for a new
    interpreter that imported them only where its environment agrees on what was read; what was set is set in
    it again."""
    read: set[str] = set()
    before = dict(os.environ)
    environ_type = type(os.environ)
    get_item = environ_type.__getitem__  # get(), `in` and os.getenv all go through it

    def recorded_get_item(self: Any, key: str) -> str:
        read.add(key)
        return get_item(self, key)

    environ_type.__getitem__ = recorded_get_item  # type: ignore[method-assign]
    try:
        for module in modules:
            __import__(module)
        if then is not None:
            then()
    finally:
        environ_type.__getitem__ = get_item  # type: ignore[method-assign]
    written = {k: v for k, v in os.environ.items() if before.get(k) != v}
    return {key: before.get(key) for key in read}, written


def _preload() -> dict[str, str | None]:
    """Import :data:`PRELOAD`, then load what every client reads into a loader its workers share: what it
    read of the environment (boto3 sets nothing; the loading reads nothing)."""
    return import_recording(PRELOAD, then=_load_shared_data)[0]


def _load_shared_data() -> None:
    global _shared_loader
    _shared_loader = share_botocore_loaders()
    read_shared_data(_shared_loader)


def read_shared_data(loader: Any) -> None:
    """Read into ``loader`` what every client reads whatever its service (:data:`SHARED_DATA`), and the listings of
    the model types a client looks its model up among (:data:`LISTED_TYPES`)."""
    for name in SHARED_DATA:
        loader.load_data(name)
    for type_name in LISTED_TYPES:
        loader.list_available_services(type_name)


_shared_loader: Any = None
_models_loaded: set[str] = set()


def load_models(services: Iterable[str]) -> None:
    """Load, in the server, what a client and a resource of each of ``services`` read from botocore's and boto3's
    data (the service's model, its endpoint rules, boto3's resource model) and the Python names of its
    operations (``xform_name``'s cache): once per service, kept for every worker forked after, so that a worker's
    first client parses nothing. The loader only reads files and ``xform_name`` only converts names, so a fork
    gets what a new interpreter computes. The calls are the ones boto3 and botocore make, argument for
    argument: the loader keeps each result under the arguments it was called with. A service botocore does not
    know is skipped."""
    import boto3
    from botocore import xform_name
    from botocore.exceptions import DataNotFoundError

    loader = _shared_loader
    wanted = [s for s in services if s not in _models_loaded]
    if loader is None or not wanted:
        return
    known = set(loader.list_available_services("service-2"))
    # What every boto3 Session does to its loader (Session._setup_loader): resources-1 lives there.
    loader.search_paths.append(os.path.join(os.path.dirname(boto3.__file__), "data"))
    for service in wanted:
        _models_loaded.add(service)
        if service not in known:
            continue
        try:
            model = loader.load_service_model(service, "service-2", api_version=None)  # a client
            version = model.get("metadata", {}).get("apiVersion")
            loader.load_service_model(service, "endpoint-rule-set-1", api_version=None)
            for operation in model.get("operations", {}):
                xform_name(operation)
            with contextlib.suppress(DataNotFoundError):  # a resource, where boto3 has one
                loader.load_service_model(service, "resources-1", None)
                loader.load_service_model(service, "service-2", api_version=version)
                loader.load_service_model(service, "endpoint-rule-set-1", api_version=version)
        except Exception:  # only a head start: the worker loads what it needs itself, and says why it cannot
            continue
    gc.freeze()  # long-lived in every worker forked after, as the preload is


SHARED_DATA: Final = ("endpoints", "partitions", "sdk-default-configuration")
"""What every botocore client reads, whatever its service: loaded by the server, before it forks."""

LISTED_TYPES: Final = ("service-2", "endpoint-rule-set-1")
"""The model types every client's model is looked up among: the loader lists the services that have one (a
directory listing of each of some 400 services) before it loads one."""


def share_botocore_loaders() -> Any:
    """One botocore data loader per search path for this process (and each process forked from it), instead
    of one per session; returns the default path's (no ``AWS_DATA_PATH``).

    Each botocore session reads the JSON it needs (endpoints, partitions, each service's model) with a loader
    of its own, and code makes sessions freely: Powertools' DynamoDB persistence layer makes one per instance,
    so a handler with a DynamoDB client of its own besides parsed endpoints.json and the DynamoDB model
    twice per cold start. A loader only reads files and keeps what it read, so sharing it changes no answer; a session
    with another data path (``AWS_DATA_PATH``, its config's ``data_path``) gets a loader of its own."""
    import botocore.session

    from idemflow.engine.core import loaders

    botocore.session.create_loader = loaders.loader  # type: ignore[attr-defined]  # the name sessions call
    return loaders.loader(None)


class _Become(Exception):
    """Not an error: how a forked child leaves the server's loop to become a worker."""

    def __init__(self, request: dict[str, Any], fds: list[int]):
        self.request, self.fds = request, fds


def _serve(channel: socket.socket) -> None:
    """Answer the engine until it goes; raises :class:`_Become` in each forked child."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    live: set[int] = set()
    selector = selectors.DefaultSelector()
    selector.register(channel, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is channel:
                message, fds, _, _ = socket.recv_fds(channel, _MESSAGE, 3)
                if not message:
                    return
                request = json.loads(message)
                if request["op"] == "kill":
                    if request["pid"] in live:
                        os.kill(request["pid"], signal.SIGKILL)
                    continue
                load_models(request.get("models", ()))
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    channel.close()
                    for fd in (wake_r, wake_w):
                        os.close(fd)
                    raise _Become(request, fds)
                for fd in fds:
                    os.close(fd)
                live.add(pid)
                channel.send(json.dumps({"id": request["id"], "pid": pid}).encode())
            else:
                while True:
                    try:
                        os.read(wake_r, 4096)
                    except BlockingIOError:
                        break
                while live:
                    try:
                        pid, status = os.waitpid(-1, os.WNOHANG)
                    except ChildProcessError:
                        break
                    if pid == 0:
                        break
                    live.discard(pid)
                    channel.send(json.dumps({"exit": pid, "code": os.waitstatus_to_exitcode(status)}).encode())


def _become_worker(request: dict[str, Any], fds: list[int]) -> NoReturn:
    """In the forked child: the worker a new interpreter would have been, then its ``main``."""
    gc.enable()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    environment: dict[str, str] = request["env"]
    os.environ.clear()
    os.environ.update(environment)
    sys.dont_write_bytecode = bool(environment.get("PYTHONDONTWRITEBYTECODE"))
    os.chdir(request["cwd"])
    sys.path[0] = request["cwd"]  # where `python -m` run from that folder puts it
    unbuffered = bool(environment.get("PYTHONUNBUFFERED"))
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True, write_through=unbuffered
    )
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
        write_through=unbuffered,
    )
    from idemflow.engine.services.lambda_ import worker

    sys.argv = [worker.__file__, *request["argv"]]
    worker.end(worker.main(sys.argv))


def main(argv: list[str]) -> int:
    # The gc module's recipe for a process that forks without exec (its docs, gc.freeze): no collection
    # in the server, and what the preload made frozen, so that no worker's collections traverse the
    # preloaded SDK's objects again (they are a new interpreter's long-lived modules: never garbage).
    # Each worker enables the collector again as it starts.
    gc.disable()
    channel = socket.socket(fileno=int(argv[1]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the engine's: the server ends with its socket
    try:
        read = _preload()
    except Exception as exc:
        channel.send(json.dumps({"ready": False, "error": repr(exc)}).encode())
        return 1
    gc.freeze()
    channel.send(json.dumps({"ready": True, "read": read}).encode())
    try:
        _serve(channel)
    except _Become as child:
        _become_worker(child.request, child.fds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
