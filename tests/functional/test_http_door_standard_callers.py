"""The Standard workflow's HTTP door with API keys (HttpApiKeyRequired=true): a request's status answers only
the caller who started it. Its own module: one engine per process, and this one requires keys."""

from __future__ import annotations

import json
import urllib.parse
import uuid

import pytest

from idemflow.engine import Engine
from idemflow.engine.services.apigateway.service import ApiGateway

from .test_http_door import exchange
from .test_http_door_standard import DOOR, get, outcome

pytestmark = pytest.mark.functional


def test_a_caller_reads_only_its_own_requests() -> None:
    with Engine(parameter_overrides={**DOOR, "HttpApiKeyRequired": "true"}, wait_time_scale=0) as keyed:
        urls = dict(keyed.service(ApiGateway).urls())
        apigateway = keyed.http_client("apigateway")
        alice, bob = (
            apigateway.create_api_key(name=name, value=f"{name}-key-{uuid.uuid4().hex}", enabled=True)["value"]
            for name in ("alice", "bob")
        )
        status, headers, _ = exchange(urls["POST"], "order-1", headers={"x-api-key": alice})
        assert status == 202
        location = urllib.parse.urljoin(urls["POST"], headers["Location"])

        assert outcome(location, {"x-api-key": alice})[0] == 200
        # Bob learnt the id: he gets what an unknown id gets. Without a key, API Gateway refuses (403).
        status, _, text = get(location, {"x-api-key": bob})
        assert status == 404 and json.loads(text)["type"].endswith("#http-request-not-found")
        assert get(location)[0] == 403
