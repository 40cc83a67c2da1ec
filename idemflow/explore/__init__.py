"""The interleaving checker (``make explore``): every order of requests of a key's executions, with faults.

:mod:`~idemflow.explore.checker` explores the schedules of one deployment, :mod:`~idemflow.explore.tiers`
says which runs make a tier, :mod:`~idemflow.explore.targets` reads the templates the project declares,
:mod:`~idemflow.explore.errors` holds its exceptions.
"""

from idemflow.explore.checker import ALL_EVENTS, Checker, Report, Settings, Violation
from idemflow.explore.errors import ExecutionStoppedError, ReductionAssumptionError, SchedulerHangError, TargetsError
from idemflow.explore.targets import Target, load_targets
from idemflow.explore.tiers import BASE_PARAMETERS, FULL, QUICK, QUICK_SECOND, Run, describe, explore

__all__ = [
    "ALL_EVENTS",
    "BASE_PARAMETERS",
    "FULL",
    "QUICK",
    "QUICK_SECOND",
    "Checker",
    "ExecutionStoppedError",
    "ReductionAssumptionError",
    "Report",
    "Run",
    "SchedulerHangError",
    "Settings",
    "Target",
    "TargetsError",
    "Violation",
    "describe",
    "explore",
    "load_targets",
]
