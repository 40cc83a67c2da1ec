"""The console script: parse, dispatch to the command, and end every expected error as one line."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

from idemflow.cli import collector
from idemflow.cli.commands import cmd_diagram, cmd_history, cmd_record, cmd_release, cmd_run, cmd_serve, cmd_start
from idemflow.cli.demo import cmd_demo
from idemflow.cli.errors import EXIT_INTERRUPTED, PROG, as_cli_error, report
from idemflow.cli.operators import OPERATOR_COMMANDS
from idemflow.cli.parser import build_parser
from idemflow.cli.scaffold import cmd_init

COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "run": cmd_run,
    "start": cmd_start,
    "record": cmd_record,
    "release": cmd_release,
    "history": cmd_history,
    "demo": cmd_demo,
    "diagram": cmd_diagram,
    "init": cmd_init,
    **OPERATOR_COMMANDS,
}
"""Every command but ``serve``, which also takes the event that stops it."""


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(*_: object) -> None:
        # A handler runs in the main thread between two of its bytecodes, maybe while that thread holds the event's
        # lock (serve's stop.wait(0.5) takes it back when it times out): Event.set there waits for that lock for
        # ever. Another thread sets it once the main thread lets go.
        threading.Thread(target=stop.set, name="idemflow-stop", daemon=True).start()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)


def console() -> int:
    """The console script (``idemflow``, ``python -m idemflow.cli``): :func:`main` in a process of its own,
    whose collector it holds until the command has set up (:mod:`idemflow.cli.collector`)."""
    collector.hold()
    return main()


def main(argv: Sequence[str] | None = None, *, stop: threading.Event | None = None) -> int:
    """The console script. ``stop`` ends ``serve`` when set (signals set it in the main thread)."""
    out = sys.stdout
    if hasattr(out, "reconfigure"):  # a key or result in a script the terminal cannot show is no crash
        out.reconfigure(errors="replace")
    try:
        args = build_parser().parse_args(argv)
        if args.command == "serve":
            stop = stop or threading.Event()
            with _stop_on_signals(stop):
                return cmd_serve(args, out, stop)
        return COMMANDS[args.command](args, out)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `idemflow history ... | head`: the reader had enough, which is no error
        # Python's recipe (the signal module's docs, "Note on SIGPIPE"): no second error when it flushes at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:
        error = as_cli_error(exc)
        if error is None:
            raise
        return report(error)
