"""The workflow's vocabulary, in one place.

Record statuses, the error names the state machine fails with, and the limits that the definition
cannot check itself (enforced by the entry points). The ASL file, the documentation and the tests use
these exact words, and a unit test fails when one of them drifts.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any

STATE_MACHINE_LOGICAL_ID = "IdempotentStateMachine"
IDEMPOTENCY_TABLE_LOGICAL_ID = "IdempotencyTable"
IDEMPOTENCY_TABLE_SUBSTITUTION = "IdempotencyTableName"
"""The DefinitionSubstitutions entry naming the table the workflow keeps its records in."""
SIDE_EFFECT_SUBSTITUTION = "SideEffectFunctionArn"
SIDE_EFFECT_STATE_MACHINE_SUBSTITUTION = "SideEffectStateMachineArn"
SIDE_EFFECT_KIND_SUBSTITUTION = "SideEffectKind"
"""``function`` or ``stateMachine``: which side effect the definition runs (template.yaml's DefinitionSubstitutions)."""
"""The DefinitionSubstitutions entry (and template parameter) naming the function the workflow wraps."""
SAMPLE_EVENT = Path("events") / "event.json"
"""A template's sample execution input, relative to the template's directory (as ``sam init`` lays out
``events/event.json``): ``idemflow run``, ``serve`` and ``demo`` send its payload when none is given."""


def sample_event(template: Path) -> Path:
    """Where the sample execution input of ``template`` is."""
    return template.resolve().parent / SAMPLE_EVENT


def sample_payload(template: Path) -> Any:
    """The payload of ``template``'s sample event (OSError, ValueError or KeyError when there is none)."""
    return json.loads(sample_event(template).read_text(encoding="utf-8"))["payload"]


class RecordStatus(StrEnum):
    """The ``status`` attribute of an idempotency record."""

    IN_PROGRESS = "IN_PROGRESS"
    """A lock: an execution owns the key and is running the side effect (or died doing so)."""
    COMPLETED = "COMPLETED"
    """The side effect succeeded; ``result`` holds its output unless ``resultStored`` is false."""


class WorkflowError(StrEnum):
    """Error names an execution fails with (besides the side effect's own errors)."""

    KEY_INVALID = "IdempotencyKeyInvalid"
    PAYLOAD_INVALID = "IdempotencyPayloadInvalid"
    KEY_REUSED = "IdempotencyKeyReused"
    IN_PROGRESS = "IdempotencyInProgress"
    RECORD_INVALID = "IdempotencyRecordInvalid"
    LOCK_LOST = "IdempotencyLockLost"
    RESULT_NOT_SAVED = "IdempotencyResultNotSaved"
    OUTCOME_UNKNOWN = "IdempotencyOutcomeUnknown"


NEEDS_A_PERSON = (
    WorkflowError.OUTCOME_UNKNOWN,
    WorkflowError.RESULT_NOT_SAVED,
    WorkflowError.LOCK_LOST,
    WorkflowError.RECORD_INVALID,
)
"""The errors that page someone (docs/runbook.md): the template counts each with a metric filter on the
state machine's log group and alarms on it. The others are a caller's doing, or retried."""


# Limits the definition cannot check (there is no string length in JSONPath): the CLI and the client
# helpers reject input beyond them before an execution starts.
MAX_KEY_LENGTH = 255
"""Like Stripe's keys. The key is hashed, so any string of the grammar works, unicode included."""
KEY_RULE = (
    f"an idempotency key is 1 to {MAX_KEY_LENGTH} characters, with no control character and no whitespace at "
    "either end (an HTTP Idempotency-Key header: printable ASCII, optionally as a quoted string)"
)
"""The key grammar in one sentence, as every entry point's refusal (IdempotencyKeyInvalid) states it
(docs/contract.md, "Keys"): the workflow checks what JSONPath can (a non-empty string, no space or tab at either
end), the HTTP door and the CLI and client the rest."""
MAX_PAYLOAD_JSON_CHARS = 10_000
"""States.Hash (the payload fingerprint) accepts at most 10,000 characters of input on AWS."""
PAYLOAD_TOO_LARGE = "IdempotencyPayloadTooLarge"
"""The entry points' name for a payload over what the workflow fingerprints (MAX_PAYLOAD_JSON_CHARS): the CLI
and client refuse it, the HTTP door answers 413, the doors' intake dead-letters it. The workflow itself fails
such an execution with States.Runtime in DeriveKeys (States.Hash's limit), which nothing can catch."""


# -- The side-effect contract: what the wrapped function receives, returns and raises ------------------
# (docs/contract.md, "The side-effect contract"; each is checked against the definition by a unit test.)
SIDE_EFFECT_REQUEST_FIELDS = ("idempotencyKey", "payload", "executionId", "attempt")
"""The event the function is invoked with: the execution's key and payload as sent, the execution's ARN
(``$$.Execution.Id``) and the state's retry count (0 on the first attempt of an execution)."""

LAMBDA_TRANSIENT_ERRORS = (
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
)
"""Lambda's own transient errors, retried (up to 4 times, backoff with full jitter). All but throttling
may come after the handler ran: without the function's guard, such a retry can repeat the effect."""

TIMEOUT_ERROR = "Sandbox.Timedout"
"""The function ran out of its Timeout: retried with the ``SideEffectTransientError`` parameter's error
(up to 3 times), then the outcome is unknown and the key is kept."""

STILL_RUNNING_ERROR = "IdempotencyAlreadyInProgressError"
"""The function's own guard saw an earlier invocation still running (Powertools' name): retried without
jitter for longer than the function's Timeout, then the outcome is unknown."""

OUTCOME_UNKNOWN_ERRORS = (
    STILL_RUNNING_ERROR,
    TIMEOUT_ERROR,
    "States.Timeout",
    "Runtime.ExitError",
    "Lambda.Unknown",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
)
"""Errors after which the effect may have happened (once their retries, if any, are spent): the key is
kept until its lease ends (``IdempotencyOutcomeUnknown``). Any other error is the function's own, says
the effect did not happen, and releases the key."""

MAX_STATE_PAYLOAD_BYTES = 262_144
"""Step Functions' quota per state input and output (UTF-8 JSON). A result near it completes the record
without the result (``resultStored: false``); docs/performance.md, "Limits", gives the boundaries."""
