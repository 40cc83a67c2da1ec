"""Reading a template file: YAML with CloudFormation's short tags, parsed once per text."""

from __future__ import annotations

import functools
import pickle
from pathlib import Path
from typing import Any

import yaml

from idemflow.template.errors import TemplateError
from idemflow.workflow import default_template


class _CfnLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML loader that turns CloudFormation short tags (``!Ref X``) into their long form. libyaml's loader
    when PyYAML has it (its wheels do): the same YAML 1.1 reading, in C."""


def _construct_tag(loader: _CfnLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = suffix if suffix in ("Ref", "Condition") else f"Fn::{suffix}"
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if name == "Fn::GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _construct_tag)  # type: ignore[no-untyped-call]


def load_template(path: Path | None = None) -> dict[str, Any]:
    """The template (default: :func:`~idemflow.workflow.default_template`) as a dict, with intrinsic functions in
    their long form."""
    path = default_template() if path is None else path
    try:
        text = path.read_text()
    except OSError as exc:
        raise TemplateError(f"{path}: cannot read the template: {exc}") from exc
    data: dict[str, Any] = pickle.loads(_parsed_template(text, str(path)))
    return data


@functools.lru_cache(maxsize=64)
def _parsed_template(text: str, path: str) -> bytes:
    """The template ``text`` parsed, pickled: every caller gets a copy of its own to change (unpickling
    a copy costs far less than parsing again, and a process reads the same templates many times)."""
    try:
        data = yaml.load(text, Loader=_CfnLoader)
    except yaml.YAMLError as exc:
        raise TemplateError(f"{path}: cannot read the template: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("Resources"), dict):
        raise TemplateError(f"{path}: no Resources section")
    return pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
