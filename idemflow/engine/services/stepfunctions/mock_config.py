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
module loads and validates the file (building moto's own models: ``MockedResponseReturn``,
``MockedResponseThrow``, ``StateMockedResponses``, ``MockTestCase``); the registry's ``mock-config`` hook
(``idemflow/engine/services/stepfunctions/mocked_starts.py``) wires it into moto, and the ``dynamodb-task-failures`` fix
keeps a mocked ``Throw``'s error name on a DynamoDB task.

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
(Step Functions Local fails the execution; ``States.ALL`` does not catch it: ``states-runtime``).

:func:`for_engine` loads the file an engine uses; the engine puts it in its state
(:mod:`idemflow.engine.state`), where the hook reads it. Each part of the hook is shown needed by a
functional test.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from moto.stepfunctions.parser.mocking.mock_config import (
    MockedResponse,
    MockedResponseReturn,
    MockedResponseThrow,
    MockTestCase,
    StateMockedResponses,
)

from idemflow.engine.errors import MockConfigError

__all__ = [
    "ENV_VAR",
    "MockConfig",
    "MockConfigError",
    "for_engine",
    "load",
]

#: The variable Step Functions Local reads the file's path from; used by ``install(None)``.
ENV_VAR: Final[str] = "SFN_MOCK_CONFIG"

_ATTEMPTS = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")
_TOP_LEVEL: Final = frozenset({"StateMachines", "MockedResponses"})


@dataclass(frozen=True)
class MockConfig:
    """A validated mock configuration file."""

    path: Path
    test_cases: Mapping[str, Mapping[str, Mapping[str, str]]]
    """state machine name -> test case name -> state name -> mocked response name."""
    responses: Mapping[str, tuple[MockedResponse, ...]]
    """mocked response name -> its attempt ranges, in order (moto's models)."""

    def test_case(self, state_machine_name: str, test_case_name: str) -> ExecutionTestCase:
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
        return ExecutionTestCase(
            state_machine_name=state_machine_name,
            test_case_name=test_case_name,
            state_mocked_responses_list=[
                StateMockedResponses(
                    state_name=state, mocked_response_name=name, mocked_responses=list(self.responses[name])
                )
                for state, name in states.items()
            ],
        )


class ExecutionTestCase(MockTestCase):
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
# The file an engine uses (the engine state's mock_config, read by the mock-config hook)
# --------------------------------------------------------------------------------------------


def for_engine(config_path: Path | None) -> tuple[MockConfig | None, str]:
    """The configuration an engine uses, and where it comes from (the engine state's ``mock_config`` and
    ``mock_config_source``).

    ``None`` reads the file named by ``$SFN_MOCK_CONFIG`` when it is set; otherwise no file is loaded
    and a start with ``#TestCase`` fails, saying what to do. A bad file raises :class:`MockConfigError`.
    """
    if config_path is None and os.environ.get(ENV_VAR):
        config_path = Path(os.environ[ENV_VAR])
    if config_path is None:
        return None, f"pass mock_config to the engine or set {ENV_VAR}"
    return load(config_path), str(config_path)
