"""DynamoDB: the template's tables, created in moto's DynamoDB, with their streams (moto's DynamoDB Streams).

A table's ``StreamArn`` (AWS::DynamoDB::Table, "Return values") is ``<table ARN>/stream/<label>``, the label a
timestamp AWS sets when the stream is enabled. The template needs it before the table exists (a pipe names it),
so the engine's label is a fixed one, :data:`STREAM_LABEL`, given to moto's table once it is created.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from idemflow.engine.services.base import Service
from idemflow.template import Resolver, ResourceType, Stack, TemplateError, boolean, cfn_string, mapping, require

TABLE_ARN = "arn:aws:dynamodb:{region}:{account}:table/{name}"
STREAM_LABEL = "2000-01-01T00:00:00.000"
"""The label of every table's stream on the engine (on AWS: the time the stream was enabled)."""


@dataclass(frozen=True)
class Table:
    logical_id: str
    name: str
    key_schema: list[dict[str, str]]
    attribute_definitions: list[dict[str, str]]
    billing_mode: str
    ttl_attribute: str | None
    stream_view_type: str | None = None
    """``StreamSpecification.StreamViewType``; None: no stream."""

    @property
    def partition_key(self) -> str:
        return next(k["AttributeName"] for k in self.key_schema if k["KeyType"] == "HASH")


def read_table(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Table:
    ttl = mapping(r.setting(props, "TimeToLiveSpecification", where, {}), f"{where}.TimeToLiveSpecification")
    ttl_attribute = None
    if boolean(ttl.get("Enabled", False), f"{where}.TimeToLiveSpecification.Enabled"):
        name = require(ttl, "AttributeName", f"{where}.TimeToLiveSpecification")
        ttl_attribute = cfn_string(name, f"{where}.TimeToLiveSpecification.AttributeName")
    return Table(
        logical_id=lid,
        name=r.name(lid),
        key_schema=r.setting(props, "KeySchema", where),
        attribute_definitions=r.setting(props, "AttributeDefinitions", where),
        billing_mode=cfn_string(r.setting(props, "BillingMode", where, "PROVISIONED"), f"{where}.BillingMode"),
        ttl_attribute=ttl_attribute,
        stream_view_type=_stream_view_type(r, props, where),
    )


def _stream_view_type(r: Resolver, props: dict[str, Any], where: str) -> str | None:
    spec = mapping(r.setting(props, "StreamSpecification", where, {}), f"{where}.StreamSpecification")
    if not spec:
        return None
    view = cfn_string(require(spec, "StreamViewType", f"{where}.StreamSpecification"), f"{where}.StreamSpecification")
    if view not in ("KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"):
        raise TemplateError(f"{where}.StreamSpecification.StreamViewType: {view!r} is not a stream view type")
    return view


class DynamoDB(Service):
    name = "dynamodb"
    # AWS::DynamoDB::Table, "Return values": Ref is the table name, Arn its ARN.
    resource_types = (
        ResourceType(
            "AWS::DynamoDB::Table",
            read_table,
            name_property="TableName",
            arn=TABLE_ARN,
            attributes={"StreamArn": f"{TABLE_ARN}/stream/{STREAM_LABEL}"},
        ),
    )
    moto_backends = ("dynamodb", "dynamodbstreams")

    def deploy(self, stack: Stack) -> None:
        ddb = self.context.client("dynamodb")
        for table in stack.all_models(Table):
            kwargs: dict[str, Any] = {
                "TableName": table.name,
                "KeySchema": table.key_schema,
                "AttributeDefinitions": table.attribute_definitions,
                "BillingMode": table.billing_mode,
            }
            if table.billing_mode != "PAY_PER_REQUEST":
                kwargs["ProvisionedThroughput"] = {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
            if table.stream_view_type is not None:
                kwargs["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": table.stream_view_type}
            ddb.create_table(**kwargs)
            if table.stream_view_type is not None:
                self._label_stream(table.name)
            if table.ttl_attribute:
                ddb.update_time_to_live(
                    TableName=table.name,
                    TimeToLiveSpecification={"Enabled": True, "AttributeName": table.ttl_attribute},
                )

    def _label_stream(self, table: str) -> None:
        from moto.backends import get_backend
        from moto.core.models import DEFAULT_ACCOUNT_ID

        get_backend("dynamodb")[DEFAULT_ACCOUNT_ID][self.context.region].get_table(
            table
        ).latest_stream_label = STREAM_LABEL
