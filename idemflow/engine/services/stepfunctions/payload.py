"""Payload sizes as AWS measures them (``payload-size``), and the execution input's limit (``input-size``).

AWS: "262,144 bytes of data as a UTF-8 encoded string" for a task's, a state's or an execution's input
or output (service quotas page), "Maximum length of 262144" bytes in UTF-8 (API reference,
LambdaFunctionSucceededEventDetails), checked on a connector's output, a state's output and "after
Parameters processing, the input of a state" (concepts-error-handling, States.DataLimitExceeded). moto
measures json.dumps(value) with its defaults: non-ASCII escaped as \\uXXXX (6 bytes for a 2-byte "é") and
", " / ": " separators, and requires strictly less than 262,144; and it never checks a task's input after
Parameters. Both are corrected: quotas.is_within_size_quota (imported by name into the three modules
that call it) measures compact UTF-8 JSON, and every optimized integration's parameters are checked
before its request, as a TaskFailed States.DataLimitExceeded. (A DynamoDB task reports that failure
under its own name only with ``dynamodb-task-failures``: ``idemflow/engine/services/stepfunctions/dynamodb_tasks.py``.)

``input-size`` (fix): StartExecution's and StartSyncExecution's ``input``: "Length constraints apply to the
payload size, and are expressed as bytes in UTF-8 encoding. Length Constraints: Maximum length of 262144"
(API reference, both operations). A request over it fails the service's input validation (Common Errors:
ValidationException, 400) and starts nothing. moto 5.2.5 starts the execution with any input; its first
state then fails States.DataLimitExceeded, and a pipe or a rule that started it has already let the
message or event go.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from idemflow.contract import MAX_STATE_PAYLOAD_BYTES

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

MAX_PAYLOAD_BYTES: Final = MAX_STATE_PAYLOAD_BYTES  # defined once, in the contract


def payload_bytes(value: Any) -> int:
    """The size Step Functions counts: UTF-8 bytes of the value as compact JSON (a string as it is)."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return len(text.encode("utf-8"))


def _is_within_size_quota(value: Any) -> bool:
    return payload_bytes(value) <= MAX_PAYLOAD_BYTES


def input_too_large(execution_input: str | None) -> str | None:
    """AWS's ValidationException message for a StartExecution or StartSyncExecution ``input`` over the limit,
    None when it fits."""
    if execution_input is None or payload_bytes(execution_input) <= MAX_PAYLOAD_BYTES:
        return None
    return (
        "1 validation error detected: Value at 'input' failed to satisfy constraint: Member must have size "
        f"less than or equal to {MAX_PAYLOAD_BYTES} bytes in UTF-8 encoding"
    )


def install_input_size(patch: Patch) -> None:
    from moto.stepfunctions.exceptions import ValidationException
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    # Every start arrives at the backend (moto's HTTP handler, the engine's in-process start, a pipe's or a
    # rule's start, a states:startExecution task): the limit is checked there, before anything else.
    for operation in ("start_execution", "start_sync_execution"):
        start: Callable[..., Any] | None = getattr(StepFunctionsParserBackend, operation, None)
        if start is None:  # start_sync_execution comes with the start-sync-execution fix
            continue

        @functools.wraps(start)
        def refusing(
            self: Any,
            state_machine_arn: str,
            name: Any = None,
            execution_input: str | None = None,
            *args: Any,
            _start: Callable[..., Any] = start,
            **kwargs: Any,
        ) -> Any:
            refused = input_too_large(execution_input)
            if refused is not None:
                raise ValidationException(refused)
            return _start(self, state_machine_arn, name, execution_input, *args, **kwargs)

        patch.set(StepFunctionsParserBackend, operation, refusing)


def install_payload_size(patch: Patch) -> None:
    from moto.stepfunctions.parser import quotas
    from moto.stepfunctions.parser.asl.component.state import state as state_module
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import state_task_lambda
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service

    for module in (quotas, state_module, state_task_lambda, state_task_service):
        patch.set(module, "is_within_size_quota", _is_within_size_quota)
    # Every optimized integration (DynamoDB, Lambda invoke) passes _before_eval_execution with its
    # effective input after Parameters, before its request: the place AWS's check fails the task.
    service = state_task_service.StateTaskService
    before: Callable[..., Any] = service.__dict__["_before_eval_execution"]

    @functools.wraps(before)
    def _before_eval_execution(self: Any, env: Any, resource_runtime_part: Any, raw_parameters: Any, **kw: Any) -> Any:
        self._verify_size_quota(env=env, value=raw_parameters)
        return before(self, env=env, resource_runtime_part=resource_runtime_part, raw_parameters=raw_parameters, **kw)

    patch.set(service, "_before_eval_execution", _before_eval_execution)
