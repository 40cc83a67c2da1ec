"""The outbox example as the workflow's generic tests see it (the project's tests/functional/side_effects.py
finds this module): its function is not idempotent by itself, every invocation writes a row, so "one effect
per key" is the workflow's doing alone. Its effects are its outbox rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from idemflow.contract import sample_payload
from idemflow.engine import Engine

NAME = "outbox"
TEMPLATE = Path(__file__).resolve().parent.parent / "template.yaml"
PAYLOAD: dict[str, Any] = sample_payload(TEMPLATE)
OTHER_PAYLOAD = {**PAYLOAD, "message": f"{PAYLOAD['message']}, again"}
REJECTED_PAYLOAD = {**PAYLOAD, "to": ""}
REJECTED_ERROR = "NotificationRejectedError"
GUARDED = False


def outbox_rows(engine: Engine, idempotency_key: str | None = None) -> list[dict[str, Any]]:
    """The notifications written (for one key, when given), read from the table the template outputs."""
    stack = engine.stack
    assert stack is not None, "start the engine first"
    rows = engine.tables.items(stack.outputs["OutboxTableName"])
    return [r for r in rows if idempotency_key is None or r.get("idempotencyKey") == idempotency_key]


def effects(engine: Engine, key: str) -> int:
    return engine.workflow.effects(key)  # where the template's Metadata.Idemflow.Effects says
