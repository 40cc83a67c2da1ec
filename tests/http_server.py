"""A small HTTP server on 127.0.0.1 (an OS-chosen port) in a thread, for the HTTP Task's tests: it records every
request and answers from a table of routes."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def json(value: Any, status: int = 200) -> Answer:
        return Answer(status, json.dumps(value).encode())


Route = Callable[[Seen], Answer]


@dataclass
class Server:
    url: str
    seen: list[Seen]
    routes: dict[str, Route]

    def paths(self, prefix: str) -> list[Seen]:
        return [s for s in self.seen if s.path.split("?")[0] == prefix]


@contextmanager
def serving(routes: dict[str, Route]) -> Iterator[Server]:
    """Serve ``routes`` (by path, without the query) until the block ends; an unknown path answers 404."""
    seen: list[Seen] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = Seen(
                self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length)
            )
            with lock:
                seen.append(request)
            route = routes.get(self.path.split("?")[0])
            answer = route(request) if route else Answer(404, b'{"message":"Not Found"}')
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(answer.body)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield Server(f"http://127.0.0.1:{server.server_address[1]}", seen, routes)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def refused_url() -> str:
    """A URL on 127.0.0.1 nobody listens on: a port the OS gave and that was closed again."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/nobody"
