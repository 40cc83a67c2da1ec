"""The queue door (QueueFrontDoor=true) on the embedded engine: messages sent with plain boto3 ``send_message``
to the template's request queue reach the workflow through the template's pipe and intake state machine,
once per key, and every message is accounted for: a completed key or the doors' dead-letter queue.

The transformations are the template's own (the pipe's InputTemplate, the intake's definition), applied
by the engine's pipes service as EventBridge Pipes applies them (its tests cite each page); what SQS does
with a message is SQS's (messageId stable across redeliveries: SQS developer guide,
sqs-visibility-timeout, "the message is again visible ... receive it again" with the same MessageId)."""

from __future__ import annotations

import json
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from idemflow.contract import PAYLOAD_TOO_LARGE, WorkflowError
from idemflow.engine import Engine
from tests.charge.side_effect import ledger_rows, payment
from tests.functional.doors import (
    DOORS,
    ONCE,
    attribute,
    dead_letters,
    deliveries,
    one_side_effect,
    queue_size,
    side_effect_of,
    wait_for_deliveries,
)
from tests.polling import wait_until

# Waits scaled by 0.01. A duplicate whose key's owner still runs polls the owner's record every 10 ms for
# 0.3 s (InProgressMaxPolls=30: a bounded polling load while 50 messages run), then fails
# IdempotencyInProgress, and the intake waits a lease (60 s, so 0.6 s here) before it starts it again: the
# owner has completed by then and the new start replays. A lease of 60 s still outlasts the charge
# function's worst case (Timeout 10 s, its retries and their backoff), and leases count real time.
OVERRIDES = {**DOORS, "QueueVisibilityTimeout": "0", "InProgressMaxPolls": "30", "LockLeaseSeconds": "60"}


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(parameter_overrides=OVERRIDES, wait_time_scale=0.01) as running:
        yield running


def send(engine: Engine, body: Any, *, key: str | None = None) -> str:
    """Send one message as a producer would: a JSON body (or text), the key as the key attribute if given."""
    assert engine.stack is not None
    kwargs: dict[str, Any] = {
        "QueueUrl": engine.stack.outputs["RequestQueueUrl"],
        "MessageBody": body if isinstance(body, str) else json.dumps(body),
    }
    if key is not None:
        kwargs["MessageAttributes"] = {"idempotencyKey": {"DataType": "String", "StringValue": key}}
    return str(engine.http_client("sqs").send_message(**kwargs)["MessageId"])


def test_a_message_runs_the_workflow_once_with_the_key_in_its_body(engine: Engine) -> None:
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    message_id = send(engine, {"idempotencyKey": key, **payment()})

    (delivery,) = wait_for_deliveries(engine, 1, before)

    assert delivery["outcome"] == "COMPLETED"
    assert (delivery["sourceId"], delivery["idempotencyKey"], delivery["keyFrom"]) == (message_id, key, "field")
    assert delivery["replayed"] is False
    assert engine.workflow.side_effect_runs(key) == 1
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == "COMPLETED"
    wait_until(lambda: queue_size(engine, "RequestQueueUrl") == 0, 10, what="the request queue to empty")


def test_the_key_attribute_comes_before_the_body_field_and_a_number_is_taken_as_text(engine: Engine) -> None:
    before = len(deliveries(engine))
    attribute_key, number = f"order-{uuid.uuid4()}", int(uuid.uuid4().int % 10**12)
    send(engine, {"idempotencyKey": "not-this-one", **payment()}, key=attribute_key)
    send(engine, {"idempotencyKey": number, **payment()})

    found = wait_for_deliveries(engine, 2, before)

    keys = {d["idempotencyKey"]: d["keyFrom"] for d in found}
    assert keys == {attribute_key: "attribute", str(number): "field"}
    assert engine.workflow.side_effect_runs(attribute_key) == 1 and engine.workflow.side_effect_runs(str(number)) == 1
    assert engine.workflow.side_effect_runs("not-this-one") == 0


def test_a_message_delivered_twice_runs_the_side_effect_once_and_the_second_delivery_replays(engine: Engine) -> None:
    # The pipe stops between starting the intake and deleting the batch: the message's visibility timeout
    # ends (0 s here) and it is received and delivered again, with the same messageId.
    before = len(deliveries(engine))
    engine.faults.keep_batch_next("QueuePipe")
    message_id = send(engine, payment(amount=1234))  # no business key: the door keys it by its messageId

    first, second = wait_for_deliveries(engine, 2, before)

    key = f"sqs:{message_id}"
    assert [d["sourceId"] for d in (first, second)] == [message_id, message_id]
    assert [(d["outcome"], d["idempotencyKey"], d["keyFrom"]) for d in (first, second)] == [
        ("COMPLETED", key, "sourceId")
    ] * 2
    assert sorted([first["replayed"], second["replayed"]]) == [False, True]
    assert engine.workflow.side_effect_runs(key) == 1
    wait_until(lambda: queue_size(engine, "RequestQueueUrl") == 0, 10, what="the request queue to empty")


def test_a_producer_sending_the_same_business_key_twice_runs_the_side_effect_once(engine: Engine) -> None:
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    ids = {send(engine, payment(amount=2500), key=key)}
    wait_for_deliveries(engine, 1, before)
    ids.add(send(engine, payment(amount=2500), key=key))  # the producer sends it again (the 50-message test
    # below sends duplicates at once)

    found = wait_for_deliveries(engine, 2, before)

    assert len(ids) == 2  # two sends are two messages: their own ids would not have caught the duplicate
    assert {d["sourceId"] for d in found} == ids
    assert [d["outcome"] for d in found] == ["COMPLETED", "COMPLETED"]
    assert sorted(d["replayed"] for d in found) == [False, True]
    assert engine.workflow.side_effect_runs(key) == 1


def test_fifty_messages_for_ten_keys_at_once_run_ten_side_effects_and_every_message_is_accounted_for(
    engine: Engine,
) -> None:
    assert engine.stack is not None
    before = len(deliveries(engine))
    keys = [f"order-{uuid.uuid4()}" for _ in range(10)]
    sqs = engine.http_client("sqs")
    sent: list[str] = []
    for batch in range(5):  # SendMessageBatch takes 10 at most: each batch has every key once
        answer = sqs.send_message_batch(
            QueueUrl=engine.stack.outputs["RequestQueueUrl"],
            Entries=[
                {
                    "Id": str(i),
                    "MessageBody": json.dumps(payment(amount=100 + i)),
                    "MessageAttributes": {"idempotencyKey": {"DataType": "String", "StringValue": key}},
                }
                for i, key in enumerate(keys)
            ],
        )
        assert len(answer["Successful"]) == 10, (batch, answer.get("Failed"))
        sent.extend(entry["MessageId"] for entry in answer["Successful"])

    found = wait_for_deliveries(engine, 50, before, timeout=120)

    assert sorted(d["sourceId"] for d in found) == sorted(sent)  # every message, once
    assert Counter(d["outcome"] for d in found) == {"COMPLETED": 50}
    assert Counter(d["idempotencyKey"] for d in found) == dict.fromkeys(keys, 5)
    assert Counter(d["replayed"] for d in found) == {False: 10, True: 40}
    assert {key: side_effect_of(engine, key) for key in keys} == dict.fromkeys(keys, ONCE)
    assert not [m for m in dead_letters(engine) if attribute(m, "idempotencyKey") in keys]


def test_a_keys_side_effect_counts_as_one_with_one_answered_run_and_one_ledger_row() -> None:
    assert one_side_effect(["ok"], 1) == ONCE
    assert one_side_effect(["timeout", "ok"], 1) == ONCE  # timed out under load, retried by the definition
    assert one_side_effect(["ok", "ok"], 1) != ONCE  # two runs answered: two owners
    assert one_side_effect(["error", "ok"], 1) != ONCE  # an error the definition does not retry
    assert one_side_effect(["timeout"], 1) != ONCE  # no run answered
    assert one_side_effect(["ok"], 2) != ONCE  # two charges


def test_a_message_that_is_not_json_goes_to_the_dead_letter_queue_without_a_side_effect(engine: Engine) -> None:
    before = len(deliveries(engine))
    message_id = send(engine, "amount=4200&currency=EUR")

    (delivery,) = wait_for_deliveries(engine, 1, before)

    assert (delivery["outcome"], delivery["error"]) == ("DEAD_LETTERED", WorkflowError.PAYLOAD_INVALID)
    (dead,) = [m for m in dead_letters(engine) if attribute(m, "SOURCE_ID") == f"sqs:{message_id}"]
    assert dead["Body"] == "amount=4200&currency=EUR"  # the message as it came
    assert attribute(dead, "ERROR_CODE") == WorkflowError.PAYLOAD_INVALID
    assert attribute(dead, "idempotencyKey") == f"sqs:{message_id}"
    assert engine.workflow.side_effect_runs(f"sqs:{message_id}") == 0
    assert engine.workflow.record(f"sqs:{message_id}") is None  # nothing was written


def test_a_key_reused_with_another_body_goes_to_the_dead_letter_queue_and_the_first_result_stays(
    engine: Engine,
) -> None:
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    send(engine, payment(amount=700), key=key)
    wait_for_deliveries(engine, 1, before)
    send(engine, payment(amount=900), key=key)

    (delivery,) = wait_for_deliveries(engine, 1, before + 1)

    assert (delivery["outcome"], delivery["error"]) == ("DEAD_LETTERED", WorkflowError.KEY_REUSED)
    (dead,) = [m for m in dead_letters(engine) if attribute(m, "idempotencyKey") == key]
    assert json.loads(dead["Body"]) == payment(amount=900)
    assert attribute(dead, "ERROR_CODE") == WorkflowError.KEY_REUSED
    # The reason names the failed execution, so that its history can be read.
    assert ":execution:idemflow-IdempotentStateMachine:" in attribute(dead, "ERROR_MESSAGE")
    assert engine.workflow.side_effect_runs(key) == 1
    record = engine.workflow.record(key)
    assert record is not None and record["status"] == "COMPLETED"


def test_a_side_effect_that_fails_once_with_its_transient_error_is_retried_and_runs_once(engine: Engine) -> None:
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    engine.faults.fail_next(engine.workflow.side_effect_function, 1, "PaymentProviderUnavailableError", "try again")
    send(engine, payment(amount=3100), key=key)

    (delivery,) = wait_for_deliveries(engine, 1, before)

    assert (delivery["outcome"], delivery["replayed"]) == ("COMPLETED", False)
    attempts = [
        i for i in engine.workflow.invocations() if isinstance(i.event, dict) and i.event.get("idempotencyKey") == key
    ]
    assert [i.ran for i in attempts] == [False, True]  # the injected failure, then the workflow's retry
    assert len(ledger_rows(engine, key)) == 1


def test_a_duplicate_refused_while_its_owner_runs_is_started_again_by_the_intake_and_replays(engine: Engine) -> None:
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    hold = threading.Event()
    engine.faults.before_dynamodb("SaveResult", lambda: hold.wait(30))  # the owner stops before saving
    send(engine, payment(amount=6100), key=key)
    wait_until(lambda: engine.workflow.side_effect_runs(key) == 1, 30, what="the owner to run the side effect")
    send(engine, payment(amount=6100), key=key)  # its duplicate polls the owner, then fails InProgress

    wait_until(lambda: intake_entered(engine, "WaitForOwner"), 30, what="the intake to wait for the owner")
    hold.set()
    found = wait_for_deliveries(engine, 2, before)

    assert [(d["outcome"], d["replayed"]) for d in found] == [("COMPLETED", False), ("COMPLETED", True)]
    assert engine.workflow.side_effect_runs(key) == 1


def intake_entered(engine: Engine, state: str) -> bool:
    """Whether a running intake execution has entered ``state``."""
    assert engine.stack is not None
    sfn = engine.http_client("stepfunctions")
    running = sfn.list_executions(stateMachineArn=engine.stack.outputs["IntakeStateMachineArn"], statusFilter="RUNNING")
    return any(
        e.get("stateEnteredEventDetails", {}).get("name") == state
        for execution in running["executions"]
        for e in engine.history(execution["executionArn"])
    )


def test_json_bodies_that_are_no_object_go_to_the_dead_letter_queue_and_never_fail_their_batch(engine: Engine) -> None:
    # A body SQS accepts whose JSON is null, an empty string, a number or a boolean: no payload for the
    # workflow. Dead-lettered as its JSON text (a null or empty body cannot be sent), one by one.
    before = len(deliveries(engine))
    bodies = {send(engine, body): body for body in ("null", '""', "42", "true")}

    found = wait_for_deliveries(engine, 4, before)  # every intake succeeded (deliveries() asserts it)

    assert {(d["sourceId"], d["outcome"], d["error"]) for d in found} == {
        (message_id, "DEAD_LETTERED", WorkflowError.PAYLOAD_INVALID) for message_id in bodies
    }
    dead = {attribute(m, "SOURCE_ID"): m["Body"] for m in dead_letters(engine)}
    assert {message_id: dead[f"sqs:{message_id}"] for message_id in bodies} == bodies


def test_a_key_with_whitespace_at_an_end_is_dead_lettered_never_trimmed_into_another_key(engine: Engine) -> None:
    # The key grammar (docs/contract.md, "Keys"): the workflow refuses a key with a space or tab at either end
    # (IdempotencyKeyInvalid); the intake dead-letters the message with that reason, the key as it came.
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    sent = {send(engine, {"idempotencyKey": f" {key}", **payment()}), send(engine, payment(), key=f"{key}\t")}

    found = wait_for_deliveries(engine, 2, before)

    assert {(d["outcome"], d["error"]) for d in found} == {("DEAD_LETTERED", WorkflowError.KEY_INVALID)}
    dead = [m for m in dead_letters(engine) if attribute(m, "SOURCE_ID") in {f"sqs:{s}" for s in sent}]
    assert sorted(attribute(m, "idempotencyKey") for m in dead) == sorted([f" {key}", f"{key}\t"])
    assert all(attribute(m, "ERROR_CODE") == WorkflowError.KEY_INVALID for m in dead)
    assert engine.workflow.side_effect_runs(key) == 0 and engine.workflow.record(key) is None


def test_a_payload_over_what_the_workflow_fingerprints_is_dead_lettered_by_name(engine: Engine) -> None:
    # States.Hash takes 10,000 characters at most (intrinsic-functions): the workflow fails in DeriveKeys with
    # States.Runtime before anything is written, and the intake names it (PAYLOAD_TOO_LARGE) in the dead
    # letter; the batch-mate beside it completes.
    before = len(deliveries(engine))
    key, mate = f"order-{uuid.uuid4()}", f"order-{uuid.uuid4()}"
    large = send(engine, {"idempotencyKey": key, **payment(), "note": "n" * 10_001})
    send(engine, {"idempotencyKey": mate, **payment()})

    found = {d["sourceId"]: d for d in wait_for_deliveries(engine, 2, before)}

    assert (found[large]["outcome"], found[large]["error"]) == ("DEAD_LETTERED", PAYLOAD_TOO_LARGE)
    (dead,) = [m for m in dead_letters(engine) if attribute(m, "SOURCE_ID") == f"sqs:{large}"]
    assert attribute(dead, "ERROR_CODE") == PAYLOAD_TOO_LARGE and "States.Hash" in attribute(dead, "ERROR_MESSAGE")
    assert json.loads(dead["Body"])["note"] == "n" * 10_001  # the message as it came
    assert engine.workflow.record(key) is None and engine.workflow.side_effect_runs(key) == 0
    assert engine.workflow.side_effect_runs(mate) == 1


def test_the_pipe_is_listed_described_and_a_stopped_pipe_reads_nothing_until_started(engine: Engine) -> None:
    # Amazon EventBridge Pipes API reference: ListPipes, DescribePipe (CurrentState, DesiredState), StopPipe,
    # StartPipe. The runbook's operator stops a pipe while a fault lasts and starts it again after.
    from idemflow.engine.services.pipes.service import Pipes

    pipes = engine.http_client("pipes")
    (listed,) = pipes.list_pipes()["Pipes"]
    described = pipes.describe_pipe(Name=listed["Name"])
    assert (listed["CurrentState"], described["DesiredState"]) == ("RUNNING", "RUNNING")
    assert described["Target"] == engine.service(Pipes).pipes[0].target == listed["Target"]
    assert described["Source"].endswith(":" + str(engine.stack.outputs["RequestQueueUrl"]).rsplit("/", 1)[1])
    stats = engine.service(Pipes).stats[listed["Name"]]

    pipes.stop_pipe(Name=listed["Name"])
    before = len(deliveries(engine))
    key = f"order-{uuid.uuid4()}"
    send(engine, {"idempotencyKey": key, **payment()})
    polls = stats.stopped_polls
    wait_until(lambda: stats.stopped_polls >= polls + 3, 10, what="the stopped poller to pass the message by")

    assert pipes.describe_pipe(Name=listed["Name"])["DesiredState"] == "STOPPED"
    assert queue_size(engine, "RequestQueueUrl") == 1 and len(deliveries(engine)) == before
    pipes.start_pipe(Name=listed["Name"])
    (delivery,) = wait_for_deliveries(engine, 1, before)
    assert (delivery["idempotencyKey"], delivery["outcome"]) == (key, "COMPLETED")
    assert pipes.describe_pipe(Name=listed["Name"])["CurrentState"] == "RUNNING"


def test_the_stacks_queue_url_outputs_are_the_urls_the_local_endpoint_answers(engine: Engine) -> None:
    # On AWS a queue's Ref (its URL) is what GetQueueUrl answers; locally GetQueueUrl answers the engine's
    # endpoint, and so do the outputs (the engine's stack, and DescribeStacks through the endpoint).
    assert engine.stack is not None
    sqs = engine.http_client("sqs")
    for output in ("RequestQueueUrl", "DoorDeadLetterQueueUrl"):
        url = engine.stack.outputs[output]
        assert url == sqs.get_queue_url(QueueName=url.rsplit("/", 1)[1])["QueueUrl"]
        assert url.startswith(f"{engine.endpoint_url}/")
    (described,) = engine.http_client("cloudformation").describe_stacks(StackName=engine.stack.name)["Stacks"]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described["Outputs"]}
    assert outputs["RequestQueueUrl"] == engine.stack.outputs["RequestQueueUrl"]


def _one_line_reason(dead: dict[str, Any]) -> str:
    """The dead letter's ERROR_MESSAGE, checked to be one line with no stack trace in it."""
    reason = attribute(dead, "ERROR_MESSAGE")
    assert len(reason.splitlines()) == 1, reason
    assert "stackTrace" not in reason and "Traceback" not in reason and 'File "' not in reason, reason
    return reason


def test_every_dead_letter_gives_its_reason_in_one_line(engine: Engine) -> None:
    # ERROR_MESSAGE is "<ERROR_CODE>: <the first line of the cause> (execution <arn>)": a function's error is
    # its errorMessage (the workflow's ReadFunctionError); its stack trace stays in the failed execution's
    # history. Each message is sent after the last one ended, so that each injected fault meets its own.
    function = engine.workflow.side_effect_function
    before = len(deliveries(engine))
    reasons: dict[str, dict[str, Any]] = {}

    def dead_letter_of(name: str, body: Any, key: str | None = None) -> dict[str, Any]:
        nonlocal before
        source = send(engine, body, key=key)
        (delivery,) = wait_for_deliveries(engine, 1, before)
        before += 1
        assert delivery["outcome"] == "DEAD_LETTERED", delivery
        (dead,) = [m for m in dead_letters(engine) if attribute(m, "SOURCE_ID") == f"sqs:{source}"]
        reasons[name] = dead
        return dead

    # The charge's own error, raised in its handler: a real stack trace in the task's cause.
    declined = f"order-{uuid.uuid4()}"
    dead = dead_letter_of("function", {"idempotencyKey": declined, **payment(amount=-5)})
    reason = _one_line_reason(dead)
    assert reason.startswith("PaymentValidationError: payload.amount must be positive, got -5 (execution arn:")
    execution = reason.rsplit("(execution ", 1)[1].removesuffix(")")
    (failed,) = [e for e in engine.history(execution) if e["type"] == "TaskFailed"]
    assert json.loads(failed["taskFailedEventDetails"]["cause"])["stackTrace"]  # kept where it belongs

    # A message of several lines: its first line that is not empty.
    engine.faults.fail_next(function, 1, "PaymentDeclinedError", "\ncard declined\n  by the issuer\nsee the ledger")
    dead = dead_letter_of("function, several lines", {"idempotencyKey": f"order-{uuid.uuid4()}", **payment()})
    assert _one_line_reason(dead).startswith("PaymentDeclinedError: card declined (execution arn:")

    # A message that is empty: the execution's cause is empty (or absent: the intake's WorkflowFailedWithoutCause).
    engine.faults.fail_next(function, 1, "PaymentDeclinedError", "")
    dead = dead_letter_of("function, no message", {"idempotencyKey": f"order-{uuid.uuid4()}", **payment()})
    reason = _one_line_reason(dead)
    assert reason.startswith("PaymentDeclinedError: ") and ":execution:idemflow-IdempotentStateMachine:" in reason

    # A body the intake refuses before anything starts.
    dead = dead_letter_of("rejected payload", "not json at all")
    assert _one_line_reason(dead) == (
        f"{WorkflowError.PAYLOAD_INVALID}: the message body is not a JSON object or array"
    )

    # The workflow's own failure.
    reused = f"order-{uuid.uuid4()}"
    send(engine, payment(amount=700), key=reused)
    wait_for_deliveries(engine, 1, before)
    before += 1
    dead = dead_letter_of("key reused", payment(amount=900), key=reused)
    assert _one_line_reason(dead).startswith(
        f"{WorkflowError.KEY_REUSED}: this idempotency key was used with another payload; the record is left "
        "untouched (execution arn:"
    )

    # A States.* error: a cause that Step Functions cut at its 32,768 characters just after a '}' reads like a
    # function's error JSON and is not one: parsing it fails the workflow with States.Runtime after the lock
    # was released, and the delivery is dead-lettered all the same.
    cut = f"order-{uuid.uuid4()}"
    engine.faults.fail_next(function, 1, "PaymentDeclinedError", "}" * 40_000)
    dead = dead_letter_of("States.* error", {"idempotencyKey": cut, **payment()})
    assert attribute(dead, "ERROR_CODE") == "States.Runtime"
    # AWS starts a States.Runtime cause with the state's name (tests/conformance/test_intrinsics.py).
    assert _one_line_reason(dead).startswith(
        "States.Runtime: An error occurred while executing the state 'FunctionErrorMessage'"
    )
    assert engine.workflow.record(cut) is None and engine.workflow.side_effect_runs(cut) == 0

    assert set(reasons) == {
        "function",
        "function, several lines",
        "function, no message",
        "rejected payload",
        "key reused",
        "States.* error",
    }
