"""A failing state builds the repr of its program subtree only when it is logged (``lazy-failure-logs``).

A speedup: moto's EvalComponent logs ``repr()`` of a failing state's whole subtree, computed before the
log level is checked. Every duplicate's conditional put fails by design, so the repr is only built when
moto's parser logger would actually emit it (the engine sets it to CRITICAL: expected failures are not
errors).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch


def _only_when_logged(log: Callable[..., None], logger: logging.Logger) -> Callable[..., None]:
    @functools.wraps(log)
    def logged(self: Any, *args: Any, **kwargs: Any) -> None:
        if logger.isEnabledFor(logging.ERROR):
            log(self, *args, **kwargs)

    return logged


def install_lazy_failure_logs(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component import eval_component

    component = eval_component.EvalComponent
    for name in ("_log_failure_event_exception", "_log_exception"):
        patch.set(component, name, _only_when_logged(getattr(component, name), eval_component.LOG))
