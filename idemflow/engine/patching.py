"""How the engine changes another library's objects and puts them back: :class:`Patch` and its undo log.

A leaf: it imports nothing of the engine, so each change module can name :class:`Patch` without importing the
registry that lists them. Every change goes through a :class:`Patch`, which records what the owner held, so
that :func:`undo_all` restores it (newest first) and :func:`original` answers what was there before any
change. The log is one per process, as moto's classes are, and names the change behind each step
(:func:`log`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable
from typing import Any, Final

__all__ = ["Patch", "lock", "log", "original", "undo_all"]

_MISSING: Final = object()
lock: Final = threading.RLock()
"""Held by whoever installs or undoes changes, and by :func:`original`."""
# Undo steps with the change that made each, oldest first: undone newest first.
_undo: list[tuple[str, Callable[[], None]]] = []
# (owner, attribute, what the owner itself held before any change: a value or _MISSING), first change only.
_originals: list[tuple[Any, str, Any]] = []


class Patch:
    """How an installer changes an object: every change goes through here, so that it can be undone."""

    def __init__(self, change: str):
        self.change = change

    def set(self, owner: Any, attribute: str, value: Any) -> None:
        """``setattr(owner, attribute, value)``, undone by restoring what ``owner`` itself held (an
        attribute it only inherited is deleted again)."""
        held = owner.__dict__.get(attribute, _MISSING)
        if not any(o is owner and a == attribute for o, a, _ in _originals):
            _originals.append((owner, attribute, held))

        def undo() -> None:
            if held is _MISSING:
                if attribute in owner.__dict__:
                    delattr(owner, attribute)
            else:
                setattr(owner, attribute, held)

        _undo.append((self.change, undo))
        setattr(owner, attribute, value)

    def serialize(self, owner: Any, methods: Iterable[str], held: Any) -> None:
        """Each of ``owner``'s own ``methods`` run holding ``held`` (a re-entrant lock, when a method may call
        another): one thread at a time in what moto wrote for one. A name ``owner`` does not define is
        skipped (a method another moto version may lack)."""
        for name in methods:
            method = owner.__dict__.get(name)
            if not callable(method):
                continue

            def locked(*args: Any, _method: Callable[..., Any] = method, **kwargs: Any) -> Any:
                with held:
                    return _method(*args, **kwargs)

            self.set(owner, name, functools.wraps(method)(locked))

    def append(self, target: list[Any], item: Any) -> None:
        """Add ``item`` to a list (once), undone by taking it out again."""
        if item in target:
            return
        target.append(item)
        _undo.append((self.change, lambda: target.remove(item) if item in target else None))

    def on_undo(self, forget: Callable[[], None]) -> None:
        """Call ``forget`` when the change is undone (caches built for it)."""
        _undo.append((self.change, forget))


def undo_all() -> None:
    """Undo every change, newest first, and forget what the owners held."""
    with lock:
        while _undo:
            _undo.pop()[1]()
        _originals.clear()


def log() -> list[str]:
    """The change behind each step of the undo log, oldest first: one name per object changed, list item
    added or cache to forget."""
    with lock:
        return [change for change, _ in _undo]


def original(owner: Any, attribute: str) -> Any:
    """What ``owner`` held as ``attribute`` before any change (from its own ``__dict__``, or what it
    inherited), while changes are installed: for a test that puts one of the changed functions back."""
    with lock:
        for o, a, held in _originals:
            if o is owner and a == attribute:
                if held is not _MISSING:
                    return held
                for base in getattr(owner, "__mro__", ())[1:]:
                    if attribute in base.__dict__:
                        return base.__dict__[attribute]
                raise KeyError(f"{owner!r} held no {attribute} before it was changed")
    raise KeyError(f"{attribute} of {owner!r} is not changed by any installed change")
