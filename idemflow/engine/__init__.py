"""The embedded engine: the real template deployed into moto, behind one local endpoint.

``from idemflow.engine import Engine``. The names are loaded on first use: the Lambda runtime's worker
processes and the CLI's remote commands import modules of this package without loading moto.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from idemflow.engine.engine import Engine, ExecutionOutcome
    from idemflow.engine.errors import EngineError

__all__ = ["Engine", "EngineError", "ExecutionOutcome"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from idemflow.engine.core import moto_version

        # Before moto is imported: another moto version may not even import the engine's modules, and the
        # refusal says in one line what to install instead of a traceback from moto's internals.
        moto_version.check_moto()
        from idemflow.engine import engine

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
