"""The operator's commands (``list``, ``dead-letters``, ``deliveries``, ``redrive``, ``move-back``) against the
engine's endpoint, as against a deployed stack: the stack's outputs name the state machines and queues."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from idemflow import cli
from idemflow.contract import WorkflowError
from idemflow.engine import Engine
from tests.charge.side_effect import payment
from tests.functional.doors import dead_letters, deliveries, queue_size, wait_for_deliveries
from tests.functional.test_queue_door import OVERRIDES
from tests.polling import wait_until


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(parameter_overrides=OVERRIDES, wait_time_scale=0.01) as running:
        yield running


def where(engine: Engine) -> list[str]:
    return ["--endpoint-url", engine.endpoint_url, "--stack-name", engine.workflow.stack.name]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def as_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code, out, err = run_cli(capsys, *argv, "--json")
    assert err == "", err
    return code, json.loads(out)


def send(engine: Engine, body: str) -> None:
    assert engine.stack is not None
    engine.http_client("sqs").send_message(QueueUrl=engine.stack.outputs["RequestQueueUrl"], MessageBody=body)


def drain_dead_letters(engine: Engine) -> None:
    assert engine.stack is not None
    engine.http_client("sqs").purge_queue(QueueUrl=engine.stack.outputs["DoorDeadLetterQueueUrl"])
    wait_until(lambda: queue_size(engine, "DoorDeadLetterQueueUrl") == 0, 10, what="the dead-letter queue to empty")


@pytest.mark.parametrize("command", ["list", "dead-letters", "deliveries", "redrive", "move-back"])
def test_each_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, command, "--help")
    assert code == 0 and f"usage: idemflow {command}" in out and "--endpoint-url" in out


def test_list_shows_each_execution_with_its_key_path_and_outcome(
    engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    key = f"list-{uuid.uuid4()}"
    done = engine.run({"idempotencyKey": key, "payload": payment()})
    reused = engine.run({"idempotencyKey": key, "payload": payment(amount=1)})
    assert (done.status, reused.error) == ("SUCCEEDED", WorkflowError.KEY_REUSED)

    code, listed = as_json(capsys, "list", *where(engine), "--max", "2")

    assert code == 0
    rows = {row["executionArn"]: row for row in listed["executions"]}
    assert set(rows) == {done.arn, reused.arn}  # the newest two
    assert (rows[done.arn]["key"], rows[done.arn]["status"], rows[done.arn]["replayed"]) == (key, "SUCCEEDED", False)
    assert rows[done.arn]["path"] == done.path and "RunSideEffect" in done.path
    assert (rows[reused.arn]["error"], rows[reused.arn]["path"]) == (WorkflowError.KEY_REUSED, reused.path)

    code, out, _ = run_cli(capsys, "list", *where(engine), "--max", "2")
    assert code == 0
    assert f"SUCCEEDED  key={key}  replayed=false" in out
    assert f"FAILED     key={key}  {WorkflowError.KEY_REUSED}: this idempotency key was used" in out
    assert "path: " + " -> ".join(done.path) in out


def test_dead_letters_show_one_line_reasons_and_stay_then_move_back_completes_them(
    engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    drain_dead_letters(engine)
    before = len(deliveries(engine))
    keys = [f"dl-{uuid.uuid4()}" for _ in range(2)]
    # The charge raises PaymentValidationError for a negative amount: a Lambda error, whose cause is JSON with
    # a stack trace; the dead letter's ERROR_MESSAGE holds its errorMessage alone.
    for key in keys:
        send(engine, json.dumps({"idempotencyKey": key, **payment(amount=-5)}))
    dead = wait_for_deliveries(engine, 2, before)
    assert [d["outcome"] for d in dead] == ["DEAD_LETTERED"] * 2
    raw = dead_letters(engine)
    assert all(
        m["MessageAttributes"]["ERROR_MESSAGE"]["StringValue"].startswith(
            "PaymentValidationError: payload.amount must be positive, got -5 (execution arn:"
        )
        for m in raw
    )

    code, out, _ = run_cli(capsys, "dead-letters", *where(engine))

    assert code == 0
    lines = out.splitlines()
    reasons = [line for line in lines if "PaymentValidationError: " in line]
    assert len(reasons) == 2, out
    assert all(line.endswith("PaymentValidationError: payload.amount must be positive, got -5") for line in reasons)
    assert sorted(line.split("key=")[1].split()[0] for line in reasons) == sorted(keys)
    assert "stackTrace" not in out
    assert sum(line.strip().startswith("failed execution: arn:aws:states:") for line in lines) == 2
    assert sum(line.strip().startswith("intake execution: arn:aws:states:") for line in lines) == 2
    assert queue_size(engine, "DoorDeadLetterQueueUrl") == 2  # read, not deleted

    code, letters = as_json(capsys, "dead-letters", *where(engine))
    assert code == 0 and len(letters["messages"]) == 2
    failed = {m["executionArn"] for m in letters["messages"]}
    assert {engine.describe(arn).error for arn in failed} == {"PaymentValidationError"}

    code, listed = as_json(capsys, "deliveries", *where(engine), "--max", "5")
    assert code == 0
    mine = [d for d in listed["deliveries"] if d["key"] in keys]
    assert sorted(d["outcome"] for d in mine) == ["DEAD_LETTERED"] * 2
    assert {d["reason"] for d in mine} == {"PaymentValidationError: payload.amount must be positive, got -5"}

    code, out, _ = run_cli(capsys, "move-back", *where(engine), "--timeout", "30")

    assert code == 0, out
    assert out.splitlines()[-1] == "COMPLETED: moved 2 of 2 message(s)"
    again = wait_for_deliveries(engine, 2, before + 2)
    assert [d["outcome"] for d in again] == ["DEAD_LETTERED"] * 2  # the cause is not fixed: back again
    back = dead_letters(engine)
    assert sorted(m["MessageAttributes"]["idempotencyKey"]["StringValue"] for m in back) == sorted(keys)


def test_deliveries_show_completed_keys(engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    before = len(deliveries(engine))
    key = f"door-{uuid.uuid4()}"
    send(engine, json.dumps({"idempotencyKey": key, **payment()}))
    wait_for_deliveries(engine, 1, before)

    code, out, _ = run_cli(capsys, "deliveries", *where(engine), "--max", "3")

    assert code == 0
    assert any(f"COMPLETED      key={key}  replayed=false" in line for line in out.splitlines()), out


def test_redrive_one_execution_waits_and_reports_its_final_status(
    engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    key = f"redrive-{uuid.uuid4()}"
    engine.faults.throttle_next("AcquireLock", 5)  # fails at AcquireLock, before any lock: a redrive continues
    first = engine.run({"idempotencyKey": key, "payload": payment()})
    assert (first.status, first.path[-1]) == ("FAILED", "AcquireLock")

    code, out, _ = run_cli(capsys, "redrive", *where(engine), "--execution-arn", first.arn, "--timeout", "30")

    assert code == 0, out
    assert f"redriven {first.arn}" in out
    assert f"SUCCEEDED  {first.arn}  (redrive 1)" in out
    assert out.splitlines()[-1] == "redriven 1, refused 0; ended: 1 SUCCEEDED"
    assert engine.workflow.side_effect_runs(key) == 1


def test_redrive_reports_a_refusal_with_aws_reason_and_exits_1(
    engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    done = engine.run({"idempotencyKey": f"ok-{uuid.uuid4()}", "payload": payment()})

    code, report = as_json(capsys, "redrive", *where(engine), "--execution-arn", done.arn)

    assert code == 1
    [row] = report["executions"]
    assert (row["redriven"], row["status"]) == (False, None)
    assert row["reason"].startswith("ExecutionNotRedrivable: ")


def test_redrive_since_takes_every_failed_execution_since_then(
    engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    since = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    key = f"since-{uuid.uuid4()}"
    engine.run({"idempotencyKey": key, "payload": payment()})
    reused = [engine.run({"idempotencyKey": key, "payload": payment(amount=n)}) for n in (1, 2)]
    assert {r.error for r in reused} == {WorkflowError.KEY_REUSED}

    code, report = as_json(capsys, "redrive", *where(engine), "--since", since, "--timeout", "30")

    # At a Fail state a redrive enters it again and fails the same way (docs/runbook.md): exit 1.
    assert code == 1
    rows = {row["executionArn"]: row for row in report["executions"]}
    assert set(rows) >= {r.arn for r in reused}
    assert all(
        (rows[r.arn]["redriven"], rows[r.arn]["status"], rows[r.arn]["redriveCount"]) == (True, "FAILED", 1)
        for r in reused
    )


def test_a_wait_ends_at_its_deadline_with_one_line(engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    key = f"deadline-{uuid.uuid4()}"
    engine.faults.throttle_next("AcquireLock", 5)
    first = engine.run({"idempotencyKey": key, "payload": payment()})
    hold = threading.Event()
    engine.faults.before_dynamodb("SaveResult", lambda: hold.wait(30))  # the redriven run stays RUNNING

    code, _, err = run_cli(capsys, "redrive", *where(engine), "--execution-arn", first.arn, "--timeout", "0.3")

    hold.set()
    assert code == 1
    assert err.startswith("idemflow: error: 1 redriven execution(s) still running after 0.3 s (--timeout)")
    assert err.count("\n") == 1
    wait_until(lambda: engine.describe(first.arn).status != "RUNNING", 30, what="the redrive to end")
