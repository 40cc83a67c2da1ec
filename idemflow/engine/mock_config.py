"""Step Functions Local's mocked service integrations (``MockConfigFile.json``) on the embedded engine.

Step Functions Local reads a mock configuration file (``SFN_MOCK_CONFIG``) and runs an execution in
*mocked mode* when StartExecution is given ``<state machine ARN>#<TestCase>``: each Task state the test
case names returns (``Return``) or fails with (``Throw``) the mocked response for that invocation
instead of calling its service; the other states run as usual. The execution belongs to the real state
machine: its ARN is ``...:execution:<state machine name>:<execution name>``, without the test case.

moto 5.2.5's interpreter (a port of LocalStack's) already evaluates mocked responses
(``asl/component/state/exec/state_task/mock_eval_utils.py``, ``Environment.mock_test_case``), but the
wiring around it is stubbed: ``mocking.mock_config.load_mock_test_case_for`` always returns None, the
backend's ``start_execution`` does not know the ``#TestCase`` suffix, and
``Execution._get_start_execution_worker`` never hands a test case to its ``ExecutionWorker``. This
module loads and validates the file itself (building moto's own models: ``MockedResponseReturn``,
``MockedResponseThrow``, ``StateMockedResponses``, ``MockTestCase``) and patches four points:

1. ``StepFunctionsParserBackend.start_execution``: strips ``#TestCase`` from the ARN, looks the test
   case up by the state machine's *name* (like Step Functions Local) and fails StartExecution with
   ``InvalidName`` naming the test case when it is unknown; the execution is then started on the real
   state machine, so describe, list and history need nothing more;
2. ``Execution._get_start_execution_worker``: gives that one execution's worker its test case (handed
   over in a thread-local: the worker is built on the thread that serves StartExecution). Executions
   started without ``#`` keep running for real;
3. ``Environment.get_current_mocked_response``: which response an invocation gets. moto indexes the
   responses by ``$$.State.RetryCount``, which restarts at 0 every time a state is entered, so a state
   entered twice in a loop replays attempt 0 forever. Step Functions Local keeps one counter per state
   per execution and advances it on every invocation, retries included: a polling loop can read
   "IN_PROGRESS" at attempt 0 and "COMPLETED" at attempt 1. LocalStack fixed the same bug upstream
   (localstack/localstack#13693, after moto vendored the code);
4. (in ``patches.py``, patch 8, which every engine applies) ``StateTaskServiceDynamoDB._from_error``
   turned every exception that is not a botocore ``ClientError`` into
   ``DynamoDB.AmazonDynamoDBException``, including the failure a mocked ``Throw`` raises, so a mocked
   ``DynamoDB.ConditionalCheckFailedException`` reached the state's Catch under another name.

A ``Throw`` raises a task failure whose error name is the configured ``Error`` verbatim (moto's
``CustomErrorName``): it must be spelled as the real integration reports it, e.g.
``DynamoDB.ConditionalCheckFailedException`` (optimized integration) or the function's ``errorType``
for ``lambda:invoke``, or the state's Retry and Catch will not match it. A ``Return`` is the task's
raw result, before ResultSelector: ``{"StatusCode": 200, "Payload": ...}`` for ``lambda:invoke``,
``{"Item": {...}}`` (DynamoDB JSON) for ``dynamodb:getItem``.

The loader is stricter than Step Functions Local: every attempt of a mocked response must be numbered
consecutively from 0, and each attempt holds exactly one ``Return`` or ``Throw`` (``Throw`` with string
``Error`` and ``Cause``); a file that breaks a rule is rejected when it is installed, with the test
case, state or mocked response named. A state that runs out of attempts fails with ``States.Runtime``
(Step Functions Local fails the execution; note that moto's ``States.ALL`` also catches
``States.Runtime``, which AWS's does not).

:func:`install` / :func:`uninstall` are idempotent and keep moto's originals; ``tests/functional/
test_mock_config.py`` shows each patch is needed.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from moto.stepfunctions.exceptions import InvalidName
from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
    FailureEvent,
    FailureEventException,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import StatesErrorNameType
from moto.stepfunctions.parser.asl.eval.environment import Environment
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
from moto.stepfunctions.parser.backend.execution import Execution
from moto.stepfunctions.parser.mocking.mock_config import (
    MockedResponse,
    MockedResponseReturn,
    MockedResponseThrow,
    MockTestCase,
    StateMockedResponses,
)
from moto.stepfunctions.parser.models import StepFunctionsParserBackend

__all__ = [
    "ENV_VAR",
    "MockConfig",
    "MockConfigError",
    "install",
    "is_installed",
    "load",
    "loaded",
    "original",
    "patch_points",
    "uninstall",
]

#: The variable Step Functions Local reads the file's path from; used by ``install(None)``.
ENV_VAR: Final[str] = "SFN_MOCK_CONFIG"

_ATTEMPTS = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")
_TOP_LEVEL: Final = frozenset({"StateMachines", "MockedResponses"})


class MockConfigError(ValueError):
    """The mock configuration file is unusable; the message names the file and the faulty entry."""


@dataclass(frozen=True)
class MockConfig:
    """A validated mock configuration file."""

    path: Path
    test_cases: Mapping[str, Mapping[str, Mapping[str, str]]]
    """state machine name -> test case name -> state name -> mocked response name."""
    responses: Mapping[str, tuple[MockedResponse, ...]]
    """mocked response name -> its attempt ranges, in order (moto's models)."""

    def test_case(self, state_machine_name: str, test_case_name: str) -> _ExecutionTestCase:
        """A fresh test case for one execution (it carries that execution's invocation counters)."""
        cases = self.test_cases.get(state_machine_name)
        if cases is None:
            machines = ", ".join(sorted(self.test_cases)) or "none"
            raise KeyError(
                f"{self.path.name} has no test cases for state machine '{state_machine_name}' "
                f"(state machines in StateMachines: {machines})"
            )
        states = cases.get(test_case_name)
        if states is None:
            known = ", ".join(sorted(cases)) or "none"
            raise KeyError(
                f"{self.path.name} defines no test case '{test_case_name}' for state machine "
                f"'{state_machine_name}' (its test cases: {known})"
            )
        return _ExecutionTestCase(
            state_machine_name=state_machine_name,
            test_case_name=test_case_name,
            state_mocked_responses_list=[
                StateMockedResponses(
                    state_name=state, mocked_response_name=name, mocked_responses=list(self.responses[name])
                )
                for state, name in states.items()
            ],
        )


class _ExecutionTestCase(MockTestCase):
    """moto's MockTestCase plus Step Functions Local's per-state invocation counters (one execution)."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._lock = threading.Lock()
        self._invocations: dict[str, int] = {}

    def next_response(self, state_name: str) -> tuple[int, StateMockedResponses, MockedResponse | None]:
        """This invocation's attempt number and response (None: the mocked response has no such attempt)."""
        responses: StateMockedResponses = self.state_mocked_responses[state_name]
        with self._lock:  # Map and Parallel branches share the counters, as in Step Functions Local
            attempt = self._invocations.get(state_name, 0)
            self._invocations[state_name] = attempt + 1
        if attempt >= len(responses.mocked_responses):
            return attempt, responses, None
        response: MockedResponse = responses.mocked_responses[attempt]
        return attempt, responses, response


# --------------------------------------------------------------------------------------------
# Loading and validation
# --------------------------------------------------------------------------------------------


def load(path: Path) -> MockConfig:
    """Read and validate a mock configuration file (raises :class:`MockConfigError`)."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise MockConfigError(f"cannot read the mock configuration file {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise MockConfigError(f"{path}: not valid JSON: {exc}") from exc
    return _parse(Path(path), raw)


def _fail(path: Path, where: str, message: str) -> MockConfigError:
    return MockConfigError(f"{path.name}: {where}: {message}")


def _object(path: Path, where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, where, f"must be a JSON object, not {type(value).__name__}")
    return value


def _parse(path: Path, raw: Any) -> MockConfig:
    root = _object(path, "the file", raw)
    unknown = sorted(set(root) - _TOP_LEVEL)
    if unknown:
        raise _fail(
            path,
            "the file",
            f"unknown top-level field(s) {', '.join(unknown)}: only StateMachines and MockedResponses are allowed",
        )
    responses = {
        name: _mocked_response(path, name, value)
        for name, value in _object(path, "MockedResponses", root.get("MockedResponses", {})).items()
    }
    test_cases: dict[str, dict[str, dict[str, str]]] = {}
    for machine, machine_value in _object(path, "StateMachines", root.get("StateMachines", {})).items():
        where = f"StateMachines.{machine}"
        body = _object(path, where, machine_value)
        if set(body) != {"TestCases"}:
            raise _fail(path, where, "must hold exactly one field, TestCases")
        cases: dict[str, dict[str, str]] = {}
        for case, case_value in _object(path, f"{where}.TestCases", body["TestCases"]).items():
            states: dict[str, str] = {}
            for state, name in _object(path, f"{where}.TestCases.{case}", case_value).items():
                state_where = f"test case '{case}', state '{state}'"
                if not isinstance(name, str):
                    raise _fail(path, state_where, "the value must be the name of a mocked response (a string)")
                if name not in responses:
                    raise _fail(path, state_where, f"mocked response '{name}' is not defined in MockedResponses")
                states[state] = name
            cases[case] = states
        test_cases[machine] = cases
    config = MockConfig(path=path, test_cases=test_cases, responses=responses)
    # Build every test case once with moto's own models, so that what moto rejects fails here.
    for machine, cases in test_cases.items():
        for case in cases:
            try:
                config.test_case(machine, case)
            except (ValueError, RuntimeError) as exc:
                raise _fail(path, f"state machine '{machine}', test case '{case}'", str(exc)) from exc
    return config


def _attempts(path: Path, where: str, key: str) -> tuple[int, int]:
    match = _ATTEMPTS.match(key)
    if match is None:
        raise _fail(
            path, where, f"'{key}' is not an attempt number: use '0', '1', ... or an inclusive range like '1-2'"
        )
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) is not None else start
    if end < start:
        raise _fail(path, where, f"range '{key}' ends before it starts")
    return start, end


def _mocked_response(path: Path, name: str, value: Any) -> tuple[MockedResponse, ...]:
    where = f"mocked response '{name}'"
    attempts = _object(path, where, value)
    if not attempts:
        raise _fail(path, where, "defines no attempt: give at least '0'")
    parsed: list[MockedResponse] = []
    for key, entry in attempts.items():
        entry_where = f"{where}, attempt '{key}'"
        start, end = _attempts(path, entry_where, key)
        body = _object(path, entry_where, entry)
        if len(body) != 1 or next(iter(body)) not in ("Return", "Throw"):
            raise _fail(
                path,
                entry_where,
                f"must hold exactly one field, Return or Throw (found: {', '.join(body) or 'nothing'})",
            )
        try:
            if "Return" in body:
                parsed.append(MockedResponseReturn(range_start=start, range_end=end, payload=body["Return"]))
                continue
            throw = _object(path, f"{entry_where}, Throw", body["Throw"])
            if set(throw) != {"Error", "Cause"} or not all(isinstance(v, str) for v in throw.values()):
                raise _fail(path, f"{entry_where}, Throw", "must hold exactly Error and Cause, both strings")
            parsed.append(
                MockedResponseThrow(range_start=start, range_end=end, error=throw["Error"], cause=throw["Cause"])
            )
        except ValueError as exc:
            if isinstance(exc, MockConfigError):
                raise
            raise _fail(path, entry_where, str(exc)) from exc
    parsed.sort(key=lambda r: int(r.range_start))
    expected = 0
    for response in parsed:
        if response.range_start != expected:
            problem = "overlap" if response.range_start < expected else f"attempt {expected} is missing"
            raise _fail(
                path, where, f"attempts must be numbered consecutively from 0 ({problem}; keys: {', '.join(attempts)})"
            )
        expected = int(response.range_end) + 1
    return tuple(parsed)  # moto's StateMockedResponses repeats each range's response per attempt


# --------------------------------------------------------------------------------------------
# Patches
# --------------------------------------------------------------------------------------------

_lock = threading.Lock()
_originals: dict[str, Any] = {}
_config: MockConfig | None = None
_config_source = ""
_pending = threading.local()  # the test case of the execution being started on this thread


def _start_execution(
    self: Any, state_machine_arn: str, name: Any = None, execution_input: Any = None, trace_header: Any = None
) -> Any:
    base_arn, hashed, case_name = state_machine_arn.partition("#")
    if not hashed:
        return _originals["start_execution"](self, state_machine_arn, name, execution_input, trace_header)
    state_machine = self.describe_state_machine(base_arn)  # InvalidArn / StateMachineDoesNotExist as usual
    config = _config
    if config is None:
        raise InvalidName(
            f"Invalid mock test case name '{case_name}' for state machine '{state_machine.name}': no mock "
            f"configuration file is loaded ({_config_source})"
        )
    try:
        test_case = config.test_case(state_machine.name, case_name)
    except KeyError as exc:
        raise InvalidName(
            f"Invalid mock test case name '{case_name}' for state machine '{state_machine.name}': {exc.args[0]}"
        ) from exc
    _pending.test_case = test_case
    try:
        return _originals["start_execution"](self, base_arn, name, execution_input, trace_header)
    finally:
        _pending.test_case = None


def _get_start_execution_worker(self: Any) -> Any:
    worker = _originals["start_execution_worker"](self)
    test_case = getattr(_pending, "test_case", None)
    if test_case is not None:
        _pending.test_case = None  # this execution only
        # Read by ExecutionWorker._get_evaluation_environment on the worker's own thread, which
        # Execution.start starts only after this returns.
        worker._mock_test_case = test_case
    return worker


def _get_current_mocked_response(self: Any) -> Any:
    test_case = self.mock_test_case
    if not isinstance(test_case, _ExecutionTestCase) or not self.is_mocked_mode():
        return _originals["get_current_mocked_response"](self)
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
                EventDetails, {"taskFailedEventDetails": TaskFailedEventDetails(error=runtime.to_name(), cause=cause)}
            ),
        )
    )


_TARGETS: Final[list[tuple[str, Any, str, Callable[..., Any]]]] = [
    ("start_execution", StepFunctionsParserBackend, "start_execution", _start_execution),
    ("start_execution_worker", Execution, "_get_start_execution_worker", _get_start_execution_worker),
    ("get_current_mocked_response", Environment, "get_current_mocked_response", _get_current_mocked_response),
]


def patch_points() -> list[tuple[str, Any, str]]:
    """``(key, owner, attribute)`` of every patch, for tests that show each one is needed."""
    return [(key, owner, attribute) for key, owner, attribute, _ in _TARGETS]


def original(key: str) -> Any:
    """moto's own function behind a patch (only while installed)."""
    with _lock:
        if key not in _originals:
            raise KeyError(f"{key}: not installed (patch points: {', '.join(k for k, *_ in _TARGETS)})")
        return _originals[key]


def install(config_path: Path | None) -> None:
    """Honour ``<arn>#<TestCase>`` with this mock configuration file (idempotent; reloads the file).

    ``None`` reads the file named by ``$SFN_MOCK_CONFIG`` when it is set; otherwise no file is loaded
    and a start with ``#TestCase`` fails, saying so. A bad file raises :class:`MockConfigError` and
    leaves moto as it was.
    """
    global _config, _config_source
    if config_path is None and os.environ.get(ENV_VAR):
        config_path = Path(os.environ[ENV_VAR])
    config = load(config_path) if config_path is not None else None
    with _lock:
        _config = config
        _config_source = (
            f"{config_path}" if config_path is not None else f"pass mock_config to the engine or set {ENV_VAR}"
        )
        if _originals:
            return
        # All or nothing: read every target before replacing any.
        originals = {key: owner.__dict__[attribute] for key, owner, attribute, _ in _TARGETS}
        _originals.update(originals)
        for _, owner, attribute, replacement in _TARGETS:
            setattr(owner, attribute, replacement)


def uninstall() -> None:
    """Put moto back as it was and forget the file (idempotent)."""
    global _config, _config_source
    with _lock:
        for key, owner, attribute, replacement in _TARGETS:
            # Only undo our own patch: another module may have replaced it since.
            if key in _originals and owner.__dict__.get(attribute) is replacement:
                setattr(owner, attribute, _originals[key])
        _originals.clear()
        _config, _config_source = None, ""


def is_installed() -> bool:
    with _lock:
        return bool(_originals)


def loaded() -> MockConfig | None:
    """The configuration in use (None when not installed or installed without a file)."""
    with _lock:
        return _config
