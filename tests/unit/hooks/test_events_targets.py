"""``events-targets``: a rule's state machine targets go to the engine's receiver. For each, what moto does without it
and with it."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from idemflow.engine import state
from tests.unit.hooks.served import (
    Moto,
    leave_out,
)

pytestmark = pytest.mark.unit


# -- events-targets ------------------------------------------------------------------------------------------


def put_order_event(moto: Moto, bus: str, target_arn: str) -> dict[str, Any]:
    events = moto.client("events")
    events.create_event_bus(Name=bus)
    events.put_rule(Name=f"{bus}-rule", EventBusName=bus, EventPattern=json.dumps({"source": ["shop"]}))
    events.put_targets(Rule=f"{bus}-rule", EventBusName=bus, Targets=[{"Id": "t", "Arn": target_arn}])
    entry = {"EventBusName": bus, "Source": "shop", "DetailType": "OrderPlaced", "Detail": json.dumps({"id": 1})}
    answer: dict[str, Any] = events.put_events(Entries=[entry])
    return answer


def test_a_state_machine_target_is_handed_to_the_attached_receiver(moto: Moto) -> None:
    received: list[tuple[str, Any]] = []
    state.update(event_receiver=lambda rule, event: received.append((rule, event)))
    try:
        answer = put_order_event(moto, f"bus-{uuid.uuid4().hex[:8]}", moto.machines["lambda"])
    finally:
        state.update(event_receiver=None)

    assert answer["FailedEntryCount"] == 0
    ((rule, event),) = received
    assert rule.endswith("-rule") and event["detail"] == {"id": 1} and event["source"] == "shop"


def test_without_the_hook_a_state_machine_target_fails_put_events(moto: Moto) -> None:
    leave_out("events-targets")

    with pytest.raises(ClientError) as refused:
        put_order_event(moto, f"bus-{uuid.uuid4().hex[:8]}", moto.machines["lambda"])
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500  # moto's NotImplementedError
