"""Reads template.yaml in tests, so that test tables are the template's tables, not a copy of them.

CloudFormation's short tags (!Ref, !GetAtt, !Sub...) are not YAML that SafeLoader knows: each becomes a
plain ``Tag`` marker. Small on purpose; meant to be replaced by the project's own template module.
"""

from __future__ import annotations

from functools import cache
from typing import Any, NamedTuple

import yaml

from idemflow.contract import TEMPLATE_PATH


class Tag(NamedTuple):
    name: str
    value: Any


class _CfnLoader(yaml.SafeLoader):
    pass


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Tag:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return Tag(suffix, value)


_CfnLoader.add_multi_constructor("!", _tag)


@cache
def template() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.load(TEMPLATE_PATH.read_text(), Loader=_CfnLoader)
    return loaded


def properties(logical_id: str) -> dict[str, Any]:
    props: dict[str, Any] = template()["Resources"][logical_id]["Properties"]
    return props


def create_table_kwargs(logical_id: str, table_name: str) -> dict[str, Any]:
    """What ``create_table`` needs to build the template's table under ``table_name``."""
    props = properties(logical_id)
    return {
        "TableName": table_name,
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
        "BillingMode": props["BillingMode"],
    }
