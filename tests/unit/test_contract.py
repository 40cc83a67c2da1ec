"""The side-effect contract in idemflow/contract.py is what the definition does: the request the function
gets, the errors that are retried, those that keep the key, and the rest, which release it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from idemflow import contract
from idemflow.contract import SIDE_EFFECT_SUBSTITUTION
from tests.paths import DEFINITION_PATH


@pytest.fixture(scope="module")
def run_side_effect() -> dict[str, Any]:
    definition = json.loads(DEFINITION_PATH.read_text())
    state: dict[str, Any] = definition["States"]["RunSideEffect"]
    return state


def test_the_function_receives_exactly_the_documented_fields(run_side_effect: dict[str, Any]) -> None:
    parameters = run_side_effect["Parameters"]
    assert parameters["FunctionName"] == f"${{{SIDE_EFFECT_SUBSTITUTION}}}"
    assert tuple(k.removesuffix(".$") for k in parameters["Payload"]) == contract.SIDE_EFFECT_REQUEST_FIELDS


def test_the_retried_errors_are_the_documented_ones(run_side_effect: dict[str, Any]) -> None:
    retried = [tuple(r["ErrorEquals"]) for r in run_side_effect["Retry"]]
    assert retried == [
        contract.LAMBDA_TRANSIENT_ERRORS,
        ("${SideEffectTransientError}", contract.TIMEOUT_ERROR),
        (contract.STILL_RUNNING_ERROR,),
    ]


def test_unknown_outcomes_keep_the_key_and_every_other_error_releases_it(run_side_effect: dict[str, Any]) -> None:
    catchers = {c["Next"]: tuple(c["ErrorEquals"]) for c in run_side_effect["Catch"]}
    assert catchers["OutcomeUnknown"] == contract.OUTCOME_UNKNOWN_ERRORS
    assert catchers["ReleaseLock"] == ("States.ALL",)
    assert "Lambda.TooManyRequestsException" not in contract.OUTCOME_UNKNOWN_ERRORS, "throttled: nothing ran"
