"""The interpreter's state data copied as JSON (``interpreter_speedups.py``): ``json-copy``. The work moto 5.2.5
does without it (a ``copy.deepcopy`` per read of the state data), and the same executions with it: the output
and every history event's details of a definition that reads, binds, merges and writes the state data every
way the interpreter copies it, compared with the speedup left out. ``inline-states``: the threads moto 5.2.5
starts for each Task state and each program, and the same executions without them: the output and every history
event's details of a definition whose tasks succeed, fail, are retried and caught, in a Map and a Parallel."""

from __future__ import annotations

import copy
import datetime
import json
import re
import threading
from collections import OrderedDict
from typing import Any

import pytest

from idemflow.engine import registry, state
from idemflow.engine.services.stepfunctions.interpreter_speedups import json_copy
from tests.unit.changes.machines import create_state_machine, run
from tests.unit.changes.speedups.compare import counting

pytestmark = [pytest.mark.unit, pytest.mark.usefixtures("restore_registry")]

# Every place the interpreter copies state data: Choice rules on the input ($.x) and the context ($$),
# Parameters and ItemSelector bindings, intrinsics (JsonMerge), Map's ResultSelector, ResultPath into the input,
# OutputPath, a Pass state's Result, Map and Parallel (each branch gets the stack's copy), a caught error
# written with ResultPath. "Alias" writes the same object to two places; "Touch" then changes one of them:
# the other must not change, with or without the speedup.
DEFINITION: dict[str, Any] = {
    "StartAt": "Bind",
    "States": {
        "Bind": {
            "Type": "Pass",
            "Parameters": {
                "order.$": "$.order",
                "name.$": "$$.Execution.Name",
                "merged.$": "States.JsonMerge($.order, $.extra, false)",
                "lines.$": "$.order.lines",
            },
            "ResultPath": "$.bound",
            "Next": "Route",
        },
        "Route": {
            "Type": "Choice",
            "Choices": [
                {
                    "And": [
                        {"Variable": "$.bound.order.total", "NumericGreaterThan": 10},
                        {"Variable": "$$.State.Name", "StringEquals": "Route"},
                    ],
                    "Next": "Alias",
                }
            ],
            "Default": "Failed",
        },
        "Alias": {"Type": "Pass", "InputPath": "$.bound.order", "ResultPath": "$.bound.alias", "Next": "Touch"},
        "Touch": {"Type": "Pass", "Result": {"changed": True}, "ResultPath": "$.bound.alias.flag", "Next": "Each"},
        "Each": {
            "Type": "Map",
            "ItemsPath": "$.bound.lines",
            "ItemSelector": {"line.$": "$$.Map.Item.Value", "index.$": "$$.Map.Item.Index"},
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "INLINE"},
                "StartAt": "Line",
                "States": {"Line": {"Type": "Pass", "Parameters": {"sku.$": "$.line.sku"}, "End": True}},
            },
            "ResultSelector": {"skus.$": "$[*].sku"},
            "ResultPath": "$.skus",
            "Next": "Both",
        },
        "Both": {
            "Type": "Parallel",
            "Branches": [
                {"StartAt": "Left", "States": {"Left": {"Type": "Pass", "OutputPath": "$.skus", "End": True}}},
                {"StartAt": "Right", "States": {"Right": {"Type": "Pass", "Result": [1, {"r": None}], "End": True}}},
            ],
            "ResultPath": "$.both",
            "Next": "Fails",
        },
        # One branch only: with a second, whether it ran before the failure cancelled it is a race.
        "Fails": {
            "Type": "Parallel",
            "Branches": [
                {
                    "StartAt": "Right",
                    "States": {"Right": {"Type": "Fail", "Error": "Right.Failed", "Cause": "on purpose"}},
                }
            ],
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.caught", "Next": "Done"}],
            "Next": "Done",
        },
        "Done": {"Type": "Pass", "OutputPath": "$", "End": True},
        "Failed": {"Type": "Fail", "Error": "Route.Missed"},
    },
}
INPUT: dict[str, Any] = {
    "order": {"id": "o-1", "total": 42.5, "lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": None}]},
    "extra": {"note": "é ✓", "nested": {"list": [1, 2.0, True, None, "x"]}},
}


def details(sfn: Any, execution_arn: str) -> list[tuple[str, Any]]:
    """Each history event's type and details, without what differs between two runs (times, names, ARNs)."""
    events = sfn.get_execution_history(executionArn=execution_arn)["events"]
    found = []
    for event in events:
        body = next((v for k, v in event.items() if k.endswith("EventDetails")), {})
        body = {k: v for k, v in body.items() if k not in ("roleArn", "resource")}
        for key in ("input", "output"):
            if key in body:
                body[key] = json.loads(body[key])
        found.append((event["type"], body))
    return found


def run_both_ways(sfn: Any) -> dict[bool, tuple[Any, list[tuple[str, Any]]]]:
    answers = {}
    for with_it in (False, True):
        registry.apply(without=() if with_it else ("json-copy",))
        state.update(wait_time_scale=0)
        arn = create_state_machine(sfn, DEFINITION)
        described = run(sfn, arn, INPUT)
        assert described["status"] == "SUCCEEDED", described
        output = json.loads(described["output"])
        output["bound"]["name"] = "<name>"
        history = [
            (kind, json.loads(json.dumps(body).replace(described["name"], "<name>")))
            for kind, body in details(sfn, described["executionArn"])
        ]
        # Map's iterations and Parallel's branches run at once: their events interleave differently from run to run.
        answers[with_it] = (output, sorted(history, key=lambda event: json.dumps(event, sort_keys=True)))
    return answers


def test_the_same_output_and_history_with_and_without_the_speedup(sfn: Any) -> None:
    answers = run_both_ways(sfn)

    assert answers[True] == answers[False]
    output = answers[True][0]
    # What the definition is for: every path ran, and the alias written by Touch is not the order it copied.
    assert output["bound"]["alias"] == {**INPUT["order"], "flag": {"changed": True}}
    assert output["bound"]["order"] == INPUT["order"]
    assert output["bound"]["merged"]["nested"] == INPUT["extra"]["nested"]
    assert output["skus"] == {"skus": ["a", "b"]}
    assert output["both"] == [{"skus": ["a", "b"]}, [1, {"r": None}]]
    assert output["caught"]["Error"] == "Right.Failed"


def deep_copies(monkeypatch: pytest.MonkeyPatch, sfn: Any, without: tuple[str, ...]) -> int:
    registry.apply(without=without)
    state.update(wait_time_scale=0)
    arn = create_state_machine(sfn, DEFINITION)
    calls = [0]
    original = copy.deepcopy

    def counting(value: Any, memo: Any = None, _nil: Any = []) -> Any:  # noqa: B006 (deepcopy's own signature)
        calls[0] += 1
        return original(value, memo, _nil)

    monkeypatch.setattr(copy, "deepcopy", counting)
    try:
        assert run(sfn, arn, INPUT)["status"] == "SUCCEEDED"
    finally:
        monkeypatch.setattr(copy, "deepcopy", original)
    return calls[0]


def test_unpatched_moto_5_2_5_deep_copies_the_state_data_on_every_read(
    sfn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One execution of the definition above: each read deep-copies what it read, member by member (165 calls of
    # copy.deepcopy, its recursion included, when this was written).
    assert deep_copies(monkeypatch, sfn, ("json-copy",)) >= 100


def test_patched_state_data_reaches_no_deepcopy(sfn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    without = deep_copies(monkeypatch, sfn, ("json-copy",))

    # What is left is outside the state data: the state machine copied at the start, say (29 calls when written).
    assert deep_copies(monkeypatch, sfn, ()) * 4 < without


def test_json_copy_shares_nothing_mutable_and_leaves_other_values_to_deepcopy() -> None:
    shared = {"a": [1, {"b": None}]}
    value = {"x": shared, "y": shared, "s": "text", "n": 1.5, "t": True}
    copied = json_copy(value)

    assert copied == value
    copied["x"]["a"][1]["b"] = "changed"
    assert value["x"]["a"][1]["b"] is None  # nothing of the original changed
    assert copied["y"]["a"][1]["b"] is None  # one object in two places: two independent copies, as JSON has it

    others = {"when": datetime.datetime(2026, 1, 1), "pair": (1, [2]), "ordered": OrderedDict(a=[1])}
    copied_others = json_copy(others)
    assert copied_others == others
    assert type(copied_others["ordered"]) is OrderedDict and type(copied_others["pair"]) is tuple
    assert copied_others["pair"][1] is not others["pair"][1]  # deepcopy's copy: not shared either


# ---------------------------------------------------------------------------------------------
# inline-states: no thread per Task state nor per program
# ---------------------------------------------------------------------------------------------
TABLE = "inline-states"
# Tasks that succeed, fail and are retried then caught, and fail uncaught inside a Parallel branch that catches
# them; a Map whose iterations are programs of their own; one Task with a TimeoutSeconds, which keeps its thread.
TASKS: dict[str, Any] = {
    "StartAt": "Put",
    "States": {
        "Put": {
            "Type": "Task",
            "Resource": "arn:aws:states:::dynamodb:putItem",
            "Parameters": {"TableName": TABLE, "Item": {"id": {"S.$": "$.id"}, "n": {"N": "1"}}},
            "ResultSelector": {"answer.$": "$"},
            "ResultPath": "$.put",
            "Next": "PutAgain",
        },
        "PutAgain": {
            "Type": "Task",
            "Resource": "arn:aws:states:::dynamodb:putItem",
            "Parameters": {
                "TableName": TABLE,
                "Item": {"id": {"S.$": "$.id"}},
                "ConditionExpression": "attribute_not_exists(id)",
            },
            "Retry": [{"ErrorEquals": ["DynamoDB.ConditionalCheckFailedException"], "MaxAttempts": 2}],
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.refused", "Next": "Each"}],
            "Next": "Each",
        },
        "Each": {
            "Type": "Map",
            "ItemsPath": "$.keys",
            "ItemProcessor": {
                "StartAt": "Get",
                "States": {
                    "Get": {
                        "Type": "Task",
                        "Resource": "arn:aws:states:::dynamodb:getItem",
                        "Parameters": {"TableName": TABLE, "Key": {"id": {"S.$": "$"}}},
                        "End": True,
                    }
                },
            },
            "ResultPath": "$.read",
            "Next": "Both",
        },
        "Both": {
            "Type": "Parallel",
            "Branches": [
                {
                    "StartAt": "Missing",
                    "States": {
                        "Missing": {
                            "Type": "Task",
                            "Resource": "arn:aws:states:::dynamodb:getItem",
                            "Parameters": {"TableName": "no-such-table", "Key": {"id": {"S": "x"}}},
                            "End": True,
                        }
                    },
                }
            ],
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.missing", "Next": "Timed"}],
            "Next": "Timed",
        },
        "Timed": {
            "Type": "Task",
            "Resource": "arn:aws:states:::dynamodb:deleteItem",
            "TimeoutSeconds": 30,
            "Parameters": {"TableName": TABLE, "Key": {"id": {"S.$": "$.id"}}, "ReturnValues": "ALL_OLD"},
            "ResultPath": "$.deleted",
            "End": True,
        },
    },
}
TASKS_INPUT = {"id": "k-1", "keys": ["k-1", "k-2"]}
REQUEST_ID = re.compile(r"Request ID: [^;]*;")


def run_tasks(sfn: Any, ddb: Any, without: tuple[str, ...]) -> tuple[Any, list[tuple[str, Any]], int]:
    """The output, the history's events (sorted: Map iterations interleave) and the threads started by one
    execution of TASKS, on a fresh table."""
    registry.apply(without=without)
    state.update(wait_time_scale=0)
    ddb.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    arn = create_state_machine(sfn, TASKS)
    with pytest.MonkeyPatch.context() as patch:
        started = counting(patch, threading.Thread, "start")
        described = run(sfn, arn, TASKS_INPUT)
    ddb.delete_table(TableName=TABLE)
    assert described["status"] == "SUCCEEDED", described

    def same(text: str) -> Any:  # without what differs from run to run: the name, DynamoDB's request ids
        return json.loads(REQUEST_ID.sub("Request ID: <id>;", text.replace(described["name"], "<name>")))

    history = [(kind, same(json.dumps(body))) for kind, body in details(sfn, described["executionArn"])]
    return same(described["output"]), sorted(history, key=lambda e: json.dumps(e, sort_keys=True)), len(started)


def test_unpatched_moto_5_2_5_starts_a_thread_per_task_state_and_per_program(sfn: Any, ddb: Any) -> None:
    _, _, threads = run_tasks(sfn, ddb, ("inline-states",))

    # The execution's worker and its program; Put, PutAgain (three attempts), Each, its two iterations' workers,
    # programs and Gets, Both, its branch's worker, program and Missing, Timed: 18 when this was written.
    assert threads >= 14


def test_patched_the_same_output_and_history_with_a_thread_only_where_a_timeout_can_fire(sfn: Any, ddb: Any) -> None:
    output, history, threads = run_tasks(sfn, ddb, ())
    moto_output, moto_history, moto_threads = run_tasks(sfn, ddb, ("inline-states",))

    assert (output, history) == (moto_output, moto_history)
    assert output["put"] == {"answer": {}}
    assert output["refused"]["Error"] == "DynamoDB.ConditionalCheckFailedException"
    assert output["read"] == [{"Item": {"id": {"S": "k-1"}, "n": {"N": "1"}}}, {}]
    assert output["missing"]["Error"] == "DynamoDB.ResourceNotFoundException"
    assert output["deleted"]["Attributes"] == {"id": {"S": "k-1"}, "n": {"N": "1"}}
    # Left: the execution's worker, Map's two iteration workers, Parallel's branch worker and Timed's thread (its
    # TimeoutSeconds). Gone: four programs' (the execution's, the iterations', the branch's), seven Task attempts'
    # (Put, PutAgain three times, the two Gets, Missing), Each's and Both's: thirteen threads fewer.
    assert (moto_threads, threads) == (18, 5)


# ---------------------------------------------------------------------------------------------
# program-state-copy: a program state copied without deepcopy's generic path
# ---------------------------------------------------------------------------------------------
def generic_copies(sfn: Any, ddb: Any, without: tuple[str, ...]) -> tuple[Any, list[tuple[str, Any]], int]:
    """run_tasks, counting the objects copy.deepcopy copied through __reduce_ex__ (copy._reconstruct)."""
    with pytest.MonkeyPatch.context() as patch:
        reconstructed = counting(patch, copy, "_reconstruct")
        output, history, _ = run_tasks(sfn, ddb, without)
    return output, history, len(reconstructed)


def test_unpatched_moto_5_2_5_copies_the_program_state_through_reduce_ex(sfn: Any, ddb: Any) -> None:
    _, _, reconstructed = generic_copies(sfn, ddb, ("program-state-copy",))

    # Two copies per state (to read the program state's class) and one per frame: 35 when this was written.
    assert reconstructed >= 25


def test_patched_the_same_output_and_history_with_no_program_state_through_reduce_ex(sfn: Any, ddb: Any) -> None:
    output, history, reconstructed = generic_copies(sfn, ddb, ())
    moto_output, moto_history, moto_reconstructed = generic_copies(sfn, ddb, ("program-state-copy",))

    assert (output, history) == (moto_output, moto_history)
    assert reconstructed <= moto_reconstructed - 25  # 5 left when this was written: none a program state


def program_states() -> list[Any]:
    from moto.stepfunctions.parser.asl.eval.program_state import (
        ProgramEnded,
        ProgramError,
        ProgramRunning,
        ProgramStopped,
        ProgramTimedOut,
    )

    running = ProgramRunning()
    running.next_state_name = "Next"
    running.next_field_name = "Field"
    stop_date = datetime.datetime(2026, 11, 29, 10, 0, tzinfo=datetime.UTC)
    return [
        ProgramRunning(),
        running,
        ProgramEnded(),
        ProgramTimedOut(),
        ProgramStopped(stop_date=stop_date, error="Err", cause=None),
        ProgramError(error={"error": "States.Runtime", "cause": "because"}),
        ProgramError(error=None),
    ]


@pytest.mark.parametrize("index", range(7))
def test_a_program_state_copy_is_deepcopys_and_shares_nothing_mutable(index: int) -> None:
    registry.apply(without=("program-state-copy",))
    moto_own = copy.deepcopy(program_states()[index])
    registry.apply()
    original = program_states()[index]
    copied = copy.deepcopy(original)

    assert type(copied) is type(original) is type(moto_own)
    assert vars(copied) == vars(original) == vars(moto_own)
    for name, value in vars(copied).items():
        if isinstance(value, dict):
            value["error"] = "changed"
            assert getattr(original, name)["error"] == "States.Runtime"
