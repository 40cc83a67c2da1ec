"""The HTTP door deployed with HttpAuthorization=NONE, chosen explicitly: anyone with the URL may call it, unsigned,
and a key is scoped to no caller (docs/doors.md, "HTTP")."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from idemflow.engine import Engine
from idemflow.engine.services.apigateway.service import ApiGateway

from .test_http_door import DOOR, exchange

pytestmark = pytest.mark.functional


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(parameter_overrides={**DOOR, "HttpAuthorization": "NONE"}, wait_time_scale=0) as running:
        yield running


def test_an_unsigned_post_runs_with_its_key_unscoped(engine: Engine) -> None:
    ((_, door),) = engine.service(ApiGateway).urls()
    key = f"order-{uuid.uuid4()}"
    status, _, text = exchange(door, key, signed=False)

    assert status == 200 and json.loads(text)["idempotencyKey"] == key
    assert engine.workflow.side_effect_runs(key) == 1


def test_a_key_of_255_characters_is_the_workflows_key_whole(engine: Engine) -> None:
    ((_, door),) = engine.service(ApiGateway).urls()
    key = uuid.uuid4().hex + "k" * (255 - 32)
    status, _, text = exchange(door, key, signed=False)

    assert status == 200 and json.loads(text)["idempotencyKey"] == key
