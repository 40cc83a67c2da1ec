"""Step Functions Local's ``<arn>#<TestCase>`` starts on moto (``mock-config``, a hook).

``mock_config.py`` (beside this module) loads the mock configuration file, the engine keeps it in its state
(:mod:`idemflow.engine.state`); this hook wires it into moto 5.2.5,
whose interpreter evaluates mocked responses but whose wiring around them is stubbed. Three points:

1. ``StepFunctionsParserBackend.start_execution``: strips ``#TestCase`` from the ARN, looks the test
   case up by the state machine's *name* (like Step Functions Local) and fails StartExecution with
   ``InvalidName`` naming the test case when it is unknown (or no file is loaded); the execution is then
   started on the real state machine, so describe, list and history need nothing more. A start without
   ``#``, or on an engine without a mock configuration, is moto's own;
2. ``Execution._get_start_execution_worker``: gives that one execution's worker its test case (handed
   over in a thread-local: the worker is built on the thread that serves StartExecution). Executions
   started without ``#`` keep running for real;
3. ``Environment.get_current_mocked_response``: which response an invocation gets. moto indexes the
   responses by ``$$.State.RetryCount``, which restarts at 0 every time a state is entered, so a state
   entered twice in a loop replays attempt 0 forever. Step Functions Local keeps one counter per state
   per execution and advances it on every invocation, retries included: a polling loop can read
   "IN_PROGRESS" at attempt 0 and "COMPLETED" at attempt 1. LocalStack fixed the same bug upstream
   (localstack/localstack#13693, after moto vendored the code).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from idemflow.engine import state
from idemflow.engine.services.stepfunctions import mock_config

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

_pending = threading.local()  # the test case of the execution being started on this thread


def install_mock_config(patch: Patch) -> None:
    from moto.stepfunctions.exceptions import InvalidName
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.eval.environment import Environment
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
    from moto.stepfunctions.parser.backend.execution import Execution
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    start: Callable[..., Any] = StepFunctionsParserBackend.start_execution
    start_worker: Callable[..., Any] = Execution._get_start_execution_worker
    mocked_response: Callable[..., Any] = Environment.get_current_mocked_response

    def start_execution(
        self: Any, state_machine_arn: str, name: Any = None, execution_input: Any = None, trace_header: Any = None
    ) -> Any:
        base_arn, hashed, case_name = state_machine_arn.partition("#")
        attached = state.current()
        if not hashed or not attached.mock_config_source:
            return start(self, state_machine_arn, name, execution_input, trace_header)
        state_machine = self.describe_state_machine(base_arn)  # InvalidArn / StateMachineDoesNotExist as usual
        config = attached.mock_config
        if config is None:
            raise InvalidName(
                f"Invalid mock test case name '{case_name}' for state machine '{state_machine.name}': no mock "
                f"configuration file is loaded ({attached.mock_config_source})"
            )
        try:
            test_case = config.test_case(state_machine.name, case_name)
        except KeyError as exc:
            raise InvalidName(
                f"Invalid mock test case name '{case_name}' for state machine '{state_machine.name}': {exc.args[0]}"
            ) from exc
        _pending.test_case = test_case
        try:
            return start(self, base_arn, name, execution_input, trace_header)
        finally:
            _pending.test_case = None

    def _get_start_execution_worker(self: Any) -> Any:
        worker = start_worker(self)
        test_case = getattr(_pending, "test_case", None)
        if test_case is not None:
            _pending.test_case = None  # this execution only
            # Read by ExecutionWorker._get_evaluation_environment on the worker's own thread, which
            # Execution.start starts only after this returns.
            worker._mock_test_case = test_case
        return worker

    def get_current_mocked_response(self: Any) -> Any:
        test_case = self.mock_test_case
        if not isinstance(test_case, mock_config.ExecutionTestCase) or not self.is_mocked_mode():
            return mocked_response(self)
        state = self.next_state_name
        attempt, responses, response = test_case.next_response(state)
        if response is not None:
            return response
        # Like Step Functions Local: the execution fails when a mocked state has no response left.
        cause = (
            f"test case '{test_case.test_case_name}': state '{state}' was invoked {attempt + 1} times, but mocked "
            f"response '{responses.mocked_response_name}' defines attempts 0-{len(responses.mocked_responses) - 1}"
        )
        runtime = StatesErrorNameType.StatesRuntime
        raise FailureEventException(
            failure_event=FailureEvent(
                env=self,
                error_name=StatesErrorName(typ=runtime),
                event_type=HistoryEventType.TaskFailed,
                # EventDetails is a total TypedDict in moto's stubs; moto itself builds it with one key.
                event_details=cast(
                    EventDetails,
                    {"taskFailedEventDetails": TaskFailedEventDetails(error=runtime.to_name(), cause=cause)},
                ),
            )
        )

    patch.set(StepFunctionsParserBackend, "start_execution", start_execution)
    patch.set(Execution, "_get_start_execution_worker", _get_start_execution_worker)
    patch.set(Environment, "get_current_mocked_response", get_current_mocked_response)
