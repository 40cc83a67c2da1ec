"""StartSyncExecution for EXPRESS state machines (``start-sync-execution``), in-process and through a server.

moto's StepFunctionResponse has no ``start_sync_execution``, so its dispatcher answers 404 "Not yet
implemented" (the LocalStack provider code vendored in moto/stepfunctions/parser/provider.py is never
wired in). The handler added here starts a normal interpreter execution on its own worker thread and
waits for it with a deadline. Routing: on AWS the operation lives on the host
``sync-states.<region>.amazonaws.com``, which matches none of moto's URL patterns, so in-process
(mock_aws) requests fell through to moto's catch-all 404; the host is added to the Step Functions URL
bases and to moto's backend index. moto's server picks the service from the request signature
(``.../states/aws4_request``), not the host, so it needs no routing change, but clients must not prefix
the host: the operation carries the endpoint trait ``hostPrefix: "sync-"``, so botocore sends it to
``http://sync-127.0.0.1:PORT/`` when given ``endpoint_url="http://127.0.0.1:PORT"``, which does not
resolve. Clients of a local endpoint need ``botocore.config.Config(inject_host_prefix=False)``: see
:data:`LOCAL_ENDPOINT_CLIENT_CONFIG`. Sync executions get AWS's Express ARN
(``...:express:<machine>:<name>:<uuid>``) and are not kept in the state machine's execution list: AWS
has no DescribeExecution/ListExecutions for them, their names need not be unique, and moto would keep
the history of each for ever.
"""

from __future__ import annotations

import copy
import datetime
import functools
import json
import math
import re
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from botocore.config import Config
from moto.core.exceptions import AWSError

from idemflow.engine.services.stepfunctions.execution_end import forget_execution
from idemflow.engine.services.stepfunctions.executions import join_execution

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

#: botocore options a Step Functions client needs when it talks to a local endpoint
#: (``endpoint_url=...``): without ``inject_host_prefix=False`` StartSyncExecution goes to
#: ``sync-<host>``. Merge it into the client's config: ``config.merge(LOCAL_ENDPOINT_CLIENT_CONFIG)``.
LOCAL_ENDPOINT_CLIENT_CONFIG: Final[Config] = Config(inject_host_prefix=False)

#: Longest a StartSyncExecution waits for its execution (real seconds): AWS's limit for an Express
#: execution is five minutes. Past it the execution is told to time out and TIMED_OUT is returned.
SYNC_EXECUTION_TIMEOUT_SECONDS: float = 300.0

_SYNC_STATES_URL_BASE: Final[str] = r"https?://sync-states\.(.+)\.amazonaws.com"


class StateMachineTypeNotSupported(AWSError):
    """AWS's answer to StartSyncExecution on a STANDARD state machine."""

    TYPE = "StateMachineTypeNotSupported"
    STATUS = 400


def _billed(start: datetime.datetime, stop: datetime.datetime) -> dict[str, int]:
    # Express billing: duration rounded up to 100 ms, memory in 64 MB steps (small payloads: 64).
    milliseconds = max(1, math.ceil((stop - start).total_seconds() * 1000))
    return {
        "billedMemoryUsedInMB": 64,
        "billedDurationInMilliseconds": math.ceil(milliseconds / 100) * 100,
    }


def _backend_start_sync_execution(
    self: Any,
    state_machine_arn: str,
    name: str | None = None,
    execution_input: str | None = None,
    trace_header: str | None = None,
) -> dict[str, Any]:
    from moto.stepfunctions.exceptions import InvalidExecutionInput
    from moto.stepfunctions.parser.api import ExecutionStatus, StateMachineType
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str
    from moto.stepfunctions.parser.backend.execution import Execution

    # A request without stateMachineArn never gets here: ``required-members`` (validation.py) refuses it as AWS
    # does, for every operation.
    state_machine: Any = self.describe_state_machine(state_machine_arn)
    if state_machine.type != StateMachineType.EXPRESS.value:
        raise StateMachineTypeNotSupported("This operation is not supported by this type of state machine")
    if name:
        self._validate_name(name)
    exec_name = name or str(uuid.uuid4())
    input_text = "{}" if execution_input is None else execution_input
    try:
        json.loads(input_text)
    except ValueError as error:
        raise InvalidExecutionInput(f"Invalid State Machine Execution Input: '{error}'") from error

    # Same snapshot as moto's start_execution: without the executions (live threads, locks)
    # and sharing the backend.
    clone: Any = copy.deepcopy(
        state_machine,
        {id(state_machine.executions): [], id(state_machine.backend): state_machine.backend},
    )
    # moto sets every state machine's `sm_type` to STANDARD (the real type is `type`).
    clone.sm_type = StateMachineType.EXPRESS
    execution_arn = (
        f"arn:{self.partition}:states:{self.region_name}:{self.account_id}:"
        f"express:{state_machine.name}:{exec_name}:{uuid.uuid4()}"
    )
    execution: Any = Execution(
        name=exec_name,
        sm_type=clone.sm_type,
        role_arn=clone.roleArn,
        exec_arn=execution_arn,
        account_id=self.account_id,
        region_name=self.region_name,
        state_machine=clone,
        start_date=datetime.datetime.now(tz=datetime.UTC),
        cloud_watch_logging_session=None,
        input_data=input_text,
        trace_header=trace_header,
        activity_store={},
    )
    execution.start()
    if not join_execution(execution, SYNC_EXECUTION_TIMEOUT_SECONDS):
        env = execution.exec_worker.env
        if env is not None:
            env.set_timed_out()
        if not join_execution(execution, 1.0):  # stuck in a call that ignores the interpreter's state
            execution.exec_status = ExecutionStatus.TIMED_OUT
            execution.stop_date = datetime.datetime.now(tz=datetime.UTC)

    # Nobody waits on an Express execution's end but this call: its event would be kept (up to
    # execution_end's bound) for an ARN no API accepts.
    forget_execution(execution_arn)
    status = execution.exec_status
    stop_date: datetime.datetime = execution.stop_date or datetime.datetime.now(tz=datetime.UTC)
    if status == ExecutionStatus.SUCCEEDED:
        sync_status = "SUCCEEDED"
    elif status == ExecutionStatus.TIMED_OUT:
        sync_status = "TIMED_OUT"
    else:  # FAILED, ABORTED, or a worker thread that died without reporting
        sync_status = "FAILED"
        if status == ExecutionStatus.RUNNING and execution.error is None:
            execution.error = "States.Runtime"
            execution.cause = "The execution's interpreter thread ended without a result."
    response: dict[str, Any] = {
        "executionArn": execution_arn,
        "stateMachineArn": state_machine.arn,
        "name": exec_name,
        "startDate": execution.start_date,
        "stopDate": stop_date,
        "status": sync_status,
        "input": input_text,
        "inputDetails": {"included": True},
        "billingDetails": _billed(execution.start_date, stop_date),
    }
    if sync_status == "SUCCEEDED":
        response["output"] = to_json_str(execution.output, separators=(",", ":"))
        response["outputDetails"] = {"included": True}
    if execution.error is not None:
        response["error"] = execution.error
    if execution.cause is not None:
        response["cause"] = execution.cause
    if trace_header:
        response["traceHeader"] = trace_header
    return response


def _response_start_sync_execution(self: Any) -> Any:
    from moto.core.responses import ActionResult
    from moto.stepfunctions.exceptions import ValidationException

    backend = self.stepfunction_backend
    start_sync = getattr(backend, "start_sync_execution", None)
    if start_sync is None:
        raise ValidationException(
            "StartSyncExecution needs moto's config {'stepfunctions': {'execute_state_machine': True}}"
        )
    result = start_sync(
        state_machine_arn=self._get_param("stateMachineArn"),
        name=self._get_param("name"),
        execution_input=self._get_param("input"),
        trace_header=self._get_param("traceHeader"),
    )
    return ActionResult(result)


def _refusing_express(backend: type, name: str) -> Callable[..., Any]:
    """``backend``'s operation ``name`` refusing an Express execution's ARN. The operation is looked up at each
    call (the backend's own, else the one it inherits), so that a change installed later on the base class, as
    ``execution-index``'s, is the one that runs."""
    from moto.stepfunctions.exceptions import InvalidArn

    own: Callable[..., Any] | None = backend.__dict__.get(name)
    base = backend.__mro__[1]

    @functools.wraps(getattr(backend, name))
    def refusing(self: Any, execution_arn: str, *args: Any, **kwargs: Any) -> Any:
        if execution_arn.split(":")[5:6] == ["express"]:
            raise InvalidArn("Invalid Arn: 'Resource type not valid in this context: express'")
        operation = own if own is not None else getattr(base, name)
        return operation(self, execution_arn, *args, **kwargs)

    return refusing


def install_start_sync_execution(patch: Patch) -> None:
    import moto.backend_index as backend_index
    import moto.stepfunctions.urls as sfn_urls
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend
    from moto.stepfunctions.responses import StepFunctionResponse

    patch.set(StepFunctionsParserBackend, "start_sync_execution", _backend_start_sync_execution)
    patch.set(StepFunctionResponse, "start_sync_execution", _response_start_sync_execution)
    patch.append(sfn_urls.url_bases, _SYNC_STATES_URL_BASE)
    # re.Pattern objects compare equal by pattern and flags, so append adds this only once.
    patch.append(backend_index.backend_url_patterns, ("stepfunctions", re.compile(_SYNC_STATES_URL_BASE)))
    # The Standard-only operations refuse an Express execution's ARN as AWS does (recorded: LocalStack's
    # AWS-validated test_sfn_api_express.py::test_start_async_describe_history_execution, 03-07-2024):
    # InvalidArn "Invalid Arn: 'Resource type not valid in this context: express'". moto looks the
    # ARN up among Standard executions and answers ExecutionDoesNotExist.
    for operation in ("describe_execution", "stop_execution", "get_execution_history"):
        patch.set(StepFunctionsParserBackend, operation, _refusing_express(StepFunctionsParserBackend, operation))
