"""S3's writes through the event door (EventFrontDoor=true, a pattern on aws.s3), keyed by two fields: the
object's key and its sequencer (DoorKeyField, DoorKeyField2), on the embedded engine with plain boto3 calls: on
the project's template (whose example charge declines an upload), and in a user's application whose function
makes a thumbnail of each upload (one per write, every event accounted for, a refused upload dead-lettered)."""

from __future__ import annotations

import json
import os
import textwrap
import uuid
from collections import Counter
from collections.abc import Iterator

import pytest

from idemflow.engine import Engine
from tests.functional.doors import attribute, dead_letters, deliveries, wait_for_deliveries
from tests.paths import TEMPLATE_PATH

S3_OVERRIDES = {
    "EventFrontDoor": "true",
    "EventPattern": json.dumps({"source": ["aws.s3"], "detail-type": ["Object Created"]}),
    "DoorKeyField": "object.key",
    "DoorKeyField2": "object.sequencer",
}


def test_an_objects_writes_reach_the_event_door_keyed_by_its_key_and_sequencer() -> None:
    # S3 sends a bucket's events to the default bus when the bucket enables it (S3 user guide, EventBridge.html);
    # the event door's rule takes them, its payload is the event's detail. Each write is keyed by the object's
    # key and its sequencer (a later write's is greater): two writes are two keys. The example side effect (a
    # charge) declines a payload that is no payment, so each ends on the dead-letter queue with its key.
    with Engine(parameter_overrides=S3_OVERRIDES, wait_time_scale=0.01) as engine:
        s3 = engine.http_client("s3")
        bucket = f"uploads-{uuid.uuid4().hex[:8]}"
        s3.create_bucket(Bucket=bucket)
        s3.put_bucket_notification_configuration(
            Bucket=bucket, NotificationConfiguration={"EventBridgeConfiguration": {}}
        )
        s3.put_object(Bucket=bucket, Key="photos/a.jpg", Body=b"1")
        s3.put_object(Bucket=bucket, Key="photos/a.jpg", Body=b"2")

        found = wait_for_deliveries(engine, 2)
        letters = dead_letters(engine)

    keys = sorted((json.loads(attribute(m, "idempotencyKey")) for m in letters), key=lambda k: int(k[1], 16))
    assert [k[0] for k in keys] == ["photos/a.jpg", "photos/a.jpg"] and keys[0][1] != keys[1][1]
    assert [d["outcome"] for d in found] == ["DEAD_LETTERED", "DEAD_LETTERED"]
    assert {attribute(m, "ERROR_CODE") for m in letters} == {"PaymentValidationError"}


# -- A side effect that takes S3's events: the door's promises end to end ----------------------------------

THUMBNAIL = """\
def handler(event, context):
    key = event["payload"]["object"]["key"]
    if not key.endswith(".jpg"):
        raise type("NotAnImageError", (Exception,), {})(f"{key} is not an image")
    return {"thumbnail": key.removesuffix(".jpg") + ".thumb.jpg", "sequencer": event["payload"]["object"]["sequencer"]}
"""


@pytest.fixture(scope="module")
def uploads(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """A user's application: a bucket sending its events to EventBridge, a function making a thumbnail of each
    upload, and the workflow nested with its event door on the bucket's writes (key: object key, sequencer)."""
    directory = tmp_path_factory.mktemp("uploads")
    (directory / "fn").mkdir()
    (directory / "fn" / "app.py").write_text(THUMBNAIL)
    (directory / "template.yaml").write_text(
        textwrap.dedent(
            f"""\
            Transform: AWS::Serverless-2016-10-31
            Resources:
              Uploads:
                Type: AWS::S3::Bucket
                Properties:
                  NotificationConfiguration:
                    EventBridgeConfiguration:
                      EventBridgeEnabled: true
              Thumbnail:
                Type: AWS::Serverless::Function
                Properties: {{CodeUri: fn/, Handler: app.handler, Runtime: python3.12, Timeout: 10}}
              Workflow:
                Type: AWS::Serverless::Application
                Properties:
                  Location: {os.path.relpath(TEMPLATE_PATH, directory)}
                  Parameters:
                    SideEffectFunctionArn: !GetAtt Thumbnail.Arn
                    SideEffectTransientError: ThumbnailUnavailableError
                    EventFrontDoor: "true"
                    EventPattern: !Sub '{{"source": ["aws.s3"], "detail-type": ["Object Created"],
                      "detail": {{"bucket": {{"name": ["${{Uploads}}"]}}}}}}'
                    DoorKeyField: object.key
                    DoorKeyField2: object.sequencer
            Outputs:
              Bucket:
                Value: !Ref Uploads
              IntakeStateMachineArn:
                Value: !GetAtt Workflow.Outputs.IntakeStateMachineArn
              DoorDeadLetterQueueUrl:
                Value: !GetAtt Workflow.Outputs.DoorDeadLetterQueueUrl
            """
        )
    )
    with Engine(directory / "template.yaml", wait_time_scale=0.01) as engine:
        yield engine


def put(engine: Engine, key: str, body: bytes = b"image") -> None:
    assert engine.stack is not None
    engine.http_client("s3").put_object(Bucket=engine.stack.outputs["Bucket"], Key=key, Body=body)


def test_each_write_of_an_object_makes_one_thumbnail(uploads: Engine) -> None:
    before = len(deliveries(uploads))
    put(uploads, "photos/a.jpg", b"1")
    put(uploads, "photos/a.jpg", b"2")

    found = wait_for_deliveries(uploads, 2, before)

    assert [d["outcome"] for d in found] == ["COMPLETED", "COMPLETED"]
    keys = [json.loads(d["idempotencyKey"]) for d in found]
    assert {k[0] for k in keys} == {"photos/a.jpg"} and keys[0][1] != keys[1][1]
    assert [uploads.workflow.side_effect_runs(d["idempotencyKey"]) for d in found] == [1, 1]


def test_many_writes_of_few_objects_make_one_thumbnail_per_write_and_every_event_is_accounted_for(
    uploads: Engine,
) -> None:
    before = len(deliveries(uploads))
    for i in range(12):
        put(uploads, f"photos/{i % 3}.jpg", str(i).encode())

    found = wait_for_deliveries(uploads, 12, before)

    assert {d["outcome"] for d in found} == {"COMPLETED"} and len({d["idempotencyKey"] for d in found}) == 12
    assert Counter(json.loads(d["idempotencyKey"])[0] for d in found) == {f"photos/{i}.jpg": 4 for i in range(3)}
    assert all(uploads.workflow.side_effect_runs(d["idempotencyKey"]) == 1 for d in found)


def test_an_upload_the_function_refuses_is_dead_lettered_with_its_key_and_reason(uploads: Engine) -> None:
    before = len(deliveries(uploads))
    put(uploads, "notes/readme.txt")

    (delivery,) = wait_for_deliveries(uploads, 1, before)

    assert (delivery["outcome"], delivery["error"]) == ("DEAD_LETTERED", "NotAnImageError")
    (letter,) = [
        m for m in dead_letters(uploads) if json.loads(attribute(m, "idempotencyKey"))[0] == "notes/readme.txt"
    ]
    assert attribute(letter, "ERROR_CODE") == "NotAnImageError"
    assert json.loads(letter["Body"])["object"]["key"] == "notes/readme.txt"  # the event's detail, as it came


def test_an_event_delivered_twice_makes_its_thumbnail_once(uploads: Engine) -> None:
    # EventBridge delivers at least once: the same event (same id, same object key and sequencer) can start the
    # intake twice. The second delivery is served from the record.
    before = len(deliveries(uploads))
    uploads.faults.deliver_again_next("EventRule")
    put(uploads, "photos/twice.jpg")

    found = wait_for_deliveries(uploads, 2, before)

    assert len({d["idempotencyKey"] for d in found}) == 1 and {d["outcome"] for d in found} == {"COMPLETED"}
    assert sorted(d["replayed"] for d in found) == [False, True]
    assert uploads.workflow.side_effect_runs(found[0]["idempotencyKey"]) == 1
