"""A record through a pipe's ``InputTemplate`` (eb-pipes-input-transformation), and records into the target's
batches."""

from __future__ import annotations

import base64
import json
import re
from datetime import UTC, datetime
from typing import Any

from idemflow.engine.services.pipes.models import TARGET_PAYLOAD_QUOTA, Pipe


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


_PLACEHOLDER = re.compile(r"<(\$(?:\.[\w\-/*]+|\[\d+\])*|aws\.pipes\.[\w.\-]+)>")


def transform(template: str | None, record: dict[str, Any], pipe: Pipe) -> Any:
    """A record through an ``InputTemplate`` (eb-pipes-input-transformation): ``<$.path>`` is the value at that
    JSON path, ``<aws.pipes.*>`` a reserved variable; inside quotes a value is written as text, outside as JSON.
    A JSON body is parsed, so ``<$.body.field>`` reaches into it (the page's "Implicit body data parsing")."""
    if template is None:
        return record
    reserved = {
        "aws.pipes.pipe-arn": pipe.arn,
        "aws.pipes.pipe-name": pipe.name,
        "aws.pipes.source-arn": pipe.source,
        "aws.pipes.target-arn": pipe.target,
        "aws.pipes.event.ingestion-time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "aws.pipes.event.json": record,
    }
    out: list[str] = []
    position = 0
    for match in _PLACEHOLDER.finditer(template):
        before = template[position : match.start()]
        out.append(before)
        quoted = "".join(out).count('"') % 2 == 1
        name = match.group(1)
        value = reserved[name] if name in reserved else _lookup(record, name)
        if quoted:
            out.append(json.dumps(value)[1:-1] if isinstance(value, str) else json.dumps(value).replace('"', '\\"'))
        else:
            out.append(json.dumps(value))
        position = match.end()
    out.append(template[position:])
    text = "".join(out)
    try:
        return json.loads(text)
    except ValueError:
        return text  # free text (a "Static string" or "Dynamic string" template) stays text


def parsed(record: dict[str, Any], key: str) -> Any:
    """The field a source's records carry their data in, parsed ("Implicit body data parsing", for filtering and
    input transformation alike): an SQS message's ``body``, a Kinesis record's ``data`` (base64 of the record's
    bytes); JSON is parsed, anything else stays the field as it is."""
    text = record[key]
    if key == "data":
        try:
            text = base64.b64decode(text, validate=True).decode("utf-8")
        except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
            return record[key]
    try:
        return json.loads(text)
    except ValueError:
        return record[key]


def _lookup(record: dict[str, Any], path: str) -> Any:
    value: Any = record
    implicit = {"aws:sqs": "body", "aws:kinesis": "data"}.get(str(record.get("eventSource")), "body")
    for part in re.findall(r"\.([\w\-/*]+)|\[(\d+)\]", path):
        key, index = part
        if value is record and key == implicit and isinstance(record.get(key), str):
            value = parsed(record, key)
            continue
        if isinstance(value, dict) and key:
            value = value.get(key)
        elif isinstance(value, list) and index:
            value = value[int(index)] if int(index) < len(value) else None
        else:
            return None
    return value


def split_batches(items: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """``(record id, transformed record's JSON)`` pairs, in order, as the target's batches: a batch is closed
    before it would pass the target's payload quota (a record alone over it is a batch of its own, which the
    target refuses)."""
    batches: list[list[tuple[str, str]]] = [[]]
    size = 2  # the array's brackets
    for record_id, text in items:
        item_size = len(text.encode("utf-8")) + 1  # and its comma
        if batches[-1] and size + item_size > TARGET_PAYLOAD_QUOTA:
            batches.append([])
            size = 2
        batches[-1].append((record_id, text))
        size += item_size
    return batches
