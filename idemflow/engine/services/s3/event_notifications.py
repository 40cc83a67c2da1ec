"""The events S3 sends to EventBridge (``s3-events``, a fix): what a bucket in front of the event door relies on.

Sources: the S3 user guide's "Using EventBridge" pages (EventBridge.html, ev-events.html: "Amazon S3 sends
events to the default event bus"; the detail's fields; ``sequencer``: "a string representation of a
hexadecimal value used to determine event sequence ... for the same object key"), and events recorded on AWS
in LocalStack's AWS-validated snapshots (``LS``: github.com/localstack/localstack,
tests/aws/services/s3/test_s3_notifications_eventbridge.snapshot.json, ``test_object_created_put``: an
``Object Created`` event's detail is ``{version, bucket: {name}, object: {key, size, etag, sequencer},
request-id, requester, source-ip-address, reason: "PutObject"}``; an ``Object Deleted`` one has no size or
etag and adds ``deletion-type: "Permanently Deleted"``, reason ``DeleteObject``).

moto 5.2.5 writes ``eTag`` for ``etag``, ``version-id: null`` for an unversioned object, the reason as
``ObjectCreated`` (the notification's category, not the API call), the same ``sequencer`` for every event (so two
writes of one key cannot be told apart: a key made of the object's key and its sequencer would call the second write
a duplicate), no ``deletion-type``, and sends the event to the rules of every bus, not the default bus alone.

moto also sends ``Object Tags Added`` for every PutObject (it sets the new object's tags, none included), which
LS's PutObject does not record: a tagging event for an object without tags is not sent.

Here: the detail as LS records it; ``version-id`` only for an object that has a version; a sequencer that
grows with every event of the engine (16 hex digits: a later event of a key compares greater, as S3
promises); the default bus only. The time stays a number of seconds, moto's form for an event before a target
gets it (its targets and the engine's write ``2024-03-10T16:22:15Z``). The ids S3
makes (request id) are the engine's own random ones. Not changed: which API calls moto notifies for (a delete
marker in a versioned bucket sends nothing).
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, Final, cast

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

# The API call that caused each notification (the detail's ``reason``; LS records PutObject and DeleteObject).
REASONS: Final = {
    "s3:ObjectCreated:Put": "PutObject",
    "s3:ObjectCreated:Post": "PostObject",
    "s3:ObjectCreated:Copy": "CopyObject",
    "s3:ObjectCreated:CompleteMultipartUpload": "CompleteMultipartUpload",
    "s3:ObjectRemoved:Delete": "DeleteObject",
    "s3:ObjectRemoved:DeleteMarkerCreated": "DeleteObject",
}

_lock = threading.Lock()
_sequence = itertools.count(time.time_ns() // 1000)  # grows across engines in one process, and across runs


def next_sequencer() -> str:
    with _lock:
        return f"{next(_sequence):016X}"


def s3_event(account_id: str, bucket: Any, event_name: str, key: Any, detail_type: str) -> dict[str, Any]:
    """The EventBridge event S3 sends for ``event_name`` on ``key``."""
    created = event_name.startswith("s3:ObjectCreated:")
    deleted = event_name.startswith("s3:ObjectRemoved:")
    obj: dict[str, Any] = {"key": key.name}
    if created:
        obj["size"] = key.size
        obj["etag"] = str(key.etag).strip('"')
    version = getattr(key, "version_id", None)
    if version not in (None, "null"):
        obj["version-id"] = version
    obj["sequencer"] = next_sequencer()
    detail: dict[str, Any] = {
        "version": "0",
        "bucket": {"name": bucket.name},
        "object": obj,
        "request-id": uuid.uuid4().hex[:16].upper(),
        "requester": account_id,
        "source-ip-address": "127.0.0.1",
        "reason": REASONS.get(event_name, event_name.split(":")[1]),
    }
    if deleted:
        marker = event_name == "s3:ObjectRemoved:DeleteMarkerCreated"
        detail["deletion-type"] = "Delete Marker Created" if marker else "Permanently Deleted"
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": "aws.s3",
        "account": account_id,
        "time": time.time(),  # moto's form; a target writes it as EventBridge does
        "region": bucket.region_name,
        "resources": [bucket.arn],
        "detail": detail,
    }


def _tags(account_id: str, key: Any) -> list[Any]:
    from moto.s3.models import s3_backends

    return list(s3_backends[account_id]["aws"].tagger.list_tags_for_resource(key.arn).get("Tags", []))


def install_s3_events(patch: Patch) -> None:
    from moto.events.models import events_backends
    from moto.s3 import notifications

    def _send_event_bridge_message(account_id: str, bucket: Any, event_name: str, key: Any) -> None:
        # As moto: S3 sends asynchronously, and a failure never fails the S3 call that caused it.
        try:
            if event_name == "s3:ObjectTagging:Put" and not _tags(account_id, key):
                return  # moto's PutObject sets an object's (empty) tags: no "Object Tags Added" on AWS (LS)
            event = s3_event(account_id, bucket, event_name, key, notifications._detail_type(event_name))
            default_bus = events_backends[account_id][bucket.region_name].event_buses.get("default")
            for rule in list(default_bus.rules.values()) if default_bus is not None else []:
                rule.send_to_targets(cast(Any, event), transform_input=False)
        except Exception:  # what moto does: the S3 call answers whatever EventBridge does
            pass

    patch.set(notifications, "_send_event_bridge_message", _send_event_bridge_message)
