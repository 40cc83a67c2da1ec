"""What the engine's fixes and engine changes to moto offer their callers: recorded delays, AWS's
timestamps and sizes, waiting for an execution, the locks and marks the engine reads moto's state under.

The wait-time scale and the executions' clock are the engine's state (:mod:`idemflow.engine.state`).

The changes themselves are in the registry (``idemflow/engine/registry.py``) and their code in
``idemflow/engine/changes/``; each name here is documented where it is defined.
"""

from __future__ import annotations

from idemflow.engine.changes.clock import (
    RecordedDelay,
    aws_timestamp,
    clear_recorded_delays,
    parse_rfc3339,
    recorded_delays,
)
from idemflow.engine.changes.dynamodb import DYNAMODB_EXCEPTION_CLASSES, DYNAMODB_LOCK, dynamodb_error_name
from idemflow.engine.changes.executions import THREAD_ATTR, execution_output_text, wait_for_execution
from idemflow.engine.changes.parse_cache import parse_cache_info
from idemflow.engine.changes.payload import MAX_PAYLOAD_BYTES, payload_bytes
from idemflow.engine.changes.sync import LOCAL_ENDPOINT_CLIENT_CONFIG

__all__ = [
    "DYNAMODB_EXCEPTION_CLASSES",
    "DYNAMODB_LOCK",
    "LOCAL_ENDPOINT_CLIENT_CONFIG",
    "MAX_PAYLOAD_BYTES",
    "THREAD_ATTR",
    "RecordedDelay",
    "aws_timestamp",
    "clear_recorded_delays",
    "dynamodb_error_name",
    "execution_output_text",
    "parse_cache_info",
    "parse_rfc3339",
    "payload_bytes",
    "recorded_delays",
    "wait_for_execution",
]
