"""moto's packages the engine never serves, imported only if something asks for them.

moto's Step Functions interpreter imports ``moto.batch.utils`` (for its Batch task's job statuses), and
``moto.batch``'s ``__init__`` imports moto's whole Batch and EC2 models, in every process that imports
the engine (each ``idemflow run``, ``serve``, a test worker), for a service the engine does not serve.
Importing this module holds them back (:func:`defer`): the engine imports it before anything of moto's
interpreter. :func:`defer` puts such a package in ``sys.modules`` without running its ``__init__``: its
submodules import as usual (``moto.batch.utils`` is light), and the first time anything asks the package
itself for a name (moto's backend lookup asks ``moto.batch`` for ``batch_backends``) its ``__init__`` runs,
once, and answers. So nothing changes but when the cost is paid: never, unless Batch is used.

Not a change to moto's behaviour (the registry's changes are): no moto code is replaced, and the pinned
moto's own import of the package gives the same module object.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import types
from typing import Any

DEFERRED = ("moto.batch",)
"""The packages :func:`defer` holds back: none of them is a service the engine serves."""

_lock = threading.RLock()


class _DeferredPackage(types.ModuleType):
    """A package whose ``__init__`` runs when a name it does not have yet is asked of it."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):  # the import system's probes: not a reason to run
            raise AttributeError(name)
        with _lock:
            if self.__dict__.get("_deferred_ran"):
                raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
            self.__dict__["_deferred_ran"] = True
            spec = self.__spec__
            assert spec is not None and spec.loader is not None
            spec.loader.exec_module(self)
        return getattr(self, name)


def defer(names: tuple[str, ...] = DEFERRED) -> list[str]:
    """Hold back each package of ``names`` not imported yet; the ones held back."""
    held = []
    with _lock:
        for name in names:
            if name in sys.modules:
                continue
            spec = importlib.util.find_spec(name)
            if spec is None or spec.submodule_search_locations is None:
                continue
            module = _DeferredPackage(name)
            module.__spec__ = spec
            module.__loader__ = spec.loader
            module.__file__ = spec.origin
            module.__path__ = list(spec.submodule_search_locations)
            module.__package__ = name
            sys.modules[name] = module
            parent, _, child = name.rpartition(".")
            setattr(sys.modules[parent], child, module)  # as an import binds it on its parent package
            held.append(name)
    return held


defer()
