"""idemflow: an idempotent workflow for AWS Step Functions, its embedded engine and its CLI.

The public surface, as a user's code and tests need it::

    import idemflow

    idemflow.__version__
    idemflow.WorkflowError.KEY_REUSED, idemflow.RecordStatus.COMPLETED, idemflow.KEY_RULE
    idemflow.check_input(key, payload)           # the key grammar and the payload's limits, before a start
    idemflow.start(sfn, state_machine_arn, key, payload)   # start an execution named for its key (boto3 client)
    idemflow.Engine(...)                         # the embedded engine (loads moto on first use)

The contract's names, its exceptions (:mod:`idemflow.errors`) and the key checks are loaded with the package
(the standard library only); the client's helpers (botocore) and ``Engine`` (moto) when first named.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import TYPE_CHECKING, Any

from idemflow.contract import (
    KEY_RULE,
    MAX_KEY_LENGTH,
    MAX_PAYLOAD_JSON_CHARS,
    PAYLOAD_TOO_LARGE,
    RecordStatus,
    WorkflowError,
)
from idemflow.errors import (
    ExecutionNameConflictError,
    ExecutionTimeoutError,
    IdempotencyKeyInvalidError,
    IdempotencyPayloadInvalidError,
    IdempotencyPayloadTooLargeError,
    ReleaseRefusedError,
)
from idemflow.keys import check_input, record_key

if TYPE_CHECKING:
    from idemflow.client import record, release, start, wait
    from idemflow.engine import Engine, EngineError, ExecutionOutcome

try:
    __version__: str = importlib.metadata.version("idemflow")
except importlib.metadata.PackageNotFoundError:  # a checkout on sys.path, not installed
    __version__ = "0+unknown"

__all__ = [
    "KEY_RULE",
    "MAX_KEY_LENGTH",
    "MAX_PAYLOAD_JSON_CHARS",
    "PAYLOAD_TOO_LARGE",
    "Engine",
    "EngineError",
    "ExecutionNameConflictError",
    "ExecutionOutcome",
    "ExecutionTimeoutError",
    "IdempotencyKeyInvalidError",
    "IdempotencyPayloadInvalidError",
    "IdempotencyPayloadTooLargeError",
    "RecordStatus",
    "ReleaseRefusedError",
    "WorkflowError",
    "__version__",
    "check_input",
    "record",
    "record_key",
    "release",
    "start",
    "wait",
]

# Loaded when first named: the client imports botocore, the engine moto; the contract and the key checks
# import neither (a Lambda worker imports this package before its function does).
_LAZY = {
    **dict.fromkeys(("Engine", "EngineError", "ExecutionOutcome"), "idemflow.engine"),
    **dict.fromkeys(
        ("record", "release", "start", "wait"),
        "idemflow.client",
    ),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
