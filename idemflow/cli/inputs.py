"""The commands' inputs, checked after parsing: payloads, idempotency keys, template and parameters.

Every problem is a :class:`~idemflow.cli.errors.CliError` with exit status 2, raised before an engine
starts or a request is sent.
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from idemflow import contract, keys
from idemflow.cli.errors import EXIT_USAGE, CliError
from idemflow.contract import sample_event


def sample_payload(template: Path) -> Any:
    """The payload of ``template``'s sample event (``events/event.json`` beside it), which ``run``,
    ``serve`` and ``demo`` send when no payload is given; a CliError when there is none."""
    path = sample_event(template)
    try:
        return contract.sample_payload(template)
    except FileNotFoundError:
        raise CliError(
            f"no payload given, and {template} has no sample event at {path}: pass --payload JSON or @FILE",
            EXIT_USAGE,
        ) from None
    except (KeyError, TypeError):
        raise CliError(f'the sample event {path} has no payload (expected {{"payload": ...}})', EXIT_USAGE) from None
    except (OSError, ValueError) as exc:
        raise CliError(f"the sample event {path} cannot be read as JSON: {exc}", EXIT_USAGE) from None


def _json_arg(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{what} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", EXIT_USAGE
        ) from None


def _read_file(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"{what}: no such file: {path}", EXIT_USAGE) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"{what}: cannot read {path}: {exc}", EXIT_USAGE) from None


def read_payload(args: argparse.Namespace, template: Path) -> Any:
    """The payload of --payload (inline JSON or @FILE) or --payload-file, else ``template``'s sample event's."""
    if args.payload_file is not None:
        return _json_arg(_read_file(args.payload_file, "--payload-file"), f"--payload-file {args.payload_file}")
    if args.payload is None:
        return sample_payload(template)
    if args.payload.startswith("@"):
        return _json_arg(_read_file(args.payload[1:], "--payload"), f"--payload {args.payload}")
    return _json_arg(args.payload, "--payload")


def run_key(args: argparse.Namespace, template: Path) -> str:
    """--key, else the ``idempotencyKey`` of ``template``'s sample event when the payload is that event's (no
    --payload, no --payload-file) and it has one, else a new ``order-<8 random hex>``: ``run`` sends the event's
    input as it is, the key it was written with."""
    if args.key is not None:
        return str(args.key)
    if args.payload is None and args.payload_file is None:
        try:
            event = json.loads(sample_event(template).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            event = None  # read_payload has already said what is wrong with it
        key = event.get("idempotencyKey") if isinstance(event, dict) else None
        if key is not None:
            return key if isinstance(key, str) else json.dumps(key)  # an empty or odd key is refused by check_input
    return f"order-{uuid.uuid4().hex[:8]}"


def check_input(key: str, payload: Any) -> None:
    """The workflow's own checks of the key and the payload, run before anything starts."""
    keys.check_input(key, payload)  # its errors are reported by type (errors.as_cli_error)


def parameter_overrides(items: Sequence[str] | None) -> dict[str, str]:
    """--parameter-overrides' KEY=VALUE items as a mapping."""
    result: dict[str, str] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CliError(f"--parameter-overrides: expected Key=Value, got {item!r}", EXIT_USAGE)
        result[name] = value
    return result


def template_path(path: str) -> Path:
    """--template, which must be a file."""
    template = Path(path)
    if not template.is_file():
        raise CliError(f"--template: no such file: {path}", EXIT_USAGE)
    return template
