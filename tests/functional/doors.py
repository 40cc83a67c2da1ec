"""What the doors' tests read back (the queue, event, stream and outbox doors'): every delivery the intake state
machine accounted for (its executions' outputs), and the doors' dead-letter queue, through plain boto3 clients on
the engine's endpoint, as a user would read them."""

from __future__ import annotations

import weakref
from typing import Any

from idemflow import client
from idemflow.engine import Engine
from tests.charge.side_effect import ledger_rows
from tests.polling import wait_until

DOORS = {"QueueFrontDoor": "true", "EventFrontDoor": "true"}
"""Both doors on the real template."""


_SUCCEEDED: weakref.WeakKeyDictionary[Engine, dict[str, list[dict[str, Any]]]] = weakref.WeakKeyDictionary()
"""Each engine's succeeded intake executions' deliveries: a module's engine runs hundreds of intake
executions, and a poller described every one of them at every poll."""


def deliveries(engine: Engine) -> list[dict[str, Any]]:
    """Every delivery of every ended intake execution (``COMPLETED`` or ``DEAD_LETTERED``), oldest first; an
    intake execution that did not succeed is an AssertionError naming its error."""
    assert engine.stack is not None
    found, failed = client.intake_deliveries(
        engine.http_client("stepfunctions"),
        engine.stack.outputs["IntakeStateMachineArn"],
        _SUCCEEDED.setdefault(engine, {}),
    )
    assert not failed, [(f.get("error"), f.get("cause")) for f in failed]
    return found


def running_intakes(engine: Engine) -> int:
    assert engine.stack is not None
    sfn = engine.http_client("stepfunctions")
    arn = engine.stack.outputs["IntakeStateMachineArn"]
    return len(sfn.list_executions(stateMachineArn=arn, statusFilter="RUNNING")["executions"])


def wait_for_deliveries(engine: Engine, count: int, since: int = 0, timeout: float = 60) -> list[dict[str, Any]]:
    """The deliveries after the first ``since``, once ``count`` of them have ended and no intake runs."""

    def ended() -> list[dict[str, Any]] | None:
        if running_intakes(engine) > 0:  # one short list while the intake runs, not the whole history
            return None
        found = deliveries(engine)
        return found[since:] if len(found) - since >= count else None

    found = wait_until(ended, timeout, what=f"{count} deliveries to end", interval=0.05)
    assert len(found) == count, found
    return found


ONCE = "one run"


def one_side_effect(outcomes: list[str], ledger_rows: int) -> str:
    """:data:`ONCE` when a key's side effect ran as the workflow promises under a burst: its handler answered once,
    every other run of it timed out, and the charge's ledger holds one row; else what happened, for the assertion.

    The function's Timeout counts real time here, as Lambda's does, and a burst of executions keeps the
    handler's own DynamoDB requests waiting for the engine that serves them (seconds on a loaded machine,
    against some 20 ms alone): past its Timeout, Lambda reports Sandbox.Timedout (tests/conformance/
    test_errors.py) and the definition's Retry on RunSideEffect names that error, so the handler runs again,
    as it would on AWS. The charge guards itself against that run (its ledger write is conditioned on the key).
    Two runs that both answered are the lock's failure, and never pass."""
    if outcomes.count("ok") == 1 and set(outcomes) <= {"ok", "timeout"} and ledger_rows == 1:
        return ONCE
    return f"runs {sorted(outcomes)}, ledger rows {ledger_rows}"


def side_effect_of(engine: Engine, key: str) -> str:
    """:func:`one_side_effect` for ``key`` on a running engine whose side effect is the charge function."""
    outcomes = [run.outcome for run in engine.workflow.runs(key)]
    return one_side_effect(outcomes, len(ledger_rows(engine, key)))


def dead_letters(engine: Engine) -> list[dict[str, Any]]:
    """The messages on the doors' dead-letter queue, with their attributes (they stay on it)."""
    assert engine.stack is not None
    sqs = engine.http_client("sqs")
    url = engine.stack.outputs["DoorDeadLetterQueueUrl"]
    messages: list[dict[str, Any]] = []
    while True:
        got = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            AttributeNames=["All"],
            VisibilityTimeout=30,
        ).get("Messages", [])
        if not got:
            break
        messages.extend(got)
    for message in messages:  # back on the queue for the next reader
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    return messages


def attribute(message: dict[str, Any], name: str) -> str:
    return str(message["MessageAttributes"][name]["StringValue"])


def queue_size(engine: Engine, output: str) -> int:
    assert engine.stack is not None
    attributes = engine.http_client("sqs").get_queue_attributes(
        QueueUrl=engine.stack.outputs[output],
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])
