"""The one owner of the engine's background work.

A service that runs a loop (a queue's poller, say) starts it here, never as a bare thread: the engine
stops and joins every loop when it stops, and an error raised in a loop is re-raised to the caller of
:meth:`Background.check` and of :meth:`Background.stop` (the engine's ``stop``), so nothing fails unseen
and no thread outlives its engine.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from idemflow.engine.errors import BackgroundError


@dataclass
class _Loop:
    name: str
    thread: threading.Thread | None = None
    error: BaseException | None = None

    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()


class Background:
    """Loops started by the engine's services: ``start(name, loop)`` runs ``loop(stopping)`` on a thread
    of its own, where ``stopping`` is an event the loop waits on between rounds (``stopping.wait(t)``
    instead of ``time.sleep(t)``) and returns once it is set."""

    THREAD_PREFIX = "idemflow-loop-"

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self._loops: list[_Loop] = []
        self._lock = threading.Lock()

    def start(self, name: str, loop: Callable[[threading.Event], None]) -> None:
        with self._lock:
            if self.stopping.is_set():
                raise BackgroundError(f"cannot start {name}: the engine is stopping")
            entry = _Loop(name)
            entry.thread = threading.Thread(
                target=self._run, args=(entry, loop), name=f"{self.THREAD_PREFIX}{name}", daemon=True
            )
            self._loops.append(entry)
        entry.thread.start()

    def _run(self, entry: _Loop, loop: Callable[[threading.Event], None]) -> None:
        try:
            loop(self.stopping)
        except BaseException as exc:  # surfaced by check() and stop()
            entry.error = exc

    @property
    def names(self) -> list[str]:
        """The loops still running."""
        with self._lock:
            return [loop.name for loop in self._loops if loop.alive()]

    def check(self) -> None:
        """Raise :class:`BackgroundError` for the first loop that failed."""
        with self._lock:
            failed = next((loop for loop in self._loops if loop.error is not None), None)
        if failed is not None:
            raise BackgroundError(f"background loop {failed.name} failed: {failed.error!r}") from failed.error

    def stop(self, timeout: float = 10.0) -> None:
        """Ask every loop to stop, join them, and raise what any of them raised (or that one did not stop)."""
        self.stopping.set()
        with self._lock:
            loops = list(self._loops)
        stuck = []
        for loop in loops:
            if loop.thread is not None:
                loop.thread.join(timeout)
            if loop.alive():
                stuck.append(loop.name)
        try:
            self.check()
        finally:
            with self._lock:  # reported once: a second stop has nothing left to report
                self._loops = [loop for loop in self._loops if loop.alive()]
        if stuck:
            raise BackgroundError(f"background loop(s) {', '.join(stuck)} did not stop within {timeout:g} s")
