"""Cheaper response serialization and request parsing in moto 5.2.5: speedups, not fixes (the same bytes, the same
parameters, less work).

moto serializes an ``ActionResult`` (every Step Functions, SQS, EventBridge ... answer) by walking the
operation's output shape, member by member. Two steps of that walk redo the same work every time:

``serializer-keys``: for each member of each value, moto builds a context, then
``XFormedAttributePicker.get_possible_keys`` builds six alias providers, asks each whether it has an
alias and ``xform_name``s every alias (a regex), then tries each key on the value. A history event's
shape has ~60 members, so one execution's history costs thousands of such probes. What the probes
answer depends only on the member's key, its shape, the shape it sits in (``shape.parent``) and the
value's class (its ``Meta`` aliases and class name); botocore keeps one shape object per member of a
service model (``members`` is a cached property), so the keys are kept per (alias providers, value class,
shape, parent, key), holding those objects so that their ids stay theirs. A plain ``dict`` value (every
Step Functions answer) is then walked with those keys directly: the first key the dict holds gives the
member's value, as moto's ``get_value`` does. Values with a ``Meta`` of their own, keys that are dotted
paths, answers with response transformers, and the REST protocols' serializers (which place each member of
a structure in the body, a header or the status code themselves) take moto's own walk.

``iso-timestamps``: ``TimestampSerializer`` turns every timestamp into a datetime with botocore's
``parse_to_aware_datetime``; the interpreter's history events carry theirs as ISO 8601 strings, which
that parses with dateutil. A complete timestamp (date, time to the second or finer, ``Z``
or an offset) is read with ``datetime.fromisoformat`` and moved to UTC, as botocore does: the same
instant, wall time and offset, which is all the serializer's converters read. Anything else is parsed as before.

Both run for every event of every history, and ``Engine.run`` reads every execution's history (its path).

``json-parse``: moto parses a JSON-protocol request (every DynamoDB request: the workflow's tasks, the functions'
calls) by walking the operation's input shape over the JSON body: for each value, ``_parse_shape`` formats the
name of the handler for the shape's type, looks it up, and calls it; a structure asks the value for each of its
members (a DynamoDB ``AttributeValue`` has ten). The walk is the same for every request of an operation: it is
made once per shape, as a function that does what moto's handlers do in the same order (the same members asked
for, the same parameters kept in the same order, moto's own handlers for blobs, timestamps and numbers, the same
errors for a value of the wrong kind). Shapes are kept per object, held so that their ids stay theirs, as for
``serializer-keys``. A parser of another class, or with a handler of its own, parses as before.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

#: Timestamps fromisoformat reads as dateutil does: every field present, with an offset.
COMPLETE_TIMESTAMP: Final = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})")

MAX_KEY_ENTRIES: Final = 100_000
# (alias providers, value class, shape, parent, key) -> (the keys moto would try, in order; the objects
# whose ids make the entry's key, held so that no other object takes their id while the entry lives).
_keys: dict[tuple[int, int, int, int, str], tuple[tuple[str, ...], tuple[Any, ...]]] = {}


def cache_info() -> dict[str, int]:
    return {"key_entries": len(_keys)}


def install_serializer_keys(patch: Patch) -> None:
    from moto.core.serialize import AttributePickerContext, ResponseSerializer, XFormedAttributePicker

    probe = XFormedAttributePicker.get_possible_keys
    walk_structure = ResponseSerializer._serialize_type_structure

    def possible_keys(picker: Any, obj: Any, shape: Any, key: str, context: Any) -> tuple[str, ...]:
        parent = getattr(shape, "parent", None)
        cls = type(obj)
        entry = (id(picker.alias_providers), id(cls), id(shape), id(parent), key)
        found = _keys.get(entry)
        if found is None:
            if len(_keys) >= MAX_KEY_ENTRIES:
                _keys.clear()
            found = (tuple(probe(picker, context())), (picker.alias_providers, cls, shape, parent))
            _keys[entry] = found
        return found[0]

    def get_possible_keys(self: Any, context: Any) -> Any:
        if "Meta" in getattr(context.obj, "__dict__", ()):  # aliases of this value's own, not its class's
            return probe(self, context)
        return possible_keys(self, context.obj, context.shape, context.key, lambda: context)

    def _serialize_type_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        picker = self._value_picker
        if (
            type(value) is not dict
            or type(picker) is not XFormedAttributePicker
            or picker.response_transformers
            # The REST serializers place each top-level member themselves (body, header or status code).
            or type(self)._serialize_structure_member is not ResponseSerializer._serialize_structure_member
        ):
            walk_structure(self, serialized, value, shape, key)
            return
        wrapper = self.MAP_TYPE() if key else serialized
        for member_key, member_shape in shape.members.items():
            member_shape.parent = shape
            keys = possible_keys(
                picker,
                value,
                member_shape,
                member_key,
                lambda: AttributePickerContext(
                    obj=value,
                    key=member_key,  # noqa: B023 (called at once, inside this iteration)
                    shape=member_shape,  # noqa: B023
                    operation_model=self.operation_model,
                    service_model=self.operation_model.service_model,
                    key_path=".".join(self.path),
                ),
            )
            if any("." in k for k in keys):  # a dotted key is a path into the value: moto's own lookup
                self._serialize_structure_member(wrapper, value, member_shape, member_key)
                continue
            member_value = None
            for k in keys:
                if k in value:
                    member_value = value[k]
                    break
            if member_value is not None:
                self._serialize(wrapper, member_value, member_shape, member_key)
        if key:
            self._default_serialize(serialized, wrapper, shape, key)

    patch.set(XFormedAttributePicker, "get_possible_keys", get_possible_keys)
    patch.set(ResponseSerializer, "_serialize_type_structure", _serialize_type_structure)
    patch.on_undo(_keys.clear)


def install_iso_timestamps(patch: Patch) -> None:
    from moto.core import serialize

    parse = serialize.parse_to_aware_datetime  # type: ignore[attr-defined]

    def parse_to_aware_datetime(value: Any) -> Any:
        if isinstance(value, str) and COMPLETE_TIMESTAMP.fullmatch(value):
            return datetime.datetime.fromisoformat(value).astimezone(datetime.UTC)  # as botocore: in UTC
        return parse(value)

    # TimestampSerializer._convert_timestamp_to_str calls it by the name serialize.py imported.
    patch.set(serialize, "parse_to_aware_datetime", parse_to_aware_datetime)


# -- json-parse ----------------------------------------------------------------------------------------------

MAX_PLANS: Final = 100_000
_Plan = Callable[[Any, Any], Any]
"""plan(parser, value): what moto's ``parser._parse_shape(shape, value)`` returns, for the plan's shape."""
_plans: dict[int, tuple[_Plan, Any]] = {}
"""id(shape) -> (its plan, the shape: held, so that no other shape takes its id while the plan lives)."""


def _plan(shape: Any) -> _Plan:
    entry = _plans.get(id(shape))
    if entry is not None:
        return entry[0]
    plan = _compile(shape)
    if len(_plans) >= MAX_PLANS:
        _plans.clear()
    _plans[id(shape)] = (plan, shape)
    return plan


def _handler(shape: Any) -> Any:
    """The function moto's JSONParser._parse_shape calls for ``shape`` (None: its default, the value itself)."""
    from moto.core.parse import JSONParser

    return getattr(JSONParser, f"_parse_{shape.type_name}", None)


def _compile(shape: Any) -> _Plan:
    from moto.core.parse import BaseJSONParser, RequestParser

    handler = _handler(shape)
    if handler is None:
        return lambda parser, value: value
    if handler is BaseJSONParser._parse_structure:
        if shape.is_document_type:
            return lambda parser, value: value
        # (member name, its JSON name, its shape, whether moto hands its value back as it is)
        members = [
            (name, member.serialization.get("name", name), member, _handler(member) is None)
            for name, member in shape.members.items()
        ]

        def structure(parser: Any, value: Any) -> Any:
            if value is None:
                return None
            parsed = parser.MAP_TYPE()
            for name, json_name, member, as_is in members:
                raw = value.get(json_name)
                if raw is not None:
                    parsed[name] = raw if as_is else _plan(member)(parser, raw)
            return parsed

        return structure
    if handler is RequestParser._parse_list:
        member = shape.member
        return lambda parser, node: [_plan(member)(parser, item) for item in node]
    if handler is RequestParser._parse_map:
        key_shape, value_shape = shape.key, shape.value

        def mapping(parser: Any, value: Any) -> Any:
            parsed = parser.MAP_TYPE()
            for key, val in value.items():
                actual_key = _plan(key_shape)(parser, key)
                actual_value = _plan(value_shape)(parser, val)
                parsed[actual_key] = actual_value
            return parsed

        return mapping
    return lambda parser, value: handler(parser, shape, value)  # blobs, timestamps, numbers: moto's own


def install_json_parse(patch: Patch) -> None:
    from moto.core.parse import JSONParser

    parse_json_body: Any = JSONParser._parse_json_body
    own_handlers = {name: value for name, value in vars(JSONParser).items() if name.startswith("_parse_")}

    def _parse_json_body(self: Any, raw_body: Any, shape: Any) -> Any:
        if type(self) is not JSONParser or any(name.startswith("_parse_") for name in vars(self)):
            return parse_json_body(self, raw_body, shape)
        parsed_json = self._parse_body_as_json(raw_body)  # type: ignore[no-untyped-call]
        return _plan(shape)(self, parsed_json)

    if own_handlers.keys() - {"_parse_json_body", "_do_parse"}:  # a moto whose JSONParser has handlers of its own
        return
    patch.set(JSONParser, "_parse_json_body", _parse_json_body)
    patch.on_undo(_plans.clear)
