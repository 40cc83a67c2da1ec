"""``idemflow release``: an operator deletes a key's stuck IN_PROGRESS lock once its owner has ended, never
while it runs, never a completed result, and never a lock that changed after it was read (the delete is
conditioned on the lock's token). Against the engine's endpoint, as against a deployed stack."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from idemflow import cli, client
from idemflow.contract import RecordStatus, WorkflowError
from idemflow.engine import Engine
from tests.charge.side_effect import payment
from tests.polling import wait_until

from .workflow.helpers import set_record


def release(engine: Engine, key: str) -> dict[str, Any]:
    return client.release(
        engine.http_client("dynamodb"),
        engine.http_client("stepfunctions"),
        engine.workflow.idempotency_table,
        engine.workflow.scope,
        key,
    )


def test_release_refuses_while_the_owner_runs_and_releases_once_it_has_ended(engine: Engine, key: str) -> None:
    hold = threading.Event()
    engine.faults.before_dynamodb("SaveResult", lambda: hold.wait(30))  # the owner stops before saving
    owner = engine.start_execution({"idempotencyKey": key, "payload": payment()})
    wait_until(lambda: engine.workflow.side_effect_runs(key) == 1, 30, what="the side effect to run")

    with pytest.raises(client.ReleaseRefusedError, match="is RUNNING: wait for it to end"):
        release(engine, key)
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == RecordStatus.IN_PROGRESS

    hold.set()
    assert engine.wait(owner).status == "SUCCEEDED"
    completed = engine.workflow.record(key)
    with pytest.raises(client.ReleaseRefusedError, match="is COMPLETED, not IN_PROGRESS"):
        release(engine, key)
    assert completed is not None and engine.workflow.record(key) == completed  # a result is never deleted


def test_release_deletes_the_lock_an_unknown_outcome_kept_and_the_key_runs_again(engine: Engine, key: str) -> None:
    engine.faults.crash_next(engine.workflow.side_effect_function)  # Runtime.ExitError: the outcome is unknown
    failed = engine.run({"idempotencyKey": key, "payload": payment()})
    assert failed.error == WorkflowError.OUTCOME_UNKNOWN
    kept = engine.workflow.record(key)
    assert kept is not None and kept["status"] == RecordStatus.IN_PROGRESS

    released = release(engine, key)

    assert (released["owner"], released["ownerStatus"]) == (failed.arn, "FAILED")
    assert engine.workflow.record(key) is None
    again = engine.run({"idempotencyKey": key, "payload": payment()})
    assert (again.status, again.replayed) == ("SUCCEEDED", False)
    assert engine.workflow.side_effect_runs(key) == 1  # the crashed invocation never reached the handler; this one did


def test_release_refuses_a_key_without_a_record(engine: Engine, key: str) -> None:
    with pytest.raises(client.ReleaseRefusedError, match="nothing to release"):
        release(engine, key)


def test_release_never_deletes_a_lock_taken_over_after_it_was_read(
    engine: Engine, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.faults.crash_next(engine.workflow.side_effect_function)  # Runtime.ExitError: the outcome is unknown
    engine.run({"idempotencyKey": key, "payload": payment()})
    stale = engine.workflow.record(key)
    assert stale is not None
    # Between the operator's read and the delete, another execution took the key over (a new token).
    set_record(engine, key, lockToken="the-new-owner")
    monkeypatch.setattr(client, "record", lambda *args: stale)

    with pytest.raises(client.ReleaseRefusedError, match="changed after it was read"):
        release(engine, key)

    monkeypatch.undo()
    current = engine.workflow.record(key)
    assert current is not None and current["lockToken"] == "the-new-owner"


def test_the_command_prints_one_line_and_exits_1_when_refused_0_when_released(
    engine: Engine, key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    where = [
        "--endpoint-url",
        engine.endpoint_url,
        "--table",
        engine.workflow.idempotency_table,
        "--scope",
        engine.workflow.scope,
    ]
    capsys.readouterr()

    assert cli.main(["release", *where, "--key", key]) == 1
    refused = capsys.readouterr()
    assert refused.err.count("\n") == 1 and refused.err.startswith("idemflow: error: release refused: no record")

    engine.faults.crash_next(engine.workflow.side_effect_function)  # Runtime.ExitError: the outcome is unknown
    engine.run({"idempotencyKey": key, "payload": payment()})
    assert cli.main(["release", *where, "--key", key]) == 0
    assert capsys.readouterr().out.startswith(f"released key {key!r}: the lock of arn:aws:states:")
    assert engine.workflow.record(key) is None


def test_release_refuses_an_owner_it_cannot_describe(engine: Engine, key: str) -> None:
    engine.faults.crash_next(engine.workflow.side_effect_function)  # Runtime.ExitError: the outcome is unknown
    engine.run({"idempotencyKey": key, "payload": payment()})
    kept = engine.workflow.record(key)
    assert kept is not None
    # As an Express owner (DescribeExecution does not describe them), or one that no longer exists.
    set_record(engine, key, owner=kept["owner"].replace(":execution:", ":express:") + ":x")

    with pytest.raises(client.ReleaseRefusedError, match=r"cannot confirm that the owner .* has ended"):
        release(engine, key)
    current = engine.workflow.record(key)
    assert current is not None and current["status"] == RecordStatus.IN_PROGRESS
