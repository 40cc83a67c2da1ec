"""Every delivery accounted for at every size a door accepts (docs/doors.md, "Sizes"): plain boto3 against the
engine's endpoint, the real template with both doors. A message at the queue's MaximumMessageSize, of the
worst shapes for the intake's states (a JSON text of quotes, three-byte characters, a text body of quotes, a
key of thousands of characters), goes through beside small good messages; every message sent ends COMPLETED
or on the dead-letter queue with a named reason, no intake execution fails, and each good key runs once.
Above the size a door takes, the source itself refuses (SQS at SendMessage; StartExecution, and so the event
rule's dead-letter queue, for an event)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from idemflow.engine import Engine
from idemflow.engine.services.events.service import Events
from idemflow.engine.services.sqs.message_size import message_size
from tests.charge.side_effect import payment
from tests.functional.doors import DOORS, attribute, dead_letters, deliveries, wait_for_deliveries
from tests.polling import wait_until

pytestmark = pytest.mark.functional

# The fingerprint covers $.payload.order, so a payload larger than the 10,000 characters States.Hash takes
# can complete; with the default ($.payload) it is dead-lettered IdempotencyPayloadTooLarge.
OVERRIDES = {**DOORS, "QueueVisibilityTimeout": "0", "FingerprintPath": "$.payload.order"}
MAXIMUM = 32_768  # template.yaml, RequestQueue.MaximumMessageSize


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(parameter_overrides=OVERRIDES, wait_time_scale=0.01) as running:
        yield running


def fill(template: dict[str, Any], filler: str, size: int, attributes: dict[str, Any] | None = None) -> str:
    """``template`` as JSON with its ``"note"`` grown with ``filler`` until the message is ``size`` bytes."""
    body = json.dumps({**template, "note": ""}, ensure_ascii=False)
    room = size - message_size(body, attributes)
    count = room // len(json.dumps(filler, ensure_ascii=False)[1:-1].encode())
    body = json.dumps({**template, "note": filler * count}, ensure_ascii=False)
    body = body[:-2] + " " * (size - message_size(body, attributes)) + body[-2:]  # whitespace up to the byte
    assert message_size(body, attributes) == size
    return body


def test_every_message_up_to_the_queues_maximum_is_accounted_for_beside_good_ones(engine: Engine) -> None:
    assert engine.stack is not None
    sqs = engine.http_client("sqs")
    url = engine.stack.outputs["RequestQueueUrl"]
    run = uuid.uuid4().hex[:8]
    good = {f"good-{run}-{n}": {"idempotencyKey": f"good-{run}-{n}", "order": {"n": n}, **payment()} for n in range(3)}
    big = {"idempotencyKey": f"big-{run}", "order": {"n": 9}, **payment()}
    long_key = {"idempotencyKey": "k" * 16_000, "order": {"n": 8}, **payment()}
    attributes = {
        "idempotencyKey": {"DataType": "String", "StringValue": f"attr-{run}"},
        "trace": {"DataType": "String", "StringValue": '"' * 10_000},
    }
    bodies: list[tuple[str, dict[str, Any] | None]] = [
        *((json.dumps(b), None) for b in good.values()),
        ("1", None),  # one byte: JSON, but no object
        (fill(big, "語", MAXIMUM), None),  # three bytes a character
        (fill({**big, "idempotencyKey": f"quotes-{run}"}, '"', MAXIMUM), None),  # each quote escaped again and again
        ('"' * MAXIMUM, None),  # a text body of quotes: not JSON
        (fill({"order": {"n": 7}, **payment()}, "x", MAXIMUM, attributes), attributes),  # attributes count too
        (fill(long_key, "x", MAXIMUM), None),  # a key of 16,000 characters: over what States.Hash takes
    ]
    before = len(deliveries(engine))
    sent = []
    for body, sent_attributes in bodies:
        kwargs: dict[str, Any] = {"QueueUrl": url, "MessageBody": body}
        if sent_attributes:
            kwargs["MessageAttributes"] = sent_attributes
        sent.append(sqs.send_message(**kwargs)["MessageId"])
    # One byte more than the maximum is refused by SQS itself, before anything is accepted (the recorded
    # answer: InvalidParameterValue, "Message must be shorter than 32768 bytes").
    with pytest.raises(ClientError) as refused:
        sqs.send_message(QueueUrl=url, MessageBody=fill(big, "x", MAXIMUM + 1))
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValue"

    found = wait_for_deliveries(engine, len(sent), before, timeout=120)  # no intake failed (deliveries asserts)

    outcomes = {d["sourceId"]: d for d in found}
    assert set(outcomes) == set(sent)  # sent = completed + dead-lettered
    completed = {d["idempotencyKey"] for d in found if d["outcome"] == "COMPLETED"}
    assert set(good) | {f"big-{run}", f"quotes-{run}", f"attr-{run}"} <= completed
    for key in good:
        assert engine.workflow.side_effect_runs(key) == 1
    dead = [d for d in found if d["outcome"] == "DEAD_LETTERED"]
    assert {d["sourceId"] for d in dead} == {sent[3], sent[6], sent[8]}
    letters = {attribute(m, "SOURCE_ID"): m for m in dead_letters(engine)}
    for delivery in dead:
        letter = letters[f"sqs:{delivery['sourceId']}"]
        assert attribute(letter, "ERROR_CODE") == delivery["error"] and delivery["error"]
    assert outcomes[sent[3]]["error"] == outcomes[sent[6]]["error"] == "IdempotencyPayloadInvalid"


def test_an_event_over_what_the_intake_carries_goes_to_the_dead_letter_queue_with_eventbridges_reason(
    engine: Engine,
) -> None:
    # The rule's input carries the detail six times (template.yaml, EventRule): StartExecution refuses an
    # input over 262,144 bytes (API reference), and EventBridge sends the event to the rule's dead-letter
    # queue with its error (eb-rule-dlq). A detail that fits is delivered.
    events = engine.http_client("events")
    run = uuid.uuid4().hex[:8]
    fits = {"idempotencyKey": f"fits-{run}", "order": {"n": 1}, **payment(), "note": "x" * 40_000}
    over = {"idempotencyKey": f"over-{run}", "order": {"n": 2}, **payment(), "note": "x" * 50_000}
    before = len(deliveries(engine))
    stats = engine.service(Events).stats
    dead_before = stats.dead_lettered

    for detail in (fits, over):
        answer = events.put_events(
            Entries=[{"Source": "shop", "DetailType": "IdempotentRequest", "Detail": json.dumps(detail)}]
        )
        assert answer["FailedEntryCount"] == 0

    (delivery,) = wait_for_deliveries(engine, 1, before, timeout=60)
    assert (delivery["outcome"], delivery["idempotencyKey"]) == ("COMPLETED", f"fits-{run}")
    wait_until(lambda: stats.dead_lettered > dead_before, 30, what="the large event on the dead-letter queue")
    (letter,) = [m for m in dead_letters(engine) if f"over-{run}" in m["Body"]]
    assert attribute(letter, "ERROR_CODE") == "ValidationException"
    assert "262144" in attribute(letter, "ERROR_MESSAGE")
