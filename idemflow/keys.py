"""The record key and payload fingerprint, computed as the state machine computes them.

The definition derives them with intrinsics (``States.Hash``, ``States.JsonToString``); this module is
the same derivation in Python, for the CLI's ``record`` command and for checking input before a start.
``tests/functional`` asserts both agree on the engine.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from idemflow.contract import MAX_KEY_LENGTH, MAX_PAYLOAD_JSON_CHARS, WorkflowError


class IdempotencyKeyInvalidError(ValueError):
    """The key is missing, not a string, empty, or longer than the documented limit."""

    error_name = WorkflowError.KEY_INVALID


class IdempotencyPayloadInvalidError(ValueError):
    """The payload is missing, null, or too large to fingerprint."""

    error_name = WorkflowError.PAYLOAD_INVALID


def record_key(scope: str, idempotency_key: str) -> str:
    """``<scope>#<sha256(scope#key)>``: the partition key of the workflow's record."""
    digest = hashlib.sha256(f"{scope}#{idempotency_key}".encode()).hexdigest()
    return f"{scope}#{digest}"


def canonical_json(payload: Any) -> str:
    """Compact JSON with sorted keys, as entry points send payloads (fingerprints are order-sensitive)."""
    return json.dumps(payload, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def fingerprint(payload: Any) -> str:
    """SHA-256 of the payload as ``States.JsonToString`` writes it (compact, keys in input order)."""
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def check_input(idempotency_key: Any, payload: Any) -> None:
    """The limits the definition cannot check itself, enforced before an execution starts."""
    if not isinstance(idempotency_key, str) or not idempotency_key:
        raise IdempotencyKeyInvalidError("idempotencyKey must be a non-empty string")
    if len(idempotency_key) > MAX_KEY_LENGTH:
        raise IdempotencyKeyInvalidError(
            f"idempotencyKey is {len(idempotency_key)} characters long; at most {MAX_KEY_LENGTH} are accepted"
        )
    if payload is None:
        raise IdempotencyPayloadInvalidError("payload must be present and not null")
    # Measured with non-ASCII escaped (\u00e9: six characters for an "é"), the longest way
    # States.JsonToString could write it: how AWS writes non-ASCII is not on record (the engine's
    # `json-to-string` fix says why), and the length that fits when escaped fits when written as it is.
    size = len(json.dumps(payload, separators=(",", ":"), ensure_ascii=True))
    if size > MAX_PAYLOAD_JSON_CHARS:
        raise IdempotencyPayloadInvalidError(
            f"payload is {size} characters of JSON (non-ASCII counted as \\uXXXX escapes); "
            f"at most {MAX_PAYLOAD_JSON_CHARS} can be fingerprinted"
        )
