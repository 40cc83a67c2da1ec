"""Lambda task failures and how Retry and Catch match them.

Sources: the Step Functions developer guide (concepts-error-handling), and executions recorded on AWS in
LocalStack's AWS-validated snapshots (``LS``: github.com/localstack/localstack,
tests/aws/services/stepfunctions/v2/...). For the failures that only Lambda's own recordings show
(timeout, crash, missing handler, import error), the error is the function's errorType, which is how Step
Functions reports a function error (recorded for raised exceptions); the documentation's older
``Lambda.Unknown`` for those cases is not on record, and the product's definition catches both.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conformance.harness import Target

INVOKE = "arn:aws:states:::lambda:invoke"


def _invoke(function_arn: str, payload: Any = None, *, catch: list[str] | None = None, **extra: Any) -> dict:
    task: dict[str, Any] = {
        "Type": "Task",
        "Resource": INVOKE,
        "Parameters": {"FunctionName": function_arn, "Payload": payload if payload is not None else {}},
        "End": True,
        **extra,
    }
    states: dict[str, Any] = {"Call": task}
    if catch is not None:
        task["Catch"] = [{"ErrorEquals": catch, "Next": "Caught"}]
        states["Caught"] = {"Type": "Pass", "End": True}
    return {"StartAt": "Call", "States": states}


def test_a_handler_exception_is_its_error_type(target: Target) -> None:
    # LS error_handling/test_task_service_lambda.py::test_raise_custom_exception (recorded 28-11-2024):
    # TaskFailed error "CustomException", cause the compact JSON {"errorMessage": ..., "errorType": ...,
    # "requestId": ..., "stackTrace": [...]}.
    run = target.run(_invoke(target.function_arn("Fail")))
    error, cause = run.failure("TaskFailed")
    assert (run.status, error) == ("FAILED", "ConformanceError")
    details = json.loads(cause)
    assert details["errorType"] == "ConformanceError" and details["errorMessage"] == "raised on purpose"
    assert ", " not in cause.split('"stackTrace"')[0]  # compact, like the recording
    assert cause.startswith('{"errorMessage":"raised on purpose","errorType":"ConformanceError",')  # its order


def test_states_task_failed_catches_a_function_error(target: Target) -> None:
    # LS test_task_service_lambda.py::test_raise_exception_catch (recorded 28-11-2024): a handler's
    # exception is caught by States.TaskFailed. Docs: States.TaskFailed "matches any known error name
    # except for States.Timeout".
    run = target.run(_invoke(target.function_arn("Fail"), catch=["States.TaskFailed"]))
    assert run.status == "SUCCEEDED" and run.entered() == ["Call", "Caught"]


def test_lambda_unknown_does_not_catch_a_handler_exception(target: Target) -> None:
    # LS test_task_service_lambda.py::test_raise_exception (recorded 28-11-2024), Catch ["Lambda.Unknown"]
    # only: the execution fails with the exception's own name.
    run = target.run(_invoke(target.function_arn("Fail"), catch=["Lambda.Unknown"]))
    assert (run.status, run.error) == ("FAILED", "ConformanceError")


def test_a_missing_function_is_lambda_resource_not_found(target: Target) -> None:
    # LS test_task_service_lambda.py::test_no_such_function (recorded 25-11-2025): TaskFailed
    # Lambda.ResourceNotFoundException, cause "Function not found: arn:...:function:<name>:$LATEST
    # (Service: AWSLambda; Status Code: 404; Error Code: ResourceNotFoundException; ...".
    missing = target.function_arn("Echo") + "NoSuchFunction"
    run = target.run(_invoke(missing))
    error, cause = run.failure("TaskFailed")
    assert error == "Lambda.ResourceNotFoundException"
    assert "(Service: AWSLambda; Status Code: 404; Error Code: ResourceNotFoundException;" in cause


@pytest.mark.parametrize(
    ("function", "error", "message"),
    [
        # Lambda's own recordings and its Python runtime (errorType and errorMessage): a timeout is
        # Sandbox.Timedout "Task timed out after 1.00 seconds"; a process that exits is Runtime.ExitError;
        # a Handler naming a missing function is Runtime.HandlerNotFound "Handler 'missing' missing on
        # module 'app'"; a module that fails to import is Runtime.ImportModuleError "Unable to import
        # module 'app': No module named '...'".
        ("Sleepy", "Sandbox.Timedout", "Task timed out after 1.00 seconds"),
        ("Crash", "Runtime.ExitError", "Runtime exited"),
        ("NoHandler", "Runtime.HandlerNotFound", "Handler 'missing' missing on module 'app'"),
        ("BadImport", "Runtime.ImportModuleError", "Unable to import module 'app': No module named"),
    ],
)
def test_a_function_that_cannot_answer_fails_with_lambdas_error_type(
    target: Target, function: str, error: str, message: str
) -> None:
    run = target.run(_invoke(target.function_arn(function)))
    reported, cause = run.failure("TaskFailed")
    assert reported == error
    assert message in json.loads(cause)["errorMessage"]


def test_states_all_does_not_catch_states_runtime(target: Target) -> None:
    # Docs, concepts-error-handling: "A States.Runtime error is not retriable, and will always cause the
    # execution to fail. A retry or catch on States.ALL will not catch States.Runtime errors."
    run = target.run(
        _invoke(target.function_arn("Echo"), catch=["States.ALL"], OutputPath="$.no.such.result.path"),
    )
    assert (run.status, run.error) == ("FAILED", "States.Runtime")
    assert "Caught" not in run.entered()


def test_states_all_does_not_catch_a_failed_intrinsic(target: Target) -> None:
    # Same sentence of the docs. An intrinsic that fails in a task's Parameters (States.Hash over its
    # 10,000 characters: the payload fingerprint of the product's DeriveKeys) is a States.Runtime error.
    task = _invoke(target.function_arn("Echo"), catch=["States.ALL"])
    task["States"]["Call"]["Parameters"]["Payload"] = {"digest.$": "States.Hash($.text, 'SHA-256')"}
    run = target.run(task, {"text": "a" * 10_001})
    assert (run.status, run.error) == ("FAILED", "States.Runtime")
    assert "Caught" not in run.entered()


def test_states_runtime_is_not_caught_by_its_own_name(target: Target) -> None:
    # LS scenarios/test_base_scenarios.py::test_catch_states_runtime (recorded 23-11-2023): a Task with
    # OutputPath "$.no.such.result.path" and Catch ["States.Runtime"] fails the execution with
    # States.Runtime ("... Invalid path '$.no.such.result.path' : Missing property in path $['no']").
    run = target.run(
        _invoke(target.function_arn("Echo"), catch=["States.Runtime"], OutputPath="$.no.such.result.path"),
    )
    assert (run.status, run.error) == ("FAILED", "States.Runtime")
    assert "Caught" not in run.entered()


def test_states_runtime_is_not_retried(target: Target) -> None:
    # Docs, concepts-error-handling: "A States.Runtime error is not retriable".
    retry = [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 2, "IntervalSeconds": 1}]
    run = target.run(_invoke(target.function_arn("Echo"), OutputPath="$.no.such.result.path", Retry=retry))
    assert (run.status, run.error) == ("FAILED", "States.Runtime")
    assert len(run.of_type("TaskScheduled")) == 1


def test_states_all_catches_data_limit_exceeded_as_recorded(target: Target) -> None:
    # LS error_handling/test_states_errors.py::
    # test_service_task_lambada_catch_state_all_data_limit_exceeded_on_large_utf8_response (recorded
    # 21-03-2024): a lambda:invoke result over the quota fails TaskFailed States.DataLimitExceeded, cause
    # "The state/task 'lambda' returned a result with a size exceeding the maximum number of bytes service
    # limit.", and a Catch on States.ALL catches it; the execution succeeds. (The documentation says
    # States.ALL does not catch it; the recording says it does. The product's definition names it.)
    run = target.run(_invoke(target.function_arn("Sized"), {"bytes": 300_000}, catch=["States.ALL"]))
    error, cause = run.failure("TaskFailed")
    assert error == "States.DataLimitExceeded"
    assert "returned a result with a size exceeding the maximum number of bytes service limit" in cause
    assert run.status == "SUCCEEDED" and run.entered() == ["Call", "Caught"]


@pytest.mark.parametrize(
    "reference",
    [
        # Lambda API reference, Invoke, FunctionName: a function name (my-function, my-function:v1), a
        # function ARN (arn:aws:lambda:us-west-2:123456789012:function:my-function) or a partial ARN
        # (123456789012:function:my-function); "You can append a version number or alias to any of the
        # formats." The engine deploys no versions or aliases: $LATEST is the one qualifier it has.
        "name",
        "name:$LATEST",
        "arn",
        "arn:$LATEST",
        "partial",
    ],
)
def test_a_function_is_found_by_each_name_format(target: Target, reference: str) -> None:
    arn = target.function_arn("Echo")
    name = arn.rsplit(":", 1)[1]
    account = arn.split(":")[4]
    function = {
        "name": name,
        "name:$LATEST": f"{name}:$LATEST",
        "arn": arn,
        "arn:$LATEST": f"{arn}:$LATEST",
        "partial": f"{account}:function:{name}",
    }[reference]
    run = target.run(_invoke(function, {"hello": "world"}))
    assert run.status == "SUCCEEDED", run.cause
    assert run.output["Payload"] == {"hello": "world"}
