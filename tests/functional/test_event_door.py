"""The event door (EventFrontDoor=true) on the embedded engine: events put with plain boto3 ``put_events`` that
match the template's rule start the intake state machine through the rule's input transformer, and reach
the workflow once per key; an event the intake cannot complete ends on the doors' dead-letter queue.

The transformations are the template's own (the rule's EventPattern and InputTransformer, the intake's
definition), applied by the engine's events service as EventBridge applies them (tests/functional/
test_events.py cites each page). This module deploys DoorKeyFallback=none: an event without a business key
is refused instead of keyed by its id.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from idemflow.contract import WorkflowError
from idemflow.engine import Engine
from idemflow.engine.services.events.service import Events
from tests.charge.side_effect import payment
from tests.functional.doors import attribute, dead_letters, deliveries, wait_for_deliveries
from tests.polling import wait_until

OVERRIDES = {"EventFrontDoor": "true", "DoorKeyFallback": "none", "InProgressMaxPolls": "0"}


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(parameter_overrides=OVERRIDES, wait_time_scale=0.01) as running:
        yield running


def put(engine: Engine, detail: Any, detail_type: str = "IdempotentRequest") -> str:
    """Put one event on the default bus, as a producer would; its id."""
    answer = engine.http_client("events").put_events(
        Entries=[{"Source": "shop.orders", "DetailType": detail_type, "Detail": json.dumps(detail)}]
    )
    assert answer["FailedEntryCount"] == 0, answer
    return str(answer["Entries"][0]["EventId"])


def test_an_event_runs_the_workflow_once_with_the_key_in_its_detail(engine: Engine) -> None:
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    event_id = put(engine, {"idempotencyKey": key, **payment()})

    (delivery,) = wait_for_deliveries(engine, 1, before)

    # The rule's input transformer made the event one delivery: its id, and its detail as the payload.
    assert (delivery["outcome"], delivery["sourceId"], delivery["idempotencyKey"]) == ("COMPLETED", event_id, key)
    assert delivery["replayed"] is False
    assert engine.workflow.side_effect_runs(key) == 1
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == "COMPLETED"


def test_the_same_event_put_twice_runs_the_side_effect_once_and_the_second_replays(engine: Engine) -> None:
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    first = put(engine, {"idempotencyKey": key, **payment(amount=5100)})
    wait_for_deliveries(engine, 1, before)
    second = put(engine, {"idempotencyKey": key, **payment(amount=5100)})

    (again,) = wait_for_deliveries(engine, 1, before + 1)

    assert first != second  # EventBridge gave each put its own id: only the business key catches it
    assert (again["outcome"], again["sourceId"], again["replayed"]) == ("COMPLETED", second, True)
    assert engine.workflow.side_effect_runs(key) == 1


def test_an_event_without_a_key_goes_to_the_dead_letter_queue_without_a_side_effect(engine: Engine) -> None:
    before = len(deliveries(engine))
    runs_before = len(engine.workflow.invocations())
    event_id = put(engine, payment(amount=42))

    (delivery,) = wait_for_deliveries(engine, 1, before)

    assert (delivery["outcome"], delivery["error"]) == ("DEAD_LETTERED", WorkflowError.KEY_INVALID)
    (dead,) = [m for m in dead_letters(engine) if attribute(m, "SOURCE_ID") == f"events:{event_id}"]
    assert json.loads(dead["Body"]) == payment(amount=42)
    assert attribute(dead, "ERROR_CODE") == WorkflowError.KEY_INVALID
    assert "idempotencyKey" not in dead["MessageAttributes"]
    assert len(engine.workflow.invocations()) == runs_before  # nothing reached the side effect


def test_an_event_the_pattern_does_not_match_starts_nothing(engine: Engine) -> None:
    before = len(deliveries(engine))
    delivered = engine.service(Events).stats.delivered
    put(engine, {"idempotencyKey": f"order-{uuid.uuid4()}", **payment()}, detail_type="SomethingElse")
    key = f"order-{uuid.uuid4()}"
    put(engine, {"idempotencyKey": key, **payment()})  # a matching one after it, to know the first was passed

    (delivery,) = wait_for_deliveries(engine, 1, before)

    assert delivery["idempotencyKey"] == key
    wait_until(lambda: engine.service(Events).stats.delivered == delivered + 1, 10, what="one delivery")


def test_keys_through_the_event_door_follow_the_key_grammar(engine: Engine) -> None:
    # docs/contract.md, "Keys": any character but controls, unicode and quotes included, is a key as it is;
    # whitespace at an end is refused (the workflow's IdempotencyKeyInvalid), never trimmed into another key.
    before = len(deliveries(engine))
    run = uuid.uuid4().hex[:8]
    unicode_key, quoted_key, spaced_key = f"clé-été-{run}", f'"o-{run}"', f" o-{run} "
    for key in (unicode_key, quoted_key, spaced_key):
        put(engine, {"idempotencyKey": key, **payment()})

    found = {d.get("idempotencyKey") or d["sourceId"]: d for d in wait_for_deliveries(engine, 3, before)}

    assert found[unicode_key]["outcome"] == found[quoted_key]["outcome"] == "COMPLETED"
    assert engine.workflow.side_effect_runs(unicode_key) == engine.workflow.side_effect_runs(quoted_key) == 1
    (refused,) = [d for d in found.values() if d["outcome"] == "DEAD_LETTERED"]
    assert refused["error"] == WorkflowError.KEY_INVALID
    assert engine.workflow.side_effect_runs(f"o-{run}") == 0 and engine.workflow.record(f"o-{run}") is None
