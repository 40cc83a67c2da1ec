"""cfn-lint on a template's text, as the suite runs it: imported when a test lints, not when pytest collects.

Every pytest-xdist worker imports every test module while collecting; cfn-lint's import (sympy with it) cost
each worker more CPU than collecting the tests that use it.

A clean result is kept in pytest's cache under everything it depends on (cfn-lint's version, which carries its
rules and resource specifications, the region and the template's text): the same template is not linted again
until one of them changes. Findings are never kept: a template with findings is linted on every run.
"""

from __future__ import annotations

import hashlib
import json
from importlib.metadata import version
from typing import Any, Protocol


class Cache(Protocol):
    """What of pytest's cache (``pytestconfig.cache``) is used."""

    def get(self, key: str, default: Any) -> Any: ...

    def set(self, key: str, value: object) -> None: ...


def cfn_lint(text: str, region: str, cache: Cache | None = None) -> list[str]:
    """What cfn-lint finds in ``text`` for ``region``, one line per match (none: the template is clean)."""
    key = None
    if cache is not None:
        inputs = json.dumps([version("cfn-lint"), region, text])
        key = f"cfn-lint/{hashlib.sha256(inputs.encode()).hexdigest()[:32]}"
        if cache.get(key, None) == "clean":
            return []
    from cfnlint.api import ManualArgs, lint

    found = [str(match) for match in lint(text, config=ManualArgs(regions=[region]))]
    if key is not None and cache is not None and not found:
        cache.set(key, "clean")
    return found
