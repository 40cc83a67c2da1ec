"""The events S3 sends to EventBridge: what a bucket in front of the event door relies on.

Sources: the S3 user guide's EventBridge pages (EventBridge.html, ev-events.html) and events recorded on AWS
in LocalStack's AWS-validated snapshots (``LS`` below: github.com/localstack/localstack,
tests/aws/services/s3/test_s3_notifications_eventbridge.snapshot.json). Each test's rule sends the bucket's
events to a queue (an SQS target: the event as EventBridge delivers it), where they are read.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.conformance.harness import Target
from tests.polling import wait_until


@dataclass(frozen=True)
class Watched:
    bucket: str
    queue_url: str


def _watch(target: Target, bus: str = "default", versioned: bool = False) -> Iterator[Watched]:
    s3, sqs, events = target.client("s3"), target.client("sqs"), target.client("events")
    name = f"s3-events-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    if versioned:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    s3.put_bucket_notification_configuration(Bucket=name, NotificationConfiguration={"EventBridgeConfiguration": {}})
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    if bus != "default":
        events.create_event_bus(Name=bus)
    pattern = {"source": ["aws.s3"], "detail": {"bucket": {"name": [name]}}}
    events.put_rule(Name=name, EventBusName=bus, EventPattern=json.dumps(pattern))
    events.put_targets(Rule=name, EventBusName=bus, Targets=[{"Id": "queue", "Arn": arn}])
    try:
        yield Watched(name, url)
    finally:
        events.remove_targets(Rule=name, EventBusName=bus, Ids=["queue"])
        events.delete_rule(Name=name, EventBusName=bus)
        if bus != "default":
            events.delete_event_bus(Name=bus)
        sqs.delete_queue(QueueUrl=url)
        with contextlib.suppress(ClientError):
            for version in s3.list_object_versions(Bucket=name).get("Versions", []):
                s3.delete_object(Bucket=name, Key=version["Key"], VersionId=version["VersionId"])
            s3.delete_bucket(Bucket=name)


@pytest.fixture
def watched(target: Target) -> Iterator[Watched]:
    yield from _watch(target)


def _events(target: Target, watched: Watched, count: int) -> list[dict[str, Any]]:
    sqs = target.client("sqs")
    got: list[dict[str, Any]] = []

    def arrived() -> bool:
        answer = sqs.receive_message(QueueUrl=watched.queue_url, MaxNumberOfMessages=10)
        for message in answer.get("Messages", []):
            got.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=watched.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return len(got) >= count

    wait_until(arrived, 10, what=f"{count} S3 events", interval=0.02)
    return got


def test_a_put_object_sends_object_created_as_recorded_on_aws(target: Target, watched: Watched) -> None:
    # LS test_object_created_put, "object_created": the envelope and the detail's fields, reason PutObject, the
    # etag without quotes, no version-id for an object of an unversioned bucket.
    target.client("s3").put_object(Bucket=watched.bucket, Key="orders/o-17.json", Body=b"test")

    (event,) = _events(target, watched, 1)

    assert (event["source"], event["detail-type"], event["version"]) == ("aws.s3", "Object Created", "0")
    assert event["resources"] == [f"arn:aws:s3:::{watched.bucket}"]
    assert set(event) == {"version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"}
    assert event["time"].endswith("Z") and "T" in event["time"]
    detail = event["detail"]
    assert set(detail) == {"version", "bucket", "object", "request-id", "requester", "source-ip-address", "reason"}
    assert (detail["bucket"], detail["reason"]) == ({"name": watched.bucket}, "PutObject")
    assert set(detail["object"]) == {"key", "size", "etag", "sequencer"}
    assert (detail["object"]["key"], detail["object"]["size"]) == ("orders/o-17.json", 4)
    assert detail["object"]["etag"] == "098f6bcd4621d373cade4e832627b4f6"  # MD5 of b"test", unquoted


def test_a_delete_sends_object_deleted_permanently_without_size_or_etag(target: Target, watched: Watched) -> None:
    # LS test_object_created_put, "object_deleted": no size or etag, reason DeleteObject, deletion-type.
    s3 = target.client("s3")
    s3.put_object(Bucket=watched.bucket, Key="gone", Body=b"x")
    s3.delete_object(Bucket=watched.bucket, Key="gone")

    created, deleted = _events(target, watched, 2)

    assert created["detail-type"] == "Object Created"
    assert deleted["detail-type"] == "Object Deleted"
    assert set(deleted["detail"]["object"]) == {"key", "sequencer"}
    assert (deleted["detail"]["reason"], deleted["detail"]["deletion-type"]) == ("DeleteObject", "Permanently Deleted")


def test_each_write_of_a_key_has_a_greater_sequencer(target: Target, watched: Watched) -> None:
    # The S3 guide's event message structure: the sequencer "provides a way to determine the sequence of events"
    # for the same object key; a later event's is greater (hexadecimal, compared once padded to one length).
    s3 = target.client("s3")
    for body in (b"1", b"2", b"3"):
        s3.put_object(Bucket=watched.bucket, Key="same", Body=body)

    sequencers = [e["detail"]["object"]["sequencer"] for e in _events(target, watched, 3)]

    width = max(len(s) for s in sequencers)
    padded = [s.rjust(width, "0") for s in sequencers]
    assert len(set(padded)) == 3 and padded == sorted(padded)
    assert all(int(s, 16) >= 0 for s in sequencers)


def test_a_versioned_objects_event_names_its_version(target: Target) -> None:
    # The S3 guide's Object Created example carries version-id for a versioned object (LS records it for a delete).
    for watched in _watch(target, versioned=True):
        put = target.client("s3").put_object(Bucket=watched.bucket, Key="v", Body=b"v1")
        (event,) = _events(target, watched, 1)
        assert event["detail"]["object"]["version-id"] == put["VersionId"]


def test_s3_sends_to_the_default_bus_only(target: Target) -> None:
    # ev-events.html: "Amazon S3 sends events to the default event bus": a rule on another bus sees none.
    for watched in _watch(target, bus=f"other-{uuid.uuid4().hex[:8]}"):
        target.client("s3").put_object(Bucket=watched.bucket, Key="k", Body=b"x")
        target.client("s3").put_object(Bucket=watched.bucket, Key="k2", Body=b"x")
        answer = target.client("sqs").receive_message(QueueUrl=watched.queue_url, WaitTimeSeconds=0)
        assert answer.get("Messages", []) == []
