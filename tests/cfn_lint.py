"""cfn-lint on a template's text, as the suite runs it: imported when a test lints, not when pytest collects.

Every pytest-xdist worker imports every test module while collecting; cfn-lint's import (sympy with it) cost
each worker more CPU than collecting the tests that use it."""

from __future__ import annotations


def cfn_lint(text: str, region: str) -> list[str]:
    """What cfn-lint finds in ``text`` for ``region``, one line per match (none: the template is clean)."""
    from cfnlint.api import ManualArgs, lint

    return [str(match) for match in lint(text, config=ManualArgs(regions=[region]))]
