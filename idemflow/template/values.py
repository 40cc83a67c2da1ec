"""CloudFormation's scalars as the resolver hands them to the readers: strings, integers, booleans, mappings."""

from __future__ import annotations

from typing import Any

from idemflow.template.errors import TemplateError


class _NoValue:
    """``!Ref AWS::NoValue``: the property (or list item) it stands for is removed."""


NO_VALUE = _NoValue()


def cfn_string(value: Any, where: str) -> str:
    """A scalar as CloudFormation passes it on. YAML 1.1 reads ``true``/``yes``/``on`` as a boolean, which
    CloudFormation hands on as ``"true"``/``"false"`` (Python's ``str`` would give ``"True"``); numbers
    become their text. Anything else (a list, a mapping, ``AWS::NoValue``, ``null``) is not a string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    shown = "AWS::NoValue" if value is NO_VALUE else repr(value)
    raise TemplateError(f"{where}: expected a string, number or boolean, got {shown}")


def integer(value: Any, where: str) -> int:
    text = cfn_string(value, where)
    try:
        return int(text)
    except ValueError:
        raise TemplateError(f"{where}: expected an integer, got {text!r}") from None


def boolean(value: Any, where: str) -> bool:
    # A Ref to a parameter gives the string "true"; a literal gives the YAML boolean.
    text = cfn_string(value, where).lower()
    if text not in ("true", "false"):
        raise TemplateError(f"{where}: expected true or false, got {value!r}")
    return text == "true"


def mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TemplateError(f"{where}: expected a mapping, got {value!r}")
    return value


def require(props: dict[str, Any], key: str, where: str) -> Any:
    if key not in props:
        raise TemplateError(f"{where}: missing property {key}")
    return props[key]
