"""Connections to the endpoint kept open between requests (``keep-alive``, a speedup).

moto's server is werkzeug's development server, which ends every response with ``Connection: close``: its
request handler (http.server's) cannot drain a request body the application left unread before it reads the
next request line. So each SDK call a function makes through the endpoint (a DynamoDB write, a queue's
send) opened a TCP connection of its own, which the server accepted and handed to a new thread: on the
workflow's first runs, the server's accept loop and its threads cost as much of the engine's CPU as the
DynamoDB requests they carried.

With the change, a request that states its body's length (``Content-Length``, no ``Transfer-Encoding``) on
an HTTP/1.1 connection the client keeps open has its body read before the application sees it (the same
bytes, from memory); a response that states its length and sends exactly that many bytes then leaves the
connection open for the client's next request, as HTTP/1.1 does unless either side closes it (RFC 9112,
section 9.3, Persistence). Anything else is answered and closed as before. What the application receives and
answers is unchanged: the status, the headers (but ``Connection: close``) and the body.

:func:`close_kept` ends the connections a server keeps open when it stops: their threads are waiting for a
next request that no longer comes.
"""

from __future__ import annotations

import contextlib
import io
import selectors
import socket
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

_KEPT = "_idemflow_kept_connections"
"""The attribute of a server naming the connections it keeps open: {socket: None}."""
_kept_lock = threading.Lock()


class _CountingWriter:
    """A handler's output stream that counts what it writes (the body of a response: counted from its
    headers' end)."""

    def __init__(self, raw: Any):
        self.raw = raw
        self.written = 0

    def write(self, data: bytes) -> int:
        self.raw.write(data)
        self.written += len(data)
        return len(data)

    def flush(self) -> None:
        self.raw.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


class _Drained:
    """A selector that finds nothing to read: what werkzeug's drain sees on a kept connection."""

    def register(self, *_: Any) -> None:
        pass

    def select(self, timeout: float | None = None) -> list[Any]:
        return []

    def close(self) -> None:
        pass


_reading = threading.local()
"""``body_read``: whether the request the current thread serves had its body read before the application."""


class _WerkzeugSelectors:
    """The ``selectors`` werkzeug's server sees. After a response, its run_wsgi reads whatever the client sent
    since (up to 10 MB, or the end of the stream), to discard a body the application left unread: on a kept
    connection that is the client's next request, and the read waits for more. A request whose body was read
    before the application left nothing to discard."""

    EVENT_READ = selectors.EVENT_READ

    @staticmethod
    def DefaultSelector() -> Any:
        if getattr(_reading, "body_read", False):
            return _Drained()
        return selectors.DefaultSelector()


def _kept(server: Any) -> dict[socket.socket, None]:
    with _kept_lock:
        kept: dict[socket.socket, None] | None = server.__dict__.get(_KEPT)
        if kept is None:
            kept = {}
            setattr(server, _KEPT, kept)
        return kept


def close_kept(server: Any) -> None:
    """End the connections ``server`` keeps open (its handlers' threads, waiting for a next request, see the
    end of the stream and return)."""
    with _kept_lock:
        connections = list(server.__dict__.get(_KEPT, {}))
    for connection in connections:
        with contextlib.suppress(OSError):  # already closed by the client
            connection.shutdown(socket.SHUT_RD)


def install_keep_alive(patch: Patch) -> None:
    import werkzeug.serving
    from moto.moto_server.werkzeug_app import MotoRequestHandler

    setup, finish = MotoRequestHandler.setup, MotoRequestHandler.finish
    make_environ, run_wsgi = MotoRequestHandler.make_environ, MotoRequestHandler.run_wsgi
    send_header, end_headers = MotoRequestHandler.send_header, MotoRequestHandler.end_headers

    def kept_setup(self: Any) -> None:
        setup(self)
        self.wfile = _CountingWriter(self.wfile)
        _kept(self.server)[self.connection] = None

    def kept_finish(self: Any) -> None:
        with _kept_lock:
            self.server.__dict__.get(_KEPT, {}).pop(self.connection, None)
        finish(self)

    def kept_make_environ(self: Any) -> dict[str, Any]:
        environ: dict[str, Any] = make_environ(self)
        # parse_request left the connection open: HTTP/1.1 without "Connection: close". A chunked body is
        # werkzeug's to read: such a connection closes.
        if self.close_connection or self.request_version != "HTTP/1.1" or "HTTP_TRANSFER_ENCODING" in environ:
            return environ
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return environ
        if length < 0:
            return environ
        body = self.rfile.read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        self._idemflow_keep = _reading.body_read = len(body) == length
        return environ

    def kept_send_header(self: Any, keyword: str, value: str) -> None:
        name = keyword.lower()
        if name == "content-length":
            self._idemflow_length = value
        elif name == "connection" and value.lower() == "close" and getattr(self, "_idemflow_keep", False):
            try:
                self._idemflow_expected = int(getattr(self, "_idemflow_length", None))  # type: ignore[arg-type]
            except (TypeError, ValueError):  # no length: the body ends with the connection
                pass
            else:
                return  # left open, provided the body is as long as its header says (run_wsgi checks)
        send_header(self, keyword, value)

    def kept_end_headers(self: Any) -> None:
        end_headers(self)
        if isinstance(self.wfile, _CountingWriter):
            self.wfile.written = 0

    def kept_run_wsgi(self: Any) -> None:
        self._idemflow_keep, self._idemflow_length, self._idemflow_expected = False, None, None
        _reading.body_read = False
        try:
            run_wsgi(self)
        finally:
            _reading.body_read = False
        expected = self._idemflow_expected
        if expected is not None and (not isinstance(self.wfile, _CountingWriter) or self.wfile.written != expected):
            self.close_connection = True

    patch.set(MotoRequestHandler, "setup", kept_setup)
    patch.set(MotoRequestHandler, "finish", kept_finish)
    patch.set(MotoRequestHandler, "make_environ", kept_make_environ)
    patch.set(MotoRequestHandler, "send_header", kept_send_header)
    patch.set(MotoRequestHandler, "end_headers", kept_end_headers)
    patch.set(MotoRequestHandler, "run_wsgi", kept_run_wsgi)
    patch.set(werkzeug.serving, "selectors", _WerkzeugSelectors)
