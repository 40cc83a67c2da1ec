"""The interleaving checker (``make explore``): every order of requests of a key's executions, with faults.

:mod:`~idemflow.explore.checker` explores the schedules of one deployment, :mod:`~idemflow.explore.tiers`
says which runs make a tier, :mod:`~idemflow.explore.targets` reads the templates the project declares.
"""

from idemflow.explore.checker import ALL_EVENTS, Checker, ReductionAssumptionError, Report, Settings, Violation
from idemflow.explore.targets import Target, TargetsError, load_targets
from idemflow.explore.tiers import BASE_PARAMETERS, FULL, QUICK, QUICK_SECOND, Run, describe, explore

__all__ = [
    "ALL_EVENTS",
    "BASE_PARAMETERS",
    "FULL",
    "QUICK",
    "QUICK_SECOND",
    "Checker",
    "ReductionAssumptionError",
    "Report",
    "Run",
    "Settings",
    "Target",
    "TargetsError",
    "Violation",
    "describe",
    "explore",
    "load_targets",
]
