"""Kinesis Data Streams: the template's streams, created in moto's Kinesis (shards, sequence numbers, shard
iterators), which a pipe with a stream source reads (:mod:`.pipes`).

Source: the CloudFormation User Guide's page for AWS::Kinesis::Stream: ``Ref`` is the stream's name, ``Arn`` its
ARN; ``ShardCount`` is required for a ``PROVISIONED`` stream (``StreamModeDetails``), and an ``ON_DEMAND`` stream
has no shard count of its own (it starts with 4 shards: Kinesis Developer Guide, "Choose the data stream capacity
mode"); ``RetentionPeriodHours`` is 24 by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from idemflow.engine.services.base import Service
from idemflow.template import Resolver, ResourceType, Stack, TemplateError, cfn_string, integer, mapping

STREAM_ARN = "arn:aws:kinesis:{region}:{account}:stream/{name}"
ON_DEMAND_SHARDS = 4
"""The shards an on-demand stream starts with (Kinesis Developer Guide, "On-demand mode")."""


@dataclass(frozen=True)
class Stream:
    logical_id: str
    name: str
    arn: str
    shards: int
    mode: str
    retention_hours: int


def read_stream(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Stream:
    details = mapping(r.setting(props, "StreamModeDetails", where, {}), f"{where}.StreamModeDetails")
    mode = cfn_string(details.get("StreamMode", "PROVISIONED"), f"{where}.StreamModeDetails.StreamMode")
    count = r.setting(props, "ShardCount", where, None)
    if mode == "PROVISIONED" and count is None:
        raise TemplateError(f"{where}.ShardCount: a PROVISIONED stream needs its shard count")
    shards = ON_DEMAND_SHARDS if count is None else integer(count, f"{where}.ShardCount")
    retention = integer(r.setting(props, "RetentionPeriodHours", where, 24), f"{where}.RetentionPeriodHours")
    return Stream(lid, r.name(lid), r.arn(lid), shards, mode, retention)


class Kinesis(Service):
    name = "kinesis"
    resource_types = (ResourceType("AWS::Kinesis::Stream", read_stream, name_property="Name", arn=STREAM_ARN),)
    moto_backends = ("kinesis",)

    def deploy(self, stack: Stack) -> None:
        streams = list(stack.all_models(Stream))
        if not streams:  # no client made: an engine's start makes only the clients its template needs
            return
        kinesis = self.context.client("kinesis")
        for stream in streams:
            kinesis.create_stream(StreamName=stream.name, ShardCount=stream.shards)
