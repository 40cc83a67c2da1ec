"""The tests' one way to wait for something that happens on another thread, process or service.

A test that must wait polls with :func:`wait_until`: a deadline, a short interval, and at the deadline
an AssertionError that says what never happened. No test writes its own loop around ``time.sleep``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_INTERVAL = 0.01
"""Seconds between two calls of the predicate: short, so a test waits little longer than it must."""


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    *,
    what: str,
    interval: float = DEFAULT_INTERVAL,
) -> T:
    """Call ``predicate`` every ``interval`` seconds until it returns a true value, and return that value.

    It is called at least once, and once more at the deadline; if it never returned a true value by then,
    raises AssertionError naming ``what`` (e.g. "the execution to enter its Wait state") and the timeout.
    """
    if timeout < 0 or interval <= 0:
        raise ValueError(f"timeout must be >= 0 and interval > 0, got timeout={timeout!r}, interval={interval!r}")
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"gave up waiting for {what} after {timeout:g} s")
        time.sleep(min(interval, remaining))
