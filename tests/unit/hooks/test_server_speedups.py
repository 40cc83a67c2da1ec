"""Speedups of the interpreter and the server: ``jsonpath-cache``, ``module-list-cache``, ``lazy-failure-logs``. For
each, what moto does without it and with it."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable
from typing import Any

import jsonpath_ng.parser
import pytest

from idemflow.engine import registry
from tests.unit.hooks.served import (
    TABLE,
    Moto,
    leave_out,
    run,
    run_puts,
)

pytestmark = pytest.mark.unit


# -- jsonpath-cache (a speedup) -----------------------------------------------------------------------
@pytest.fixture
def jsonpath_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parsed: list[str] = []
    original = jsonpath_ng.parser.JsonPathParser.parse

    def counting(self: Any, string: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(string)
        return original(self, string, *args, **kwargs)

    monkeypatch.setattr(jsonpath_ng.parser.JsonPathParser, "parse", counting)
    return parsed


@pytest.mark.parametrize("module_name", ["json_path", "result_path"])
def test_jsonpath_is_parsed_once(module_name: str, jsonpath_parses: list[str]) -> None:
    module = _path_module(module_name)
    field = f"k{uuid.uuid4().hex}"  # a path no earlier test parsed
    expression = f"$.{field}.b"

    first = module.parse(expression)
    again = [module.parse(expression) for _ in range(3)]

    assert jsonpath_parses.count(expression) == 1
    assert all(same is first for same in again)
    assert [match.value for match in first.find({field: {"b": 1}})] == [1]


@pytest.mark.parametrize("module_name", ["json_path", "result_path"])
def test_a_parsed_jsonpath_outlives_the_change_for_the_next_install(
    module_name: str, jsonpath_parses: list[str]
) -> None:
    # Each engine installs the changes again when it starts: the next engine of the process parses nothing again.
    module = _path_module(module_name)
    expression = f"$.k{uuid.uuid4().hex}.b"
    first = module.parse(expression)

    leave_out("jsonpath-cache")
    assert module.parse(expression) is not first  # moto's own parse while it is left out
    registry.apply()
    again = module.parse(expression)

    assert again is first
    assert jsonpath_parses.count(expression) == 2  # the first, and the one while left out


@pytest.mark.parametrize("module_name", ["json_path", "result_path"])
def test_without_the_speedup_jsonpath_is_parsed_every_time(module_name: str, jsonpath_parses: list[str]) -> None:
    leave_out("jsonpath-cache")
    module = _path_module(module_name)
    expression = f"$.uncached_{uuid.uuid4().hex}"

    for _ in range(3):
        module.parse(expression)

    assert jsonpath_parses.count(expression) == 3


def test_executions_reuse_parsed_jsonpaths(moto: Moto, jsonpath_parses: list[str]) -> None:
    run_puts(moto, 1)
    before = len(jsonpath_parses)

    run_puts(moto, 3)

    assert len(jsonpath_parses) == before


def _path_module(name: str) -> Any:
    from moto.stepfunctions.parser.asl.component.common.path import result_path
    from moto.stepfunctions.parser.asl.utils import json_path

    return {"json_path": json_path, "result_path": result_path}[name]


# -- module-list-cache (a speedup): the dispatcher lists moto's package once ---------------------------
@pytest.fixture
def moto_dir_listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import moto as moto_package

    moto_dir = os.path.dirname(moto_package.__file__)
    listed: list[str] = []
    original: Callable[..., list[str]] = os.listdir

    def counting(path: Any = ".") -> list[str]:
        if os.fspath(path) == moto_dir:
            listed.append(os.fspath(path))
        return original(path)

    monkeypatch.setattr(os, "listdir", counting)
    return listed


def test_server_lists_its_modules_once(moto: Moto, moto_dir_listings: list[str]) -> None:
    ddb = moto.client("dynamodb")
    ddb.list_tables()
    before = len(moto_dir_listings)

    for _ in range(5):
        ddb.list_tables()

    assert before <= 1
    assert len(moto_dir_listings) == before


def test_without_the_speedup_the_server_lists_its_modules_per_request(moto: Moto, moto_dir_listings: list[str]) -> None:
    leave_out("module-list-cache")
    ddb = moto.client("dynamodb")

    for _ in range(5):
        ddb.list_tables()

    assert len(moto_dir_listings) >= 5


# -- lazy-failure-logs (a speedup): no repr nobody logs ----------------------------------------------
@pytest.fixture
def reprs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from moto.stepfunctions.parser.asl.component.component import Component

    built: list[str] = []
    original: Callable[[Any], str] = Component.__repr__

    def counting(self: Any) -> str:
        built.append(type(self).__name__)
        return original(self)

    monkeypatch.setattr(Component, "__repr__", counting)
    return built


def failing_put(moto: Moto, reprs: list[str]) -> None:
    """An execution whose state fails (a conditional put of an existing item); ``reprs`` counts only it."""
    item_id = f"logged-{uuid.uuid4()}"
    moto.client("dynamodb").put_item(TableName=TABLE, Item={"id": {"S": item_id}})
    reprs.clear()
    done = run(moto, "put", {"id": item_id})
    assert done.get("error") == "DynamoDB.ConditionalCheckFailedException", done


def test_failing_state_builds_no_repr_when_errors_are_not_logged(moto: Moto, reprs: list[str]) -> None:
    assert not logging.getLogger("moto.stepfunctions.parser").isEnabledFor(logging.ERROR)  # set by the fixture

    failing_put(moto, reprs)

    assert reprs == []


def test_without_the_speedup_a_failing_state_builds_reprs_for_nothing(moto: Moto, reprs: list[str]) -> None:
    leave_out("lazy-failure-logs")

    failing_put(moto, reprs)

    assert reprs, "moto no longer builds the repr of a failing state: the hook may be obsolete"


def test_failing_state_is_still_logged_when_errors_are_enabled(
    moto: Moto, reprs: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="moto.stepfunctions.parser"):
        failing_put(moto, reprs)

    assert any("ConditionalCheckFailedException" in r.getMessage() for r in caplog.records)
