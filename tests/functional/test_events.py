"""The events service: rules on a bus deliver matching events to state machine targets through their input
transformer, as EventBridge does, driven by plain boto3 ``put_events`` calls to the engine's endpoint.

Expected inputs follow AWS-recorded executions: localstack/localstack
tests/aws/services/events/test_events_inputs.snapshot.json (markers.aws.validated), cited per test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from idemflow.engine import Engine
from idemflow.engine.services.events.service import Events
from tests.polling import wait_until

pytestmark = pytest.mark.functional

TEMPLATE = Path(__file__).parent / "fixtures" / "events" / "template.yaml"


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(TEMPLATE, wait_time_scale=0) as running:
        yield running


def inputs(engine: Engine) -> list[Any]:
    sfn = engine.http_client("stepfunctions")
    arn = engine.stack.state_machines["Collect"].arn if engine.stack else ""
    return [
        json.loads(sfn.describe_execution(executionArn=e["executionArn"])["input"])
        for e in sfn.list_executions(stateMachineArn=arn)["executions"]
    ]


def put(engine: Engine, detail_type: str, detail: dict[str, Any]) -> str:
    answer = engine.http_client("events").put_events(
        Entries=[
            {"EventBusName": "orders", "Source": "shop.orders", "DetailType": detail_type, "Detail": json.dumps(detail)}
        ]
    )
    assert answer["FailedEntryCount"] == 0
    return str(answer["Entries"][0]["EventId"])


def test_a_matching_event_starts_the_target_with_its_transformed_input(engine: Engine) -> None:
    put(engine, "OrderPlaced", {"orderId": "o-1", "amount": 5})
    put(engine, "SomethingElse", {"orderId": "o-2"})  # matches no rule

    (started,) = wait_until(lambda: inputs(engine), 20, what="one execution")
    # test_put_events_with_input_transformer_input_template_json: an unquoted string value is a JSON string,
    # a missing one is "" ; ..._input_template_string: inside quotes a value is its text, a missing one empty.
    assert started == {
        "idempotencyKey": "o-1",
        "payload": {"orderId": "o-1", "amount": 5},
        "note": "order o-1 by idemflow-ToCollect",
        "absent": "",
    }
    assert engine.service(Events).stats.delivered == 1


def test_the_same_event_put_twice_starts_two_executions_with_one_key(engine: Engine) -> None:
    before = len(inputs(engine))
    put(engine, "OrderPlaced", {"orderId": "o-3"})
    put(engine, "OrderPlaced", {"orderId": "o-3"})

    started = wait_until(
        timeout=20,
        what="two more executions",
        predicate=lambda: (found := inputs(engine)) and len(found) >= before + 2 and found,
    )
    assert [s["idempotencyKey"] for s in started].count("o-3") == 2  # the workflow's record makes them one


def test_an_undeliverable_event_goes_to_the_dead_letter_queue_with_the_reason(engine: Engine) -> None:
    assert engine.stack is not None
    event_id = put(engine, "OrderCancelled", {"orderId": "o-4"})
    sqs = engine.http_client("sqs")

    (message,) = wait_until(
        timeout=20,
        what="the dead-letter message",
        predicate=lambda: sqs.receive_message(
            QueueUrl=engine.stack.outputs["DeadLettersUrl"], MessageAttributeNames=["All"]
        ).get("Messages"),
    )
    # eb-rule-dlq: the event itself, and why it was not delivered in the message attributes.
    assert json.loads(message["Body"])["id"] == event_id
    attributes = {k: v["StringValue"] for k, v in message["MessageAttributes"].items()}
    assert attributes["ERROR_CODE"] == "StateMachineDoesNotExist"
    assert attributes["TARGET_ARN"].endswith(":stateMachine:not-deployed")
    assert attributes["RULE_ARN"].endswith(":rule/orders/idemflow-ToNowhere")
    assert engine.service(Events).stats.dead_lettered == 1


def test_a_buckets_writes_reach_a_rule_on_the_default_bus_one_event_each(engine: Engine) -> None:
    # The template's bucket sends its events to EventBridge (NotificationConfiguration.EventBridgeConfiguration);
    # S3 sends them to the default bus (S3 user guide, ev-events.html), whose rule starts its target with the
    # object's key and the event's sequencer: two writes of one object are two keys, in order.
    assert engine.stack is not None
    bucket = engine.stack.outputs["UploadsBucket"]
    s3 = engine.http_client("s3")
    s3.put_object(Bucket=bucket, Key="photos/a.jpg", Body=b"1")
    s3.put_object(Bucket=bucket, Key="photos/a.jpg", Body=b"22")
    sfn = engine.http_client("stepfunctions")
    arn = engine.stack.state_machines["CollectUploads"].arn

    def started() -> list[dict[str, Any]] | None:
        found = sfn.list_executions(stateMachineArn=arn)["executions"]
        if len(found) < 2:
            return None
        return [json.loads(sfn.describe_execution(executionArn=e["executionArn"])["input"]) for e in found]

    inputs_ = wait_until(started, 20, what="two executions")
    keys = sorted(i["idempotencyKey"] for i in inputs_)
    assert [k.split("#")[0] for k in keys] == ["photos/a.jpg", "photos/a.jpg"] and keys[0] != keys[1]
    assert sorted(i["payload"]["object"]["size"] for i in inputs_) == [1, 2]
    assert {i["payload"]["reason"] for i in inputs_} == {"PutObject"}
