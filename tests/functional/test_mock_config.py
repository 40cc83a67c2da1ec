"""Step Functions Local test cases: ``statemachine/MockConfigFile.json`` on the embedded engine.

In the style of aws-samples/serverless-test-samples: each test case of the mock configuration file is
started as ``<state machine ARN>#<TestCase>`` and judged on its execution history (the exact path of
states entered, the final status and error). Every Task state a test case enters is mocked, so no
function really runs and no table is touched: the engine's Lambda runtime counts no invocation.

The same scenarios run on Step Functions Local when ``SFN_LOCAL_ENDPOINT`` is set (skipped otherwise),
e.g. with Docker::

    docker run -p 8083:8083 -e WAIT_TIME_SCALE=0 \\
      -e SFN_MOCK_CONFIG=/home/StepFunctionsLocal/MockConfigFile.json \\
      -v "$PWD/statemachine/MockConfigFile.json:/home/StepFunctionsLocal/MockConfigFile.json:ro" \\
      amazon/aws-stepfunctions-local:2.0.0
    SFN_LOCAL_ENDPOINT=http://localhost:8083 .venv/bin/python -m pytest tests/functional/test_mock_config.py

The fixture creates the state machine there under the name the file is keyed on, with the definition
the embedded engine deploys (``template.yaml``'s DefinitionSubstitutions applied).
"""

from __future__ import annotations

import copy
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto.stepfunctions.parser.asl.eval.environment import Environment
from moto.stepfunctions.parser.backend.execution import Execution

from idemflow import keys
from idemflow.contract import STATE_MACHINE_LOGICAL_ID, WorkflowError, sample_payload
from idemflow.engine import Engine, registry, state
from idemflow.engine.errors import MockConfigError
from idemflow.engine.services.stepfunctions import mock_config
from idemflow.engine.services.stepfunctions.clock import recorded_delays
from idemflow.engine.stack import resolve_stack
from tests.paths import PROJECT_ROOT, TEMPLATE_PATH

pytestmark = pytest.mark.functional

MOCK_CONFIG = PROJECT_ROOT / "statemachine" / "MockConfigFile.json"
CONFIG: dict[str, Any] = json.loads(MOCK_CONFIG.read_text(encoding="utf-8"))
STACK = resolve_stack()
STATE_MACHINE = STACK.state_machines[STATE_MACHINE_LOGICAL_ID]
DEFINITION: dict[str, Any] = json.loads(STATE_MACHINE.definition)
TASK_STATES = {name for name, state in DEFINITION["States"].items() if state["Type"] == "Task"}
MAX_POLLS = int(STACK.parameters["InProgressMaxPolls"])

# The fixed input every test case is started with. The records the file mocks were written for it:
# test_the_files_records_were_written_for_the_test_input keeps them in step.
KEY = "order-mock-0001"
INPUT: dict[str, Any] = {"idempotencyKey": KEY, "payload": sample_payload(TEMPLATE_PATH)}


def case_states(name: str) -> dict[str, str]:
    """State name -> mocked response name, for one test case of the file."""
    cases: dict[str, dict[str, str]] = CONFIG["StateMachines"][STATE_MACHINE.name]["TestCases"]
    return cases[name]


def returned(mocked_response: str, attempt: str = "0") -> Any:
    return CONFIG["MockedResponses"][mocked_response][attempt]["Return"]


RESULT: dict[str, Any] = returned("RunSideEffectSucceeded")["Payload"]
"""What the mocked side effect returns (the default side effect's own tests check the real one returns it for INPUT)."""

START = ["ValidateInput", "DeriveKeys", "ReadRecord", "CheckRecord"]
FIRST_RUN = [*START, "ComputeLease", "AcquireLock", "CheckLease", "RunSideEffect"]
FIRST_POLL = ["WatchOwner", "WaitForOwner", "ReadRecord", "CheckRecord"]
POLL = ["CountPoll", "WaitForOwner", "ReadRecord", "CheckRecord"]


# -- where the test cases run ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    arn: str
    status: str
    error: str | None
    cause: str | None
    output: Any
    path: list[str]
    events: list[dict[str, Any]]

    def task_failures(self) -> list[str]:
        return [e["taskFailedEventDetails"]["error"] for e in self.events if e["type"] == "TaskFailed"]


class Target:
    """A Step Functions endpoint with the state machine deployed: the embedded engine or Step Functions Local."""

    name: str
    client: Any
    state_machine_arn: str

    def start(self, case: str, body: Any = INPUT) -> tuple[str, str]:
        """Start ``<arn>#<case>``; returns the execution's name and ARN."""
        name = f"{case}-{uuid.uuid4().hex[:12]}"
        arn: str = self.client.start_execution(
            stateMachineArn=f"{self.state_machine_arn}#{case}", name=name, input=json.dumps(body)
        )["executionArn"]
        return name, arn

    def wait(self, arn: str) -> Outcome:
        raise NotImplementedError

    def real_invocations(self) -> int | None:
        """How many times the stack's functions really ran (None: not observable on this target)."""
        return None

    def _outcome(self, arn: str, described: dict[str, Any]) -> Outcome:
        events: list[dict[str, Any]] = []
        for page in self.client.get_paginator("get_execution_history").paginate(executionArn=arn):
            events.extend(page["events"])
        return Outcome(
            arn=arn,
            status=described["status"],
            error=described.get("error"),
            cause=described.get("cause"),
            output=json.loads(described["output"]) if described.get("output") else None,
            path=[e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e],
            events=events,
        )


class Embedded(Target):
    name = "embedded"

    def __init__(self, engine: Engine):
        self.engine = engine
        self.client = engine.client("stepfunctions")
        self.state_machine_arn = engine.workflow.state_machine_arn

    def wait(self, arn: str) -> Outcome:
        self.engine.wait(arn, with_path=False)  # on the execution's end event, no polling
        return self._outcome(arn, self.client.describe_execution(executionArn=arn))

    def real_invocations(self) -> int | None:
        assert self.engine.stack is not None
        return sum(len(self.engine.workflow.invocations(fn.name)) for fn in self.engine.stack.functions.values())


class StepFunctionsLocal(Target):
    name = "sfn-local"

    def __init__(self, endpoint: str):
        self.client = boto3.session.Session().client(
            "stepfunctions",
            endpoint_url=endpoint,
            region_name=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
            aws_access_key_id="local",
            aws_secret_access_key="local",
            config=Config(inject_host_prefix=False, retries={"max_attempts": 0}),
        )
        self.state_machine_arn = self._deploy()

    def _deploy(self) -> str:
        # The file is keyed on the state machine's name: create it under the embedded engine's name.
        role = f"arn:aws:iam::{STACK.account_id}:role/idemflow-local"
        try:
            arn: str = self.client.create_state_machine(
                name=STATE_MACHINE.name, definition=STATE_MACHINE.definition, roleArn=role
            )["stateMachineArn"]
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "StateMachineAlreadyExists":
                raise
            machines = self.client.list_state_machines()["stateMachines"]
            arn = next(m["stateMachineArn"] for m in machines if m["name"] == STATE_MACHINE.name)
            self.client.update_state_machine(stateMachineArn=arn, definition=STATE_MACHINE.definition, roleArn=role)
        return arn

    def wait(self, arn: str) -> Outcome:
        # Another process: poll it. WAIT_TIME_SCALE=0 keeps the Wait states and retry intervals short.
        deadline = time.monotonic() + 120
        while True:
            described = self.client.describe_execution(executionArn=arn)
            if described["status"] != "RUNNING" or time.monotonic() > deadline:
                return self._outcome(arn, described)
            time.sleep(0.05)


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(wait_time_scale=0, mock_config=MOCK_CONFIG) as running:
        yield running


@pytest.fixture(scope="module")
def sfn_local() -> StepFunctionsLocal:
    endpoint = os.environ.get("SFN_LOCAL_ENDPOINT")
    if not endpoint:
        pytest.skip("SFN_LOCAL_ENDPOINT is not set (a Step Functions Local started with this MockConfigFile.json)")
    return StepFunctionsLocal(endpoint)


@pytest.fixture(params=["embedded", "sfn-local"])
def endpoint(request: pytest.FixtureRequest) -> Target:
    if request.param == "embedded":
        return Embedded(request.getfixturevalue("engine"))
    target: Target = request.getfixturevalue("sfn_local")
    return target


@pytest.fixture(autouse=True)
def _mock_config_installed(request: pytest.FixtureRequest) -> Iterator[None]:
    if "engine" not in request.fixturenames:
        yield
        return
    request.getfixturevalue("engine")  # started: its state holds MOCK_CONFIG
    attached = state.current()
    yield
    registry.apply()  # some tests leave the hook out or use another file on purpose
    state.install(attached)


def run(target: Target, case: str, body: Any = INPUT) -> Outcome:
    """Run one test case, checking what every test case must do whatever its path."""
    invoked = target.real_invocations()
    name, arn = target.start(case, body)
    outcome = target.wait(arn)
    # Step Functions Local's shape: the execution belongs to the real state machine, no #TestCase in it.
    assert arn == f"{target.state_machine_arn.replace(':stateMachine:', ':execution:')}:{name}"
    assert target.real_invocations() == invoked, "a function really ran: a task of the path is not mocked"
    entered_tasks = {state for state in outcome.path if state in TASK_STATES}
    assert entered_tasks == set(case_states(case)), "the test case must mock exactly the Task states it enters"
    return outcome


# -- one test per test case -----------------------------------------------------------------------------------
def test_happy_path(endpoint: Target) -> None:
    outcome = run(endpoint, "HappyPathTest")

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.path == [*FIRST_RUN, "SaveResult", "ReturnResult"]
    assert outcome.output == {"idempotencyKey": KEY, "replayed": False, "result": RESULT}


def test_duplicate_returns_the_stored_result(endpoint: Target) -> None:
    outcome = run(endpoint, "DuplicateTest")

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.path == [*START, "ReturnCached"]
    assert outcome.task_failures() == []
    assert outcome.output == {"idempotencyKey": KEY, "replayed": True, "result": RESULT}


def test_key_reused_with_another_payload(endpoint: Target) -> None:
    outcome = run(endpoint, "KeyReusedTest")

    assert outcome.status == "FAILED"
    assert outcome.error == WorkflowError.KEY_REUSED
    assert outcome.path == [*START, "KeyReused"]


def test_in_progress_waits_for_the_owner_then_gives_up(endpoint: Target) -> None:
    outcome = run(endpoint, "InProgressTest")

    assert outcome.status == "FAILED"
    assert outcome.error == WorkflowError.IN_PROGRESS
    assert outcome.path == [*START, *FIRST_POLL, *POLL * (MAX_POLLS - 1), "InProgress"]


def test_owner_finishes_while_waiting(endpoint: Target) -> None:
    # ReadRecord is entered twice: attempt 0 reads the live lock, attempt 1 the completed record.
    outcome = run(endpoint, "OwnerFinishesWhileWaitingTest")

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.path == [*START, *FIRST_POLL, "ReturnCached"]
    assert outcome.output == {"idempotencyKey": KEY, "replayed": True, "result": RESULT}


def test_stale_lock_is_taken_over(endpoint: Target) -> None:
    outcome = run(endpoint, "StaleLockTakeOverTest")

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.path == [*FIRST_RUN, "SaveResult", "ReturnResult"]
    assert outcome.output == {"idempotencyKey": KEY, "replayed": False, "result": RESULT}


def test_a_lost_race_for_the_lock_reads_the_winners_result(endpoint: Target) -> None:
    # No record at the first read; another execution acquires before our write, and has completed by
    # the time we read again.
    outcome = run(endpoint, "LostRaceTest")

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.path == [
        *START,
        "ComputeLease",
        "AcquireLock",
        "CountAttempt",
        "ReadRecord",
        "CheckRecord",
        "ReturnCached",
    ]
    assert outcome.task_failures() == ["DynamoDB.ConditionalCheckFailedException"]
    assert outcome.output == {"idempotencyKey": KEY, "replayed": True, "result": RESULT}


def test_transient_failures_are_retried(endpoint: Target) -> None:
    outcome = run(endpoint, "TransientRetryTest")

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.path == [*FIRST_RUN, "SaveResult", "ReturnResult"]  # retries do not re-enter the state
    transient = STACK.parameters["SideEffectTransientError"]
    assert outcome.task_failures() == [transient, transient]
    assert outcome.output == {"idempotencyKey": KEY, "replayed": False, "result": RESULT}


def test_permanent_failure_releases_the_lock(endpoint: Target) -> None:
    outcome = run(endpoint, "PermanentFailureTest")

    assert outcome.status == "FAILED"
    assert outcome.error == "PaymentDeclinedError"
    assert outcome.cause == "card declined"  # the mocked error's errorMessage, not its JSON
    assert outcome.path == [*FIRST_RUN, "ReleaseLock", "ReadFunctionError", "FunctionErrorMessage", "SideEffectFailed"]


def test_lock_lost_before_the_result_was_saved(endpoint: Target) -> None:
    outcome = run(endpoint, "LockLostTest")

    assert outcome.status == "FAILED"
    assert outcome.error == WorkflowError.LOCK_LOST
    assert outcome.path == [*FIRST_RUN, "SaveResult", "ReadAfterSave", "CheckSaved", "LockLost"]


def test_a_mocked_execution_belongs_to_the_real_state_machine(endpoint: Target) -> None:
    _, arn = endpoint.start("HappyPathTest")
    endpoint.wait(arn)

    described = endpoint.client.describe_execution(executionArn=arn)
    assert described["stateMachineArn"] == endpoint.state_machine_arn
    listed = endpoint.client.list_executions(stateMachineArn=endpoint.state_machine_arn)["executions"]
    assert arn in {e["executionArn"] for e in listed}


# -- the file itself ------------------------------------------------------------------------------------------
def test_the_files_records_were_written_for_the_test_input() -> None:
    fingerprint = keys.fingerprint(INPUT["payload"])
    record_id = keys.record_key(STACK.parameters["WorkflowScope"], KEY)
    items = {
        f"{name}[{attempt}]": entry["Return"]["Item"]
        for name, attempts in CONFIG["MockedResponses"].items()
        for attempt, entry in attempts.items()
        if "Item" in entry.get("Return", {})
    }
    assert len(items) == 8, sorted(items)
    for name, item in items.items():
        assert item["id"]["S"] == record_id, name
        if name.startswith("ReadRecordCompletedOtherPayload"):
            assert item["fingerprint"]["S"] != fingerprint, name
        else:
            assert item["fingerprint"]["S"] == fingerprint, name
    # A duplicate replays what the first run returned.
    assert json.loads(returned("ReadRecordCompleted")["Item"]["result"]["S"]) == RESULT


def test_the_file_names_task_states_of_the_definition_and_defined_responses() -> None:
    assert list(CONFIG["StateMachines"]) == [STATE_MACHINE.name]
    used: set[str] = set()
    for case, states in CONFIG["StateMachines"][STATE_MACHINE.name]["TestCases"].items():
        assert case.endswith("Test"), case
        for state_name, response in states.items():
            assert state_name in TASK_STATES, f"{case}: {state_name} is not a Task state of the definition"
            assert response in CONFIG["MockedResponses"], f"{case}: {response} is not defined"
            assert response.startswith(state_name), f"{case}: mocked responses are named <State><Outcome>: {response}"
            used.add(response)
    assert used == set(CONFIG["MockedResponses"]), "mocked responses no test case uses"


def test_the_file_loads_and_its_live_lock_outlasts_every_poll() -> None:
    config = mock_config.load(MOCK_CONFIG)

    live = config.test_case(STATE_MACHINE.name, "InProgressTest").state_mocked_responses["ReadRecord"]
    # Step Functions Local counts every read, loop included: one read per poll plus the last one.
    assert len(live.mocked_responses) >= MAX_POLLS + 1


def _mutated(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    config = copy.deepcopy(CONFIG)
    change(config)
    return config


def _cases(config: dict[str, Any]) -> dict[str, Any]:
    cases: dict[str, Any] = config["StateMachines"][STATE_MACHINE.name]["TestCases"]
    return cases


BAD_FILES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    (
        "undefined response",
        lambda c: _cases(c)["HappyPathTest"].update(AcquireLock="Missing"),
        "test case 'HappyPathTest', state 'AcquireLock': mocked response 'Missing' is not defined",
    ),
    (
        "gap in attempts",
        lambda c: c["MockedResponses"]["RunSideEffectUnavailableTwiceThenSucceeded"].update(
            {"3": c["MockedResponses"]["RunSideEffectUnavailableTwiceThenSucceeded"].pop("2")}
        ),
        "mocked response 'RunSideEffectUnavailableTwiceThenSucceeded': attempts must be numbered consecutively "
        "from 0 (attempt 2 is missing",
    ),
    (
        "overlapping attempts",
        lambda c: c["MockedResponses"]["RunSideEffectDeclined"].update({"0-1": {"Return": {}}}),
        "mocked response 'RunSideEffectDeclined': attempts must be numbered consecutively",
    ),
    (
        "Return and Throw",
        lambda c: c["MockedResponses"]["SaveResultSaved"]["0"].update(Throw={"Error": "E", "Cause": "C"}),
        "mocked response 'SaveResultSaved', attempt '0': must hold exactly one field, Return or Throw",
    ),
    (
        "Throw without Cause",
        lambda c: c["MockedResponses"]["RunSideEffectDeclined"]["0"]["Throw"].pop("Cause"),
        "mocked response 'RunSideEffectDeclined', attempt '0', Throw: must hold exactly Error and Cause",
    ),
    (
        "bad attempt key",
        lambda c: c["MockedResponses"]["SaveResultSaved"].update(
            {"first": c["MockedResponses"]["SaveResultSaved"].pop("0")}
        ),
        "mocked response 'SaveResultSaved', attempt 'first': 'first' is not an attempt number",
    ),
    (
        "reversed range",
        lambda c: c["MockedResponses"]["ReadRecordInProgressLive"].update(
            {"10-0": c["MockedResponses"]["ReadRecordInProgressLive"].pop("0-10")}
        ),
        "range '10-0' ends before it starts",
    ),
    (
        "no attempt",
        lambda c: c["MockedResponses"].update(ReleaseLockReleased={}),
        "mocked response 'ReleaseLockReleased': defines no attempt",
    ),
    (
        "misspelt top level",
        lambda c: c.update(MockedResponse=c.pop("MockedResponses")),
        "unknown top-level field(s) MockedResponse",
    ),
    (
        "no TestCases",
        lambda c: c["StateMachines"].update(Other={"Tests": {}}),
        "StateMachines.Other: must hold exactly one field, TestCases",
    ),
    (
        "response name not a string",
        lambda c: _cases(c)["DuplicateTest"].update(ReadRecord=["ReadRecordCompleted"]),
        "test case 'DuplicateTest', state 'ReadRecord': the value must be the name of a mocked response",
    ),
]


@pytest.mark.parametrize(("change", "message"), [(c, m) for _, c, m in BAD_FILES], ids=[i for i, _, _ in BAD_FILES])
def test_a_bad_file_is_rejected_naming_the_faulty_entry(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    path = tmp_path / "MockConfigFile.json"
    path.write_text(json.dumps(_mutated(change)), encoding="utf-8")

    with pytest.raises(MockConfigError) as raised:
        mock_config.load(path)

    assert str(raised.value).startswith("MockConfigFile.json: ")
    assert message in str(raised.value)


def test_a_file_that_is_not_json_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "MockConfigFile.json"
    path.write_text('{"StateMachines": {', encoding="utf-8")

    with pytest.raises(MockConfigError, match="not valid JSON"):
        mock_config.load(path)


# -- the engine's wiring --------------------------------------------------------------------------------------
def test_an_unknown_test_case_fails_start_execution_naming_it(engine: Engine) -> None:
    sfn = engine.client("stepfunctions")

    with pytest.raises(ClientError) as raised:
        sfn.start_execution(stateMachineArn=f"{engine.workflow.state_machine_arn}#NoSuchTest", name="n", input="{}")

    assert raised.value.response["Error"]["Code"] == "InvalidName"
    message = raised.value.response["Error"]["Message"]
    assert "'NoSuchTest'" in message and STATE_MACHINE.name in message
    assert "HappyPathTest" in message, "the message lists the test cases there are"


def test_a_test_case_of_an_unknown_state_machine_is_state_machine_does_not_exist(engine: Engine) -> None:
    missing = engine.workflow.state_machine_arn + "-missing"

    with pytest.raises(ClientError) as raised:
        engine.client("stepfunctions").start_execution(stateMachineArn=f"{missing}#HappyPathTest", name="n")

    assert raised.value.response["Error"]["Code"] == "StateMachineDoesNotExist"
    assert missing in raised.value.response["Error"]["Message"]


def test_an_execution_without_a_test_case_runs_for_real(engine: Engine) -> None:
    key = f"order-{uuid.uuid4()}"

    outcome = engine.run({"idempotencyKey": key, "payload": INPUT["payload"]})

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert outcome.path == [*FIRST_RUN, "SaveResult", "ReturnResult"]
    assert engine.workflow.side_effect_runs(key) == 1
    assert engine.workflow.record(key) is not None


def use(path: Path | None) -> None:
    """What an engine started with ``mock_config=path`` holds in its state."""
    config, source = mock_config.for_engine(path)
    state.update(mock_config=config, mock_config_source=source)


def test_a_bad_file_is_refused_and_the_loaded_one_stays(engine: Engine, tmp_path: Path) -> None:
    bad = tmp_path / "MockConfigFile.json"
    bad.write_text("[]", encoding="utf-8")

    with pytest.raises(MockConfigError, match="must be a JSON object"):
        use(bad)

    loaded = state.current().mock_config
    assert loaded is not None and loaded.path == MOCK_CONFIG
    assert run(Embedded(engine), "HappyPathTest").status == "SUCCEEDED"


def test_a_state_with_no_response_left_fails_the_execution(engine: Engine, tmp_path: Path) -> None:
    short = tmp_path / "MockConfigFile.json"
    config = copy.deepcopy(CONFIG)
    config["MockedResponses"]["ReadRecordInProgressLive"] = {
        "0-2": {"Return": returned("ReadRecordInProgressLive", "0-10")}
    }
    short.write_text(json.dumps(config), encoding="utf-8")
    use(short)

    outcome = Embedded(engine).wait(Embedded(engine).start("InProgressTest")[1])

    assert outcome.status == "FAILED"
    assert outcome.error == "States.Runtime"
    assert "state 'ReadRecord' was invoked 4 times" in (outcome.cause or "")
    assert outcome.path.count("ReadRecord") == 4


def test_no_path_reads_sfn_mock_config(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(mock_config.ENV_VAR, raising=False)
    use(None)
    with pytest.raises(
        ClientError, match=r"no mock configuration file is loaded \(pass mock_config .* SFN_MOCK_CONFIG"
    ):
        Embedded(engine).start("HappyPathTest")

    monkeypatch.setenv(mock_config.ENV_VAR, str(MOCK_CONFIG))
    use(None)

    loaded = state.current().mock_config
    assert loaded is not None and loaded.path == MOCK_CONFIG
    assert run(Embedded(engine), "HappyPathTest").status == "SUCCEEDED"


def test_without_a_mock_configuration_a_test_case_start_is_motos_own(engine: Engine) -> None:
    assert run(Embedded(engine), "HappyPathTest").status == "SUCCEEDED"

    state.update(mock_config=None, mock_config_source="")  # an engine started without mock_config

    with pytest.raises(ClientError) as raised:
        Embedded(engine).start("HappyPathTest")
    assert raised.value.response["Error"]["Code"] == "StateMachineDoesNotExist"  # moto's answer again


# -- each part of the mock-config hook is needed: what moto 5.2.5 does without it ----------------------------
def _moto_s_own(monkeypatch: pytest.MonkeyPatch, owner: Any, attribute: str) -> None:
    monkeypatch.setattr(owner, attribute, registry.original(owner, attribute))


def test_without_the_hook_a_test_case_arn_is_rejected(engine: Engine) -> None:
    registry.apply(without=["mock-config"], hooks_too=True)

    with pytest.raises(ClientError) as raised:
        Embedded(engine).start("HappyPathTest")

    # moto takes the suffix for part of the name, as AWS itself does.
    assert raised.value.response["Error"]["Code"] == "StateMachineDoesNotExist"
    assert f"{engine.workflow.state_machine_arn}#HappyPathTest" in raised.value.response["Error"]["Message"]


def test_without_the_worker_patch_a_test_case_runs_for_real(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    _moto_s_own(monkeypatch, Execution, "_get_start_execution_worker")
    key = f"order-{uuid.uuid4()}"
    target = Embedded(engine)

    outcome = target.wait(target.start("HappyPathTest", {"idempotencyKey": key, "payload": INPUT["payload"]})[1])

    assert outcome.status == "SUCCEEDED", outcome.cause
    assert engine.workflow.side_effect_runs(key) == 1, "the real function ran"
    assert outcome.output["result"] != RESULT


def test_without_the_invocation_counter_a_loop_replays_attempt_0(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _moto_s_own(monkeypatch, Environment, "get_current_mocked_response")

    outcome = run(Embedded(engine), "OwnerFinishesWhileWaitingTest")

    # moto indexes by $$.State.RetryCount, 0 on every entry: the owner never seems to finish.
    assert outcome.error == WorkflowError.IN_PROGRESS
    assert outcome.path.count("WaitForOwner") == MAX_POLLS


def test_without_the_dynamodb_task_failures_fix_a_mocked_throw_loses_its_name(engine: Engine) -> None:
    # dynamodb-task-failures keeps the interpreter's own failure events; without it (moto's function):
    registry.apply(without=["dynamodb-task-failures"])
    target = Embedded(engine)

    outcome = target.wait(target.start("LostRaceTest")[1])

    assert outcome.status == "FAILED"
    assert outcome.error == "DynamoDB.AmazonDynamoDBException", "the Catch on ConditionalCheckFailed never matched"
    assert outcome.path == [*START, "ComputeLease", "AcquireLock"]


def test_retries_of_a_mocked_state_are_scaled_like_real_ones(engine: Engine) -> None:
    outcome = run(Embedded(engine), "TransientRetryTest")

    retries = [d for d in recorded_delays(outcome.arn) if d.kind == "retry"]
    assert [d.state_name for d in retries] == ["RunSideEffect", "RunSideEffect"]
    assert all(d.slept_seconds < 0.5 for d in retries), "wait_time_scale=0: no real sleep"
