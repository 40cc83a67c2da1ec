"""S3: the template's buckets, created in moto's S3, with their versioning and their EventBridge notifications
(the registry's ``s3-events`` change makes the events S3 sends to EventBridge AWS's).

Sources: the CloudFormation User Guide's AWS::S3::Bucket page (``Ref`` is the bucket's name, ``Arn`` is
``arn:aws:s3:::<name>``; a name CloudFormation makes up is in lower case; ``NotificationConfiguration``'s
``EventBridgeConfiguration.EventBridgeEnabled`` sends the bucket's events to EventBridge;
``VersioningConfiguration.Status``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from idemflow.engine.services.base import Service
from idemflow.template import Resolver, ResourceType, Stack, cfn_string, mapping


@dataclass(frozen=True)
class Bucket:
    logical_id: str
    name: str
    versioning: str | None
    """``Enabled`` or ``Suspended`` (VersioningConfiguration.Status), None when not configured."""
    event_bridge: bool


def read_bucket(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Bucket:
    notifications = mapping(
        r.setting(props, "NotificationConfiguration", where, {}), f"{where}.NotificationConfiguration"
    )
    event_bridge = mapping(notifications.get("EventBridgeConfiguration", {}), f"{where}.EventBridgeConfiguration")
    enabled = event_bridge.get("EventBridgeEnabled", "EventBridgeConfiguration" in notifications)
    versioning = mapping(r.setting(props, "VersioningConfiguration", where, {}), f"{where}.VersioningConfiguration")
    status = versioning.get("Status")
    return Bucket(
        lid,
        r.name(lid),
        None if status is None else cfn_string(status, f"{where}.VersioningConfiguration.Status"),
        enabled in (True, "true"),
    )


class S3(Service):
    name = "s3"
    resource_types = (
        ResourceType(
            "AWS::S3::Bucket",
            read_bucket,
            name_property="BucketName",
            arn="arn:aws:s3:::{name}",
            ref="name",
            attributes={
                "DomainName": "{name}.s3.amazonaws.com",
                "RegionalDomainName": "{name}.s3.{region}.amazonaws.com",
            },
            lowercase_name=True,
        ),
        ResourceType("AWS::S3::BucketPolicy", why_not_served="permissions are not enforced locally"),
    )
    moto_backends = ("s3",)
    signed_in_process = True  # moto's S3 refuses an unsigned request for a private object (403), as anonymous

    def deploy(self, stack: Stack) -> None:
        buckets = [b for _, s in stack.stacks() for b in s.models(Bucket).values()]
        if not buckets:
            return
        s3 = self.context.client("s3")
        for bucket in buckets:
            if self.context.region == "us-east-1":
                s3.create_bucket(Bucket=bucket.name)
            else:
                s3.create_bucket(
                    Bucket=bucket.name, CreateBucketConfiguration={"LocationConstraint": self.context.region}
                )
            if bucket.versioning is not None:
                s3.put_bucket_versioning(Bucket=bucket.name, VersioningConfiguration={"Status": bucket.versioning})
            if bucket.event_bridge:
                s3.put_bucket_notification_configuration(
                    Bucket=bucket.name, NotificationConfiguration={"EventBridgeConfiguration": {}}
                )
