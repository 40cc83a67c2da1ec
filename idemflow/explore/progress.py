"""Progress of a long run, and the process's memory: what ``make explore`` prints while a tier runs.

A full tier runs thousands of schedules for minutes: :class:`Progress` prints a line every
:data:`EVERY_SCHEDULES` schedules or :data:`EVERY_SECONDS` seconds, whichever comes first, with the
schedules done (of how many, when the run knows), the time so far, the rate and the resident memory. A
quick run (``--quick``: a few hundred schedules, seconds each) prints none.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

EVERY_SCHEDULES = 500
EVERY_SECONDS = 30.0
_STATUS = Path("/proc/self/status")


def memory_mb(field: str = "VmRSS") -> float | None:
    """The process's resident memory now (``VmRSS``) or at its peak so far (``VmHWM``), in MB (None where
    /proc is missing: the peak then comes from getrusage)."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    if field == "VmHWM":  # ru_maxrss: kB on Linux, bytes on macOS
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024
    return None


def memory_text() -> str:
    rss, peak = memory_mb("VmRSS"), memory_mb("VmHWM")
    now = "" if rss is None else f"RSS {rss:.0f} MB, "
    return now + ("peak unknown" if peak is None else f"peak {peak:.0f} MB")


class Progress:
    """Called with the number of schedules done after each schedule; prints a line when one is due."""

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        every: int = EVERY_SCHEDULES,
        seconds: float = EVERY_SECONDS,
        out: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        memory: Callable[[], float | None] = memory_mb,
    ):
        self.label, self.total = label, total
        self.every, self.seconds = every, seconds
        self.out = out
        self.clock, self.memory = clock, memory
        self.started = self.last = clock()
        self.last_done = 0
        self.lines = 0

    def __call__(self, done: int) -> None:
        now = self.clock()
        if done - self.last_done < self.every and now - self.last < self.seconds:
            return
        self.last, self.last_done = now, done
        elapsed = now - self.started
        of = "" if self.total is None else f"/{self.total}"
        rate = f"{done / elapsed:.1f}/s" if elapsed > 0 else "-"
        rss = self.memory()
        memory = "" if rss is None else f", RSS {rss:.0f} MB"
        out = sys.stdout if self.out is None else self.out
        print(f"  {self.label}: {done}{of} schedules, {elapsed:.0f} s, {rate}{memory}", file=out, flush=True)
        self.lines += 1
