"""Dispatch speedups (``dispatch_speedups.py``): ``action-lookup``, ``one-model-loader`` (``module-list-cache``
needs a server: ``hooks/test_server_speedups.py``). For each, the work moto 5.2.5 repeats without it, and the
same answers with it (success, stored item, error code and message; the models read), compared one by one."""

from __future__ import annotations

import inspect
import os
from typing import Any

import botocore
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


# ---------------------------------------------------------------------------------------------
# one-model-loader
# ---------------------------------------------------------------------------------------------
MODELS = ("dynamodb", "stepfunctions", "lambda")


def service_folder_listings(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Each listing of botocore's data folder (a loader's first look for a service model lists it)."""
    data = os.path.join(os.path.dirname(botocore.__file__), "data")
    listings: list[Any] = []
    listdir = os.listdir

    def counting_listdir(path: Any = ".") -> list[str]:
        if os.path.realpath(path) == os.path.realpath(data):
            listings.append(path)
        return listdir(path)

    monkeypatch.setattr(os, "listdir", counting_listdir)
    return listings


def test_unpatched_moto_5_2_5_lists_the_service_folders_per_model(
    moto_only: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.core import utils

    listings = service_folder_listings(monkeypatch)
    for name in MODELS:
        utils._load_service_model(name, "service-2")

    assert len(listings) == len(MODELS)


def test_patched_lists_them_once_and_reads_the_models_moto_reads(fast: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.core import loaders, utils

    listings = service_folder_listings(monkeypatch)
    models = {name: utils._load_service_model(name, "service-2") for name in MODELS}

    assert len(listings) <= 1  # none when the process's loader has listed them already
    assert utils.create_loader() is utils.create_loader()
    for name, model in models.items():  # moto's own loader's reading, its extras applied
        assert model == loaders.create_loader().load_service_model(name, "service-2")
