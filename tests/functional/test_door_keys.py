"""A key of several fields (DoorKeyField, DoorKeyField2, DoorKeyField3) on the embedded engine: messages sent with
plain boto3 to the queue door are keyed by their fields' values as the JSON text of an array, once per key, and
a message missing a field falls back to its source's id, as a message without a key field does."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from idemflow.engine import Engine
from idemflow.engine.stack import resolve_stack
from idemflow.template import TemplateError
from tests.charge.side_effect import payment
from tests.functional.doors import deliveries, wait_for_deliveries

OVERRIDES = {
    "QueueFrontDoor": "true",
    "QueueVisibilityTimeout": "0",
    "InProgressMaxPolls": "30",
    "DoorKeyField": "customerId",
    "DoorKeyField2": "order.id",
}


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(parameter_overrides=OVERRIDES, wait_time_scale=0.01) as running:
        yield running


def send(engine: Engine, body: dict[str, Any]) -> str:
    assert engine.stack is not None
    answer = engine.http_client("sqs").send_message(
        QueueUrl=engine.stack.outputs["RequestQueueUrl"], MessageBody=json.dumps(body)
    )
    return str(answer["MessageId"])


def test_the_key_is_the_fields_values_as_a_json_array(engine: Engine) -> None:
    before = len(deliveries(engine))
    customer, order = f"cust-{uuid.uuid4().hex[:8]}", f"o-{uuid.uuid4().hex[:8]}"
    send(engine, {**payment(customer=customer), "order": {"id": order}})

    (delivery,) = wait_for_deliveries(engine, 1, before)

    key = json.dumps([customer, order], separators=(",", ":"))
    assert (delivery["outcome"], delivery["idempotencyKey"], delivery["keyFrom"]) == ("COMPLETED", key, "fields")
    assert engine.workflow.side_effect_runs(key) == 1


def test_one_pair_twice_runs_once_and_another_order_of_the_same_customer_runs_again(engine: Engine) -> None:
    before = len(deliveries(engine))
    customer = f"cust-{uuid.uuid4().hex[:8]}"
    first, second = f"o-{uuid.uuid4().hex[:8]}", f"o-{uuid.uuid4().hex[:8]}"
    for order in (first, first, second):
        send(engine, {**payment(customer=customer), "order": {"id": order}})

    found = wait_for_deliveries(engine, 3, before)

    keys = [json.dumps([customer, order], separators=(",", ":")) for order in (first, second)]
    assert sorted(d["idempotencyKey"] for d in found) == sorted([keys[0], keys[0], keys[1]])
    assert sorted(d["replayed"] for d in found) == [False, False, True]
    assert [engine.workflow.side_effect_runs(key) for key in keys] == [1, 1]


def test_a_message_missing_a_field_is_keyed_by_its_message_id(engine: Engine) -> None:
    before = len(deliveries(engine))
    message_id = send(engine, payment(customer=f"cust-{uuid.uuid4().hex[:8]}"))  # no order.id

    (delivery,) = wait_for_deliveries(engine, 1, before)

    assert (delivery["idempotencyKey"], delivery["keyFrom"]) == (f"sqs:{message_id}", "sourceId")


def test_a_third_field_without_a_second_is_refused_before_anything_is_deployed() -> None:
    with pytest.raises(TemplateError, match="DoorKeyField3 needs DoorKeyField2"):
        resolve_stack(parameter_overrides={"QueueFrontDoor": "true", "DoorKeyField3": "order.line"})
