"""CPython's cyclic garbage collector in the console script's process.

``idemflow run`` imports moto, botocore and the engine (hundreds of thousands of objects that live as long
as the process), then starts the engine. With the collector's defaults, every 700 allocations start a
collection, and each full one walks that whole heap again (CHANGELOG.md, "Figures behind the code", has
what it cost).

So the console script holds the collector from its start (:func:`hold`) until what it sets up has been
built (:func:`release`: the engine started, or the endpoint's clients made), then freezes what exists at
that point (``gc.freeze``: never garbage, never walked again) and collects the rest with thresholds ten
times the defaults' first. :func:`release` changes nothing in a process that did not :func:`hold`: a test
that calls ``idemflow.cli.main`` keeps its collector as it was. A command that sets up neither (``init``,
``diagram``, ``--help``, a usage error) ends with the collector still held: it is a short process.
"""

from __future__ import annotations

import gc
from typing import Final

THRESHOLDS: Final = (7000, 20, 20)
"""After :func:`release`: a young collection every 7000 allocations (the default: 700), the older
generations half as often as the defaults' 10 and 10."""

_held = False


def hold() -> None:
    """No collection until :func:`release` (the console script's first step)."""
    global _held
    if gc.isenabled() and not _held:
        gc.disable()
        _held = True


def release() -> None:
    """Freeze every object made so far and collect again, less often; a no-op unless :func:`hold` ran."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.set_threshold(*THRESHOLDS)
        gc.enable()
