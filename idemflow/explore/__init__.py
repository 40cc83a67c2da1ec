"""The interleaving checker (``make explore``): every order of requests of a key's executions, with faults."""

from idemflow.explore.checker import ALL_EVENTS, Checker, Report, Settings, Violation

__all__ = ["ALL_EVENTS", "Checker", "Report", "Settings", "Violation"]
