"""The public contract's exceptions: what a caller of :mod:`idemflow` catches.

The standard library only (with :mod:`idemflow.contract`): a Lambda worker and the CLI's parser import them
without botocore. Re-exported by :mod:`idemflow`, and by :mod:`idemflow.keys` and :mod:`idemflow.client`, which
raise them.
"""

from __future__ import annotations

from idemflow.contract import PAYLOAD_TOO_LARGE, WorkflowError


class IdempotencyKeyInvalidError(ValueError):
    """The key is missing, not a string, or outside the key grammar (:data:`idemflow.contract.KEY_RULE`)."""

    error_name = WorkflowError.KEY_INVALID


class IdempotencyPayloadInvalidError(ValueError):
    """The payload is missing or null."""

    error_name: str = WorkflowError.PAYLOAD_INVALID


class IdempotencyPayloadTooLargeError(IdempotencyPayloadInvalidError):
    """The payload's JSON is over what the workflow fingerprints (States.Hash's 10,000 characters)."""

    error_name = PAYLOAD_TOO_LARGE


class ExecutionTimeoutError(TimeoutError):
    """The execution did not finish before the deadline (it keeps running)."""


class ExecutionNameConflictError(ValueError):
    """The execution name is taken by an execution with another input."""


class ReleaseRefusedError(RuntimeError):
    """``release`` did not delete the lock; the message says why and what to do."""
