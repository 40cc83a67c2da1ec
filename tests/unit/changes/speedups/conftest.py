"""The speedups' fixtures: every speedup installed (``fast``) or none (``moto_only``), and a small table on
in-process moto (``ddb``, in place of the changes' bare client)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from tests.unit.changes.speedups.compare import small_table, with_speedups, without_speedups


@pytest.fixture
def fast() -> None:
    with_speedups()


@pytest.fixture
def moto_only() -> None:
    without_speedups()


@pytest.fixture
def ddb() -> Iterator[Any]:
    with mock_aws():
        yield small_table()
