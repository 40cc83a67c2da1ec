"""The interleaving checker's exceptions (``make explore``)."""

from __future__ import annotations


class TargetsError(ValueError):
    """The project declares no template to explore, or one that cannot be read; the message says which."""


class ReductionAssumptionError(RuntimeError):
    """The exhaustive strategy's reduction rests on an assumption the definition broke (the message says
    which): its schedules would not stand for every order, so the run stops."""


class ExecutionStoppedError(RuntimeError):
    """Raised in a stopped execution's thread instead of sending its request."""


class SchedulerHangError(RuntimeError):
    """An execution neither reached a request nor ended in time: the schedule cannot go on."""
