"""The engine's parts reach moto only through the engine state: the registry leaves it alone. For each, what moto does
without it and with it."""

from __future__ import annotations

import json
import uuid

import pytest

from idemflow.engine import registry, state
from idemflow.engine.core import in_process_clients as clients
from tests.unit.hooks.served import (
    Moto,
    run,
)

pytestmark = pytest.mark.unit


# -- attaching and detaching the engine's parts ------------------------------------------------------
def test_the_registry_neither_reads_nor_writes_the_engine_state(moto: Moto) -> None:
    # The engine alone attaches its parts (its start and stop): installing and removing changes keeps them.
    attached = state.current()
    assert (attached.lambda_runtime, attached.faults) == (moto.runtime, moto.faults)

    registry.apply(without=["parse-cache"])
    registry.remove()

    assert state.current() is attached
    assert clients._clients == {}  # the cached clients name backends about to be reset


def test_install_without_a_runtime_falls_back_to_moto(moto: Moto) -> None:
    # What Engine.stop() does: the hooks stay, and route nothing.
    state.update(lambda_runtime=None, faults=None)
    moto.faults.throttle_next("PutRecord")

    echoed = run(moto, "lambda", {"plain": "moto"})
    put = run(moto, "put", {"id": f"fallback-{uuid.uuid4()}"})

    assert json.loads(echoed["output"]) == {"plain": "moto"}
    assert put["status"] == "SUCCEEDED"
