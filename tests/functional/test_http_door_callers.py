"""The HTTP door with API keys (HttpApiKeyRequired=true): keys belong to a caller. A real HTTP client against
the engine's endpoint; API keys created through API Gateway's API, as a user creates them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from idemflow.engine import Engine

from .test_http_door import DOOR, post, scoped

pytestmark = pytest.mark.functional


@pytest.fixture
def key() -> str:
    return f"order-{uuid.uuid4()}"


@pytest.fixture(scope="module")
def keyed() -> Iterator[Engine]:
    overrides = {**DOOR, "HttpApiKeyRequired": "true"}
    with Engine(parameter_overrides=overrides, wait_time_scale=0, port=0) as running:
        yield running


def test_two_callers_with_the_same_key_each_get_their_own_side_effect_and_result(keyed: Engine, key: str) -> None:
    ((_, door),) = keyed.endpoints()
    apigateway = keyed.http_client("apigateway")
    alice, bob = (
        apigateway.create_api_key(name=name, value=f"{name}-key-{uuid.uuid4().hex}", enabled=True)["value"]
        for name in ("alice", "bob")
    )

    # "Require an API key on a method": a request without a valid key is refused (403) before anything runs.
    refused, _, _ = post(door, key)
    first_alice = post(door, key, headers={"x-api-key": alice})
    first_bob = post(door, key, headers={"x-api-key": bob})
    again_alice = post(door, key, headers={"x-api-key": alice})

    assert refused == 403
    assert first_alice[0] == first_bob[0] == 200
    assert first_alice[2]["result"] != first_bob[2]["result"]  # each caller's own side effect
    assert again_alice[1]["Idempotent-Replayed"] == "true" and again_alice[2]["result"] == first_alice[2]["result"]
    # the workflow saw two keys, each scoped to its caller's API key id: two records, two side effects
    ids = {k["value"]: k["id"] for k in apigateway.get_api_keys(includeValues=True)["items"]}
    # (both signed by the engine's own user: its scope follows the API key's)
    keys = [scoped(keyed, "").replace("iam:", f"apiKey:{ids[k]}|iam:", 1) + key for k in (alice, bob)]
    assert [keyed.workflow.side_effect_runs(s) for s in keys] == [1, 1]
    assert all(keyed.workflow.record(s) is not None for s in keys) and keyed.workflow.record(key) is None
