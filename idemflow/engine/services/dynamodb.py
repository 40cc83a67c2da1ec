"""DynamoDB: the template's tables, created in moto's DynamoDB."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from idemflow.engine.services.base import Service
from idemflow.template import Resolver, ResourceType, Stack, boolean, cfn_string, mapping, require


@dataclass(frozen=True)
class Table:
    logical_id: str
    name: str
    key_schema: list[dict[str, str]]
    attribute_definitions: list[dict[str, str]]
    billing_mode: str
    ttl_attribute: str | None

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
    )


class DynamoDB(Service):
    name = "dynamodb"
    # AWS::DynamoDB::Table, "Return values": Ref is the table name, Arn its ARN.
    resource_types = (
        ResourceType(
            "AWS::DynamoDB::Table",
            read_table,
            name_property="TableName",
            arn="arn:aws:dynamodb:{region}:{account}:table/{name}",
        ),
    )
    moto_backends = ("dynamodb",)

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
            ddb.create_table(**kwargs)
            if table.ttl_attribute:
                ddb.update_time_to_live(
                    TableName=table.name,
                    TimeToLiveSpecification={"Enabled": True, "AttributeName": table.ttl_attribute},
                )
