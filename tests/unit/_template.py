"""Test access to template.yaml through the project's own resolver (idemflow.template).

Test tables are the template's tables, never a copy of their schema.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from idemflow.engine.stack import resolve_stack
from idemflow.template import load_template


@cache
def template() -> dict[str, Any]:
    return load_template()


def properties(logical_id: str) -> dict[str, Any]:
    props: dict[str, Any] = template()["Resources"][logical_id]["Properties"]
    return props


def create_table_kwargs(logical_id: str, table_name: str) -> dict[str, Any]:
    """What ``create_table`` needs to build the template's table under ``table_name``."""
    table = resolve_stack().tables[logical_id]
    return {
        "TableName": table_name,
        "AttributeDefinitions": table.attribute_definitions,
        "KeySchema": table.key_schema,
        "BillingMode": table.billing_mode,
    }
