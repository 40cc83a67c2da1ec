"""An outage rehearsed on the embedded engine, as the runbook tells an operator to recover from it
(docs/runbook.md: a door's ``DEAD_LETTERED`` delivery: "fix, then move the messages to the request queue"):
the side effect fails for a while, every message goes to the doors' dead-letter queue with its reason, the
fault ends, the operator moves the dead letters back with ``StartMessageMoveTask``, and each key then runs
its side effect exactly once. Nothing is lost: every message is counted at each step."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from idemflow.engine import Engine
from tests.charge.side_effect import ledger_rows, payment
from tests.functional.doors import attribute, dead_letters, deliveries, queue_size, wait_for_deliveries
from tests.functional.test_queue_door import OVERRIDES
from tests.polling import wait_until

KEYS = 5


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(parameter_overrides=OVERRIDES, wait_time_scale=0.01) as running:
        yield running


def queue_arn(engine: Engine, output: str) -> str:
    assert engine.stack is not None
    sqs = engine.http_client("sqs")
    attributes = sqs.get_queue_attributes(QueueUrl=engine.stack.outputs[output], AttributeNames=["QueueArn"])
    return str(attributes["Attributes"]["QueueArn"])


def created(sqs: Any, name: str) -> bool:
    """Whether CreateQueue made the queue (False while SQS refuses a name deleted under 60 s ago)."""
    try:
        sqs.create_queue(QueueName=name)
    except sqs.exceptions.QueueDeletedRecently:
        return False
    return True


def test_an_outage_is_dead_lettered_then_moved_back_and_each_key_runs_once(engine: Engine) -> None:
    assert engine.stack is not None
    sqs = engine.http_client("sqs")
    keys = [f"outage-{uuid.uuid4()}" for _ in range(KEYS)]
    # The outage: the side effect refuses every call with an error the workflow does not retry.
    engine.faults.fail_next(engine.workflow.side_effect_function, KEYS, error="PaymentsUnavailable", message="outage")
    before = len(deliveries(engine))
    for key in keys:
        sqs.send_message(
            QueueUrl=engine.stack.outputs["RequestQueueUrl"],
            MessageBody=json.dumps({"idempotencyKey": key, **payment()}),
        )

    failed = wait_for_deliveries(engine, KEYS, before)
    assert sorted(d["outcome"] for d in failed) == ["DEAD_LETTERED"] * KEYS
    letters = dead_letters(engine)
    assert sorted(json.loads(m["Body"])["idempotencyKey"] for m in letters) == sorted(keys)
    assert {attribute(m, "ERROR_CODE") for m in letters} == {"PaymentsUnavailable"}  # each with its reason
    assert all(engine.workflow.side_effect_runs(key) == 0 for key in keys)

    # The fault is over (its calls are used up); the operator moves the dead letters back to the request queue.
    source = queue_arn(engine, "DoorDeadLetterQueueUrl")
    sqs.start_message_move_task(SourceArn=source, DestinationArn=queue_arn(engine, "RequestQueueUrl"))

    wait_until(
        lambda: sqs.list_message_move_tasks(SourceArn=source)["Results"][0]["Status"] == "COMPLETED",
        30,
        what="the move task to complete",
    )
    task = sqs.list_message_move_tasks(SourceArn=source)["Results"][0]
    assert (task["ApproximateNumberOfMessagesMoved"], task["ApproximateNumberOfMessagesToMove"]) == (KEYS, KEYS)
    again = wait_for_deliveries(engine, KEYS, before + KEYS)
    assert sorted(d["outcome"] for d in again) == ["COMPLETED"] * KEYS
    assert sorted(d["idempotencyKey"] for d in again) == sorted(keys)
    assert [engine.workflow.side_effect_runs(key) for key in keys] == [1] * KEYS
    assert [len(ledger_rows(engine, key)) for key in keys] == [1] * KEYS
    wait_until(lambda: queue_size(engine, "RequestQueueUrl") == 0, 10, what="the request queue to empty")
    assert queue_size(engine, "DoorDeadLetterQueueUrl") == 0


def test_an_intake_that_could_not_dead_letter_is_redriven_and_reruns_only_its_unsuccessful_deliveries(
    engine: Engine,
) -> None:
    # The runbook's IntakeFailedAlarm: the dead-letter queue was deleted by mistake, so a delivery the intake
    # must dead-letter cannot be (its send fails through its retries) and the intake execution fails, its batch
    # in its input. The operator recreates the queue and redrives the intake (RedriveExecution: an Inline Map
    # reruns "only those iterations that failed or aborted", developer guide). Every delivery then ends once:
    # each key's side effect ran once, the bad message is dead-lettered with its reason.
    assert engine.stack is not None
    sqs, sfn = engine.http_client("sqs"), engine.http_client("stepfunctions")
    intake = engine.stack.outputs["IntakeStateMachineArn"]
    dead_letter_url = engine.stack.outputs["DoorDeadLetterQueueUrl"]
    before = {e["executionArn"] for e in sfn.list_executions(stateMachineArn=intake)["executions"]}
    keys = [f"redrive-{uuid.uuid4()}" for _ in range(2)]
    sqs.delete_queue(QueueUrl=dead_letter_url)
    for key in keys:
        sqs.send_message(
            QueueUrl=engine.stack.outputs["RequestQueueUrl"],
            MessageBody=json.dumps({"idempotencyKey": key, **payment()}),
        )
    sqs.send_message(QueueUrl=engine.stack.outputs["RequestQueueUrl"], MessageBody="not json")

    def ended() -> list[dict[str, Any]] | None:
        found = [
            e for e in sfn.list_executions(stateMachineArn=intake)["executions"] if e["executionArn"] not in before
        ]
        delivered = sum(len(json.loads(sfn.describe_execution(executionArn=e["executionArn"])["input"])) for e in found)
        done = found and all(e["status"] != "RUNNING" for e in found) and delivered >= len(keys) + 1
        return found if done else None

    intakes = wait_until(ended, 30, what="the intake executions to end")
    failed = [e["executionArn"] for e in intakes if e["status"] == "FAILED"]
    assert len(failed) == 1, intakes  # the one holding the message that could not be dead-lettered
    first_attempt = engine.history(failed[0])
    succeeded = {
        e["mapIterationSucceededEventDetails"]["index"] for e in first_attempt if e["type"] == "MapIterationSucceeded"
    }
    assert [engine.workflow.side_effect_runs(key) for key in keys] == [1, 1]

    # The same name (so the same URL and ARN), once SQS frees it: 60 s after the deletion, scaled here.
    wait_until(lambda: created(sqs, dead_letter_url.rsplit("/", 1)[1]), 10, what="the queue's name to be free")
    sfn.redrive_execution(executionArn=failed[0])
    wait_until(lambda: sfn.describe_execution(executionArn=failed[0])["status"] != "RUNNING", 30, what="the redrive")

    described = sfn.describe_execution(executionArn=failed[0])
    assert (described["status"], described["redriveCount"]) == ("SUCCEEDED", 1)
    history = engine.history(failed[0])
    redriven_at = next(e["id"] for e in history if e["type"] == "ExecutionRedriven")
    rerun = {
        e["mapIterationStartedEventDetails"]["index"]
        for e in history
        if e["id"] > redriven_at and e["type"] == "MapIterationStarted"
    }
    assert rerun and not rerun & succeeded  # only what had not succeeded runs again
    outcomes = {d.get("idempotencyKey"): d["outcome"] for d in json.loads(described["output"])["deliveries"]}
    assert [outcomes[key] for key in keys if key in outcomes] == ["COMPLETED"] * sum(k in outcomes for k in keys)
    assert sorted(outcomes.values()).count("DEAD_LETTERED") == 1
    letters = dead_letters(engine)
    assert [m["Body"] for m in letters] == ["not json"]
    assert attribute(letters[0], "ERROR_CODE")  # with its reason
    assert [engine.workflow.side_effect_runs(key) for key in keys] == [1, 1]  # nothing ran twice
