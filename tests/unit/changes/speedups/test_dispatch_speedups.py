"""Dispatch speedups (``dispatch_speedups.py``): ``action-lookup``, ``one-model-loader``, ``regions-data-loader``,
``random-strings``
(``module-list-cache`` needs a server: ``hooks/test_server_speedups.py``). For each, the work moto 5.2.5 repeats
without it, and the same answers with it (success, stored item, error code and message; the models read; the
regions), compared one by one."""

from __future__ import annotations

import inspect
import os
import random
from typing import Any

import botocore
import botocore.loaders
import botocore.session
import pytest
from botocore.exceptions import ClientError
from moto.moto_api._internal.moto_random import MotoRandom

from idemflow.engine.core import dispatch_speedups, loaders
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
    from moto.core import loaders as moto_loaders
    from moto.core import utils

    listings = service_folder_listings(monkeypatch)
    models = {name: utils._load_service_model(name, "service-2") for name in MODELS}

    assert len(listings) <= 1  # none when the process's loader has listed them already
    assert utils.create_loader() is utils.create_loader()
    for name, model in models.items():  # moto's own loader's reading, its extras applied
        assert model == moto_loaders.create_loader().load_service_model(name, "service-2")


# ---------------------------------------------------------------------------------------------
# regions-data-loader
# ---------------------------------------------------------------------------------------------
REGIONS_OF = "kinesis"  # a service few tests make a backend of: moto's lookup is the process's first


def model_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The path of each JSON file a botocore loader reads from now on."""
    reads: list[str] = []
    load_file = botocore.loaders.JSONFileLoader.load_file

    def reading(self: Any, file_path: str) -> Any:
        reads.append(file_path)
        return load_file(self, file_path)

    monkeypatch.setattr(botocore.loaders.JSONFileLoader, "load_file", reading)
    return reads


def regions_as_moto_looks_them_up(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str]]:
    """The engine's session reads the service's model (as its clients do); then moto looks up the service's
    regions for a new backend, in the session it keeps for that: the regions, and the files read meanwhile."""
    from moto.core.base_backend import AccountSpecificBackend

    # Each new session makes a loader of its own, as outside this suite (the root conftest shares one).
    monkeypatch.setattr(botocore.session, "create_loader", botocore.loaders.create_loader)
    loaders.sharing_data(botocore.session.Session()).get_service_model(REGIONS_OF)
    get_session = AccountSpecificBackend.get_session
    if hasattr(get_session.__func__, "cache_clear"):  # moto's own: the session it keeps, made anew
        get_session.__func__.cache_clear()
    reads = model_reads(monkeypatch)
    return AccountSpecificBackend.get_session().get_available_regions(REGIONS_OF), reads


def test_unpatched_moto_5_2_5_reads_the_model_again_for_a_backends_regions(
    moto_only: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    regions, reads = regions_as_moto_looks_them_up(monkeypatch)

    assert regions and [r for r in reads if f"/{REGIONS_OF}/" in r and "service-2" in r]


def test_patched_looks_them_up_in_what_the_engines_session_read(fast: None, monkeypatch: pytest.MonkeyPatch) -> None:
    regions, reads = regions_as_moto_looks_them_up(monkeypatch)

    assert reads == []
    assert regions == botocore.session.Session().get_available_regions(REGIONS_OF)  # a session of its own's answer


# ---------------------------------------------------------------------------------------------
# random-strings
# ---------------------------------------------------------------------------------------------
def test_unpatched_moto_5_2_5_draws_a_request_id_a_choice_a_character(
    moto_only: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    choices = counting(monkeypatch, random.Random, "choice")

    response = ddb.get_item(TableName=TABLE, Key={"id": {"S": "x"}})

    assert len(response["ResponseMetadata"]["RequestId"]) == 52
    assert len(choices) >= 52


def test_patched_draws_no_choice_for_a_request_id(fast: None, ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    choices = counting(monkeypatch, random.Random, "choice")

    response = ddb.get_item(TableName=TABLE, Key={"id": {"S": "x"}})

    assert len(response["ResponseMetadata"]["RequestId"]) == 52
    assert choices == []


@pytest.mark.parametrize(
    ("length", "include_digits", "lower_case"),
    [(52, True, False), (20, True, False), (8, False, True), (1, 0, False), (0, True, True), (300, None, False)],
)
@pytest.mark.parametrize("seed", [0, 7, 20261129])
def test_the_same_strings_from_the_same_seed_and_the_same_state_after(
    moto_only: None, length: int, include_digits: Any, lower_case: bool, seed: int
) -> None:
    ours, moto_own = MotoRandom(), MotoRandom()
    ours.seed(seed)
    moto_own.seed(seed)

    for _ in range(20):
        drawn = dispatch_speedups.random_string(ours, length, include_digits, lower_case)
        assert drawn == moto_own.get_random_string(length, include_digits, lower_case)  # moto's own: left out
    assert ours.getstate() == moto_own.getstate()
