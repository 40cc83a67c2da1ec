"""The definition's hard constraints: it must run unchanged on AWS, Step Functions Local 2.0 and the
embedded engine (JSONPath only, optimized integrations only) and be well formed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from idemflow.contract import (
    OUTCOME_UNKNOWN_ERRORS,
    STATE_MACHINE_LOGICAL_ID,
    STILL_RUNNING_ERROR,
    TIMEOUT_ERROR,
    RecordStatus,
    WorkflowError,
)
from idemflow.engine.services.stepfunctions.dynamodb_tasks import DYNAMODB_EXCEPTION_CLASSES, dynamodb_error_name
from idemflow.engine.stack import resolve_stack
from tests.paths import DEFINITION_PATH, PROJECT_ROOT

ASL_PATH = DEFINITION_PATH
ALLOWED_RESOURCES = {
    "arn:aws:states:::dynamodb:putItem",
    "arn:aws:states:::dynamodb:getItem",
    "arn:aws:states:::dynamodb:updateItem",
    "arn:aws:states:::dynamodb:deleteItem",
    "arn:aws:states:::lambda:invoke",
    "arn:aws:states:::states:startExecution.sync:2",
}


@pytest.fixture(scope="module")
def asl() -> dict[str, Any]:
    return json.loads(ASL_PATH.read_text())


def _walk(node: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


def _targets(state: dict[str, Any]) -> set[str]:
    found = {state[k] for k in ("Next", "Default") if k in state}
    for rule in state.get("Choices", []):
        found.add(rule["Next"])
    for catcher in state.get("Catch", []):
        found.add(catcher["Next"])
    return found


def test_jsonpath_only(asl: dict[str, Any]) -> None:
    keys = {k for k, _ in _walk(asl)}
    assert asl.get("QueryLanguage", "JSONPath") == "JSONPath"
    assert not keys & {"QueryLanguage", "Assign", "Arguments", "Output"}, "JSONata/Variables fields"
    assert not any(isinstance(v, str) and v.startswith("{%") for _, v in _walk(asl))


def test_optimized_integrations_only(asl: dict[str, Any]) -> None:
    resources = {s["Resource"] for s in asl["States"].values() if s["Type"] == "Task"}
    assert resources <= ALLOWED_RESOURCES, resources - ALLOWED_RESOURCES
    assert not any("aws-sdk" in r for r in resources)


def test_every_transition_lands_on_a_state_and_every_state_is_reachable(asl: dict[str, Any]) -> None:
    states = asl["States"]
    for name, state in states.items():
        missing = _targets(state) - states.keys()
        assert not missing, f"{name} goes to unknown {missing}"
    seen, todo = set(), [asl["StartAt"]]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_targets(states[name]))
    assert seen == set(states), f"unreachable: {set(states) - seen}"


def test_fail_states_use_the_contract_error_names(asl: dict[str, Any]) -> None:
    errors = {s["Error"] for s in asl["States"].values() if s["Type"] == "Fail" and "Error" in s}
    assert errors == {e.value for e in WorkflowError}


def test_statuses_written_and_compared_are_the_contract_statuses(asl: dict[str, Any]) -> None:
    text = ASL_PATH.read_text()
    used = set(re.findall(r'"(IN_PROGRESS|COMPLETED|[A-Z]+_[A-Z_]+)"', text))
    assert used == {s.value for s in RecordStatus}


def test_substitution_placeholders_are_quoted_strings(asl: dict[str, Any]) -> None:
    # DefinitionSubstitutions are string-only: a placeholder outside a JSON string would make the file
    # invalid JSON. json.loads above already proves it; here every placeholder sits in a value.
    placeholders = {m for _, v in _walk(asl) if isinstance(v, str) for m in re.findall(r"\$\{(\w+)\}", v)}
    assert placeholders, "the definition is expected to use DefinitionSubstitutions"


ASL_VALIDATOR = PROJECT_ROOT / "node_modules" / ".bin" / "asl-validator"


def _asl_validator(definition: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    if not ASL_VALIDATOR.exists():
        if shutil.which("npm") is None:
            pytest.skip("npm is not installed: `make test` installs asl-validator with npm ci")
        pytest.fail("asl-validator is missing: run `make test` (it runs npm ci from package-lock.json)")
    path = tmp_path / "definition.json"
    path.write_text(definition)
    return subprocess.run(
        [str(ASL_VALIDATOR), "--json-path", str(path)], capture_output=True, text=True, check=False, timeout=60
    )


def test_the_deployed_definition_is_valid_amazon_states_language(tmp_path: Path) -> None:
    definition = resolve_stack().state_machines[STATE_MACHINE_LOGICAL_ID].definition
    result = _asl_validator(definition, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_check_catches_a_broken_definition(tmp_path: Path) -> None:
    # Proves the check above can fail: a Retry field with the wrong type is rejected.
    definition = json.loads(resolve_stack().state_machines[STATE_MACHINE_LOGICAL_ID].definition)
    definition["States"]["RunSideEffect"]["Retry"][0]["MaxAttempts"] = "four"
    result = _asl_validator(json.dumps(definition), tmp_path)
    assert result.returncode != 0


# -- the lock protocol's rules (docs/protocol.md: "The protocol on one page") -------------------------
DYNAMODB_WRITES = {"putItem", "updateItem", "deleteItem"}
# The names AWS gives DynamoDB's throttling and server errors (DYNAMODB_EXCEPTION_CLASSES says
# where they come from): the SDK for Java exception classes, and AmazonDynamoDBException for the codes
# without one (ThrottlingException, ServiceUnavailable).
THROTTLING = {
    "DynamoDB.ProvisionedThroughputExceededException",
    "DynamoDB.RequestLimitExceededException",
    "DynamoDB.InternalServerErrorException",
    "DynamoDB.AmazonDynamoDBException",
}
# The contract's list (one place for the names): the rules below check the definition against it.
UNKNOWN_OUTCOME = set(OUTCOME_UNKNOWN_ERRORS)
# Time a DynamoDB request attempt may take before the integration gives up on it: an assumption (AWS
# publishes no figure), used only to bound the lease below.
DYNAMODB_ATTEMPT_SECONDS = 5


def _dynamodb_tasks(asl: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: s
        for name, s in asl["States"].items()
        if s["Type"] == "Task" and s["Resource"].startswith("arn:aws:states:::dynamodb:")
    }


def _action(state: dict[str, Any]) -> str:
    return str(state["Resource"]).rsplit(":", 1)[-1]


def test_the_only_write_without_our_token_is_the_acquisition_and_it_judges_time_atomically(
    asl: dict[str, Any],
) -> None:
    writes = {n: s for n, s in _dynamodb_tasks(asl).items() if _action(s) in DYNAMODB_WRITES}
    acquisitions = [n for n, s in writes.items() if ":myToken" not in s["Parameters"].get("ConditionExpression", "")]
    assert acquisitions == ["AcquireLock"]
    acquire = writes["AcquireLock"]["Parameters"]
    clauses = [c.strip() for c in acquire["ConditionExpression"].split(" OR ")]
    assert clauses == [
        "attribute_not_exists(#id)",
        "(#status = :completed AND #expiresAt <= :now)",
        "(#status = :inProgress AND #leaseExpiresAt <= :now)",
    ]
    # "now" is the clock function's, the same instant the lease written with it counts from.
    assert acquire["ExpressionAttributeValues"][":now"] == {"S.$": "$.lease.now"}
    assert acquire["Item"]["startedAt"] == {"S.$": "$.lease.now"}


def test_every_other_write_is_fenced_on_the_executions_token_and_a_lock(asl: dict[str, Any]) -> None:
    fenced = {n: s for n, s in _dynamodb_tasks(asl).items() if _action(s) in DYNAMODB_WRITES and n != "AcquireLock"}
    assert set(fenced) == {"SaveResult", "SaveWithoutResult", "ReleaseLock"}
    for name, state in fenced.items():
        params = state["Parameters"]
        assert params["ConditionExpression"] == "#lockToken = :myToken AND #status = :inProgress", name
        assert params["ExpressionAttributeNames"]["#lockToken"] == "lockToken", name
        assert params["ExpressionAttributeValues"][":myToken"] == {"S.$": "$.idem.token"}, name
        assert params["ExpressionAttributeValues"][":inProgress"] == {"S": RecordStatus.IN_PROGRESS.value}, name
    # The token is the execution's own, made where nothing else can set it.
    assert asl["States"]["DeriveKeys"]["Parameters"]["token.$"] == "States.UUID()"


def test_every_dynamodb_task_retries_throttling(asl: dict[str, Any]) -> None:
    for name, state in _dynamodb_tasks(asl).items():
        retried = {e for r in state.get("Retry", []) for e in r["ErrorEquals"]}
        assert retried >= THROTTLING, f"{name} does not retry {THROTTLING - retried}"


def test_every_dynamodb_error_name_is_one_aws_reports(asl: dict[str, Any]) -> None:
    # Step Functions names a DynamoDB task's error after the SDK for Java's exception class, not after
    # the error code (AWS-recorded: a ValidationException fails DynamoDB.AmazonDynamoDBException,
    # tests/conformance/test_dynamodb.py). A name AWS never reports is a Retry or Catch that never fires.
    reported = {dynamodb_error_name(code) for code in DYNAMODB_EXCEPTION_CLASSES} | {
        dynamodb_error_name("ValidationException")
    }
    for name, state in asl["States"].items():
        for handler in [*state.get("Retry", []), *state.get("Catch", [])]:
            for error in handler["ErrorEquals"]:
                if error.startswith("DynamoDB."):
                    assert error in reported, f"{name}: AWS never reports {error}"


def test_every_item_carries_a_ttl_from_the_write_that_creates_it(asl: dict[str, Any]) -> None:
    for name, state in _dynamodb_tasks(asl).items():
        params = state["Parameters"]
        if _action(state) == "putItem":
            item = params["Item"]
            assert {"ttl", "leaseExpiresAt", "expiresAt"} <= set(item), name
            assert item["ttl"] == {"N.$": "$.lease.ttl"}, name
        if _action(state) == "updateItem":  # an update never creates an item, and never drops the ttl
            assert (
                "attribute_not_exists" not in params["ConditionExpression"]
                and "#lockToken" in params["ConditionExpression"]
            )
            assert "REMOVE" not in params["UpdateExpression"].upper(), name


def test_nothing_relies_on_states_all_for_what_it_cannot_catch(asl: dict[str, Any]) -> None:
    # AWS: States.ALL does not catch States.Runtime (nothing does) nor, per the documentation,
    # States.DataLimitExceeded (concepts-error-handling). An explicit States.DataLimitExceeded catcher on
    # a lambda:invoke task runs (AWS-recorded: localstack tests/aws/services/stepfunctions/v2/
    # error_handling/test_states_errors.snapshot.json, test_service_task_lambada_data_limit_exceeded_*).
    for name, state in asl["States"].items():
        for catcher in state.get("Catch", []):
            assert "States.Runtime" not in catcher["ErrorEquals"], f"{name}: States.Runtime cannot be caught"
    catchers = [c["ErrorEquals"] for c in asl["States"]["RunSideEffect"]["Catch"]]
    assert catchers[0] == ["States.DataLimitExceeded"] and catchers[-1] == ["States.ALL"]


def test_no_state_after_the_side_effect_can_grow_the_data(asl: dict[str, Any]) -> None:
    # A state's input after Parameters over the payload quota fails States.DataLimitExceeded after the
    # side effect happened. RunSideEffect turns the result into its JSON string (its own output is then
    # checked, and its overflow caught); after it, only States.StringToJson (which shrinks) is allowed, so
    # no later state's effective input is larger than RunSideEffect's output.
    states = asl["States"]
    assert states["RunSideEffect"]["ResultSelector"] == {"json.$": "States.JsonToString($.Payload)"}
    seen, todo = set(), [t for t in _targets(states["RunSideEffect"])]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_targets(states[name]))
        for field in ("Parameters", "ResultSelector"):
            for _, value in _walk(states[name].get(field, {})):
                if isinstance(value, str) and value.startswith("States."):
                    assert value.startswith("States.StringToJson("), f"{name}.{field}: {value}"


def test_the_function_may_not_release_the_key_when_the_outcome_is_unknown(asl: dict[str, Any]) -> None:
    catchers = asl["States"]["RunSideEffect"]["Catch"]
    unknown = next(c for c in catchers if TIMEOUT_ERROR in c["ErrorEquals"])
    assert set(unknown["ErrorEquals"]) == UNKNOWN_OUTCOME
    assert unknown["Next"] == "OutcomeUnknown" and asl["States"]["OutcomeUnknown"]["Type"] == "Fail"
    assert catchers.index(unknown) < len(catchers) - 1, "it must come before States.ALL (which releases)"


def _retry_seconds(retrier: dict[str, Any]) -> list[float]:
    """The longest wait before each retry (full jitter only shortens it)."""
    interval, rate = float(retrier.get("IntervalSeconds", 1)), float(retrier.get("BackoffRate", 2))
    cap = float(retrier.get("MaxDelaySeconds", 10**9))
    return [min(interval * rate**k, cap) for k in range(int(retrier.get("MaxAttempts", 3)))]


def test_an_invocation_in_progress_is_waited_out_longer_than_the_functions_timeout(asl: dict[str, Any]) -> None:
    stack = resolve_stack()
    retrier = next(r for r in asl["States"]["RunSideEffect"]["Retry"] if STILL_RUNNING_ERROR in r["ErrorEquals"])
    assert retrier["ErrorEquals"] == [STILL_RUNNING_ERROR]
    assert retrier.get("JitterStrategy", "NONE") == "NONE", "jitter could make the waits add up to ~0"
    timeout = stack.side_effect_function().timeout
    assert sum(_retry_seconds(retrier)) > timeout


def _worst_case_seconds(state: dict[str, Any], attempt_seconds: float) -> float:
    retriers = state.get("Retry", [])
    attempts = 1 + sum(int(r.get("MaxAttempts", 3)) for r in retriers)
    return attempts * attempt_seconds + sum(sum(_retry_seconds(r)) for r in retriers)


def test_the_lease_outlasts_the_longest_path_from_computing_it_to_the_end_of_the_side_effect(
    asl: dict[str, Any],
) -> None:
    # The lease counts from ComputeLease's entry; it must not run out before RunSideEffect has ended,
    # however many retries and timeouts happen on the way (the checker's rule for letting time pass).
    stack = resolve_stack()
    states, functions = asl["States"], stack.functions
    worst = (
        _worst_case_seconds(states["ComputeLease"], functions["ClockFunction"].timeout)
        + _worst_case_seconds(states["AcquireLock"], DYNAMODB_ATTEMPT_SECONDS)
        + _worst_case_seconds(states["RunSideEffect"], stack.side_effect_function().timeout)
    )
    # Between them only CheckLease, a Choice: no request, no wait.
    assert states["AcquireLock"]["Next"] == "CheckLease"
    # The side effect of its kind: a state machine's rule, else the function's (the lease of a state machine
    # side effect must cover its child's run, which the definition cannot know: docs/contract.md).
    assert [rule["Next"] for rule in states["CheckLease"]["Choices"]] == ["RunSideEffectStateMachine", "RunSideEffect"]
    assert int(stack.parameters["LockLeaseSeconds"]) > worst, f"worst case {worst:.0f} s"


def test_every_choice_states_its_policy(asl: dict[str, Any]) -> None:
    for name, state in asl["States"].items():
        if state["Type"] == "Choice":
            assert len(state.get("Comment", "")) > 40, f"{name} has no Comment stating its policy"
