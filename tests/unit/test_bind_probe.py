"""The engine's port check judges a port as its server does (werkzeug's BaseWSGIServer binds with
SO_REUSEADDR)."""

from __future__ import annotations

import socket

from werkzeug.serving import BaseWSGIServer

from idemflow.engine.engine import _bind_error


def _port_left_in_time_wait() -> int:
    """A port whose only trace is a server-side connection in TIME_WAIT, as a stopped server leaves it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        # Like the engine's server; accepted connections inherit the option (Linux only lets a new
        # socket share a port with TIME_WAIT connections when both sides set it).
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = int(listener.getsockname()[1])
        with socket.create_connection(("127.0.0.1", port)) as peer:
            conn, _ = listener.accept()
            conn.close()  # the server closes first: its end of the connection enters TIME_WAIT
            peer.recv(1)
    return port


def test_the_server_binds_with_reuse_address() -> None:
    # The premise of the probe's option: the server (moto's, on werkzeug) reuses the address.
    assert BaseWSGIServer.allow_reuse_address is True


def test_a_port_in_time_wait_is_free_to_the_server_and_to_the_probe() -> None:
    port = _port_left_in_time_wait()
    # Without SO_REUSEADDR the port is refused for as long as TIME_WAIT lasts (60 s on Linux).
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as plain:
        try:
            plain.bind(("127.0.0.1", port))
            plain_refused = False
        except OSError:
            plain_refused = True
    assert plain_refused, "the premise: a plain bind is refused while the connection is in TIME_WAIT"
    assert _bind_error("127.0.0.1", port) is None


def test_a_port_someone_listens_on_is_still_refused() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = int(busy.getsockname()[1])
        problem = _bind_error("127.0.0.1", port)
    assert problem is not None and f"port {port} is in use" in problem
