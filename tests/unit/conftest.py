"""Fixtures shared by the unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from idemflow.engine import registry


@pytest.fixture
def restore_registry() -> Iterator[None]:
    """Puts the registry's changes back as the test found them (none, or those it had left out)."""
    left_out = registry.left_out()
    yield
    if left_out is None:
        registry.remove()
    else:
        registry.apply(without=left_out, hooks_too=True)
