"""S3's writes through the event door (EventFrontDoor=true, a pattern on aws.s3), keyed by two fields: the
object's key and its sequencer (DoorKeyField, DoorKeyField2), on the embedded engine with plain boto3 calls."""

from __future__ import annotations

import json
import uuid

from idemflow.engine import Engine
from tests.functional.doors import attribute, dead_letters, wait_for_deliveries

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
