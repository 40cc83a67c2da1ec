"""The record key and payload fingerprint, computed as the state machine computes them.

The definition derives them with intrinsics (``States.Hash``, ``States.JsonToString``); this module is
the same derivation in Python, for the CLI's ``record`` command and for checking input before a start.
The functional tests assert both agree on the engine.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from idemflow.contract import KEY_RULE, MAX_KEY_LENGTH, MAX_PAYLOAD_JSON_CHARS

# Raised here, defined with the contract's other exceptions; re-exported for callers of this module.
from idemflow.errors import IdempotencyKeyInvalidError as IdempotencyKeyInvalidError
from idemflow.errors import IdempotencyPayloadInvalidError as IdempotencyPayloadInvalidError
from idemflow.errors import IdempotencyPayloadTooLargeError as IdempotencyPayloadTooLargeError


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


def key_problem(idempotency_key: Any) -> str | None:
    """What is wrong with a key under the key grammar, None when it is a key."""
    if not isinstance(idempotency_key, str):
        return f"idempotencyKey must be a string ({KEY_RULE})"
    if not idempotency_key:
        return f"idempotencyKey is empty ({KEY_RULE})"
    if len(idempotency_key) > MAX_KEY_LENGTH:
        return f"idempotencyKey is {len(idempotency_key)} characters long ({KEY_RULE})"
    if idempotency_key != idempotency_key.strip():
        # Never trimmed into another key: " k" and "k" would be two records, two side effects.
        return f"idempotencyKey {idempotency_key!r} has whitespace at an end ({KEY_RULE})"
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in idempotency_key):
        return f"idempotencyKey {idempotency_key!r} has a control character ({KEY_RULE})"
    return None


def check_input(idempotency_key: Any, payload: Any) -> None:
    """The key grammar and the limits the definition cannot check itself, enforced before an execution starts."""
    problem = key_problem(idempotency_key)
    if problem is not None:
        raise IdempotencyKeyInvalidError(problem)
    if payload is None:
        raise IdempotencyPayloadInvalidError("payload must be present and not null")
    # Measured with non-ASCII escaped (\u00e9: six characters for an "é"), the longest way
    # States.JsonToString could write it: how AWS writes non-ASCII is not on record (the engine's
    # `json-to-string` fix says why), and the length that fits when escaped fits when written as it is.
    size = len(json.dumps(payload, separators=(",", ":"), ensure_ascii=True))
    if size > MAX_PAYLOAD_JSON_CHARS:
        raise IdempotencyPayloadTooLargeError(
            f"payload is {size} characters of JSON (non-ASCII counted as \\uXXXX escapes); "
            f"at most {MAX_PAYLOAD_JSON_CHARS} can be fingerprinted"
        )
