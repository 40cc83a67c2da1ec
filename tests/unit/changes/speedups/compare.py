"""How the speedups' tests compare: the same requests on a fresh table with every speedup left out
(``registry.apply(without=registry.names("speedup"))``), then with them; in-process moto (``mock_aws``), one
small table, no server. Its fixtures are in this folder's conftest.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from idemflow.engine import registry
from tests import sessions

REGION = "us-east-1"
TABLE = "speedups"


def without_speedups() -> None:
    registry.apply(without=registry.names("speedup"))


def with_speedups() -> None:
    without_speedups()  # empty caches: each test sees its own first parse
    registry.apply()


def outcome(call: Callable[[], Any]) -> Any:
    """What a request returns, or its error code and message: what both code paths must agree on."""
    try:
        response = call()
    except ClientError as exc:
        return ("error", exc.response["Error"]["Code"], exc.response["Error"]["Message"])
    except Exception as exc:  # moto lets some bad requests escape as Python errors: so must the speedups
        return ("raised", type(exc).__name__, str(exc))
    response.pop("ResponseMetadata", None)
    return ("ok", response)


def counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[Any]:
    """Record each call of owner.name (left working)."""
    calls: list[Any] = []
    original = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    return calls


def small_table() -> Any:
    """A client of in-process moto's DynamoDB (inside ``mock_aws``) with the one table the tests use."""
    client = sessions.client("dynamodb", region_name=REGION)
    client.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return client


def both_ways(requests: Callable[[Any], list[Any]]) -> tuple[list[Any], list[Any]]:
    """The outcomes of the same requests on a fresh table, first with moto's code, then with the speedups."""
    results = []
    for install in (without_speedups, with_speedups):
        install()
        with mock_aws():
            results.append(requests(small_table()))
    return results[0], results[1]
