"""``serve`` stops on SIGINT and SIGTERM (``idemflow/cli/app.py``), whenever the signal comes."""

from __future__ import annotations

import subprocess
import sys

from tests.paths import PROJECT_ROOT

# The moment that matters: the main thread holds the stop event's lock (as serve's stop.wait(0.5) does while it
# takes the lock back at the end of each wait) when the signal's handler runs in it. Event's lock is not
# reentrant: a handler that sets the event itself waits there for ever.
SIGNAL_WHILE_THE_LOCK_IS_HELD = """
import os, signal, threading
from idemflow.cli.app import _stop_on_signals

stop = threading.Event()
with _stop_on_signals(stop):
    with stop._cond:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the handler runs between two of these bytecodes, the lock held
            pass
    print("stopped" if stop.wait(10) else "not stopped")
"""


def test_a_signal_that_comes_while_the_main_thread_holds_the_stop_events_lock_still_stops_serve() -> None:
    try:
        result = subprocess.run(
            [sys.executable, "-c", SIGNAL_WHILE_THE_LOCK_IS_HELD],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=15,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("the handler waits for the lock its own thread holds: serve never stops") from None
    assert (result.returncode, result.stdout) == (0, "stopped\n"), result.stderr
