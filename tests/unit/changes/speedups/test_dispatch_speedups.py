"""Dispatch speedups (``dispatch_speedups.py``): ``action-lookup`` (``module-list-cache`` needs a server:
``hooks/test_server_speedups.py``). For each, the work moto 5.2.5 repeats without it, and the same answers with it
(success, stored item, error code and message), compared request by request."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.unit.changes.speedups.compare import (
    TABLE,
    counting,
)

pytestmark = [pytest.mark.unit, pytest.mark.usefixtures("restore_registry")]


# ---------------------------------------------------------------------------------------------
# action-lookup
# ---------------------------------------------------------------------------------------------
def test_unpatched_moto_5_2_5_lists_the_handler_methods_per_request(
    moto_only: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    listings = counting(monkeypatch, inspect, "getmembers")

    for _ in range(5):
        ddb.get_item(TableName=TABLE, Key={"id": {"S": "x"}})

    assert len(listings) >= 5


def test_patched_lists_the_handler_methods_once(fast: None, ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ddb.get_item(TableName=TABLE, Key={"id": {"S": "x"}})
    listings = counting(monkeypatch, inspect, "getmembers")

    for _ in range(5):
        ddb.get_item(TableName=TABLE, Key={"id": {"S": "x"}})
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        ddb.get_item(TableName="no-such-table", Key={"id": {"S": "x"}})  # still moto's own answer

    assert listings == []
