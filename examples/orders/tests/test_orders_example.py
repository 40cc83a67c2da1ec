"""The orders example on the embedded engine: the user's own state machine (order.asl.json) guards three of its steps
by running the project's workflow, nested once per kind in the example's template, with startExecution.sync:2.

- ReserveStock: the workflow around a function (ReserveStockFunction, counted by its invocations);
- ChargeCard: the workflow around a state machine (charge.asl.json) whose HTTP Task charges a fake payment provider
  (this module's, on 127.0.0.1) through an EventBridge connection, with the workflow's key as Idempotency-Key;
- RequestShipment: the workflow around a state machine (ship.asl.json) whose SDK task (aws-sdk:dynamodb:putItem)
  writes a row.

Each side effect is counted where it happens: the function's invocations, the child executions
(ListExecutions of the child state machine), the provider's charges per Idempotency-Key, the rows written.

Run it with ``pytest examples/orders`` (``make test`` runs it too).
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from idemflow.contract import WorkflowError
from idemflow.engine import Engine
from idemflow.engine.engine import ExecutionOutcome
from tests.http_server import Answer, Seen, serving

EXAMPLE = Path(__file__).resolve().parent.parent
README = EXAMPLE / "README.md"
ORDER: dict[str, Any] = json.loads((EXAMPLE / "events" / "order.json").read_text())
API_KEY = "sk_test_example"  # the template's PaymentProviderApiKey default: what the connection sends
GUARDS = {"ReserveStock": "ReserveWorkflowArn", "ChargeCard": "ChargeWorkflowArn", "RequestShipment": "ShipWorkflowArn"}
CHILDREN = {"ChargeCard": "ChargeStateMachineArn", "RequestShipment": "ShipStateMachineArn"}
STEP_KEYS = {"ReserveStock": "reserve", "ChargeCard": "charge", "RequestShipment": "ship"}


@dataclass
class Provider:
    """A fake payment provider: POST /v1/charges, which honours the Idempotency-Key header as providers that offer
    it do (a key seen before answers its first charge again and charges nothing), counts the charges it made per
    key, and answers 503 while it is down."""

    url: str = ""
    down: bool = False
    charges: Counter[str] = field(default_factory=Counter)
    answered: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def charge(self, seen: Seen) -> Answer:
        with self.lock:
            self.requests.append(seen)
            if self.down:
                return Answer.json({"error": "service unavailable"}, 503)
            if seen.headers.get("x-api-key") != API_KEY:
                return Answer.json({"error": "invalid API key"}, 401)
            key = seen.headers.get("idempotency-key")
            if not key:
                return Answer.json({"error": "Idempotency-Key required"}, 400)
            if key not in self.answered:
                body = json.loads(seen.body)
                self.charges[key] += 1
                charge = {"id": f"ch_{uuid.uuid4().hex}", "amount": body["amount"], "currency": body["currency"]}
                self.answered[key] = charge
            return Answer.json(self.answered[key])


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    fake = Provider()
    with serving({"/v1/charges": fake.charge}) as server:
        fake.url = server.url
        yield fake


@pytest.fixture(scope="module")
def engine(provider: Provider) -> Iterator[Engine]:
    with Engine(
        EXAMPLE / "template.yaml",
        parameter_overrides={"PaymentProviderUrl": provider.url},
        wait_time_scale=0,
        workflow="ReserveGuard",  # engine.workflow: the one around the reserve function (its invocations)
    ) as running:
        yield running


def output(engine: Engine, name: str) -> str:
    assert engine.stack is not None
    return str(engine.stack.outputs[name])


def an_order() -> dict[str, Any]:
    return {**ORDER, "orderId": f"order-{uuid.uuid4()}"}


def start(engine: Engine, order: dict[str, Any]) -> str:
    sfn = engine.client("stepfunctions")
    started = sfn.start_execution(stateMachineArn=output(engine, "OrderStateMachineArn"), input=json.dumps(order))
    return str(started["executionArn"])


def run(engine: Engine, order: dict[str, Any]) -> ExecutionOutcome:
    return engine.wait(start(engine, order))


def executions(engine: Engine, state_machine_output: str, key: str) -> list[dict[str, Any]]:
    """The executions of a state machine of the stack that were started for ``key``, oldest first, as
    DescribeExecution answers them."""
    sfn = engine.client("stepfunctions")
    arn = output(engine, state_machine_output)
    listed = sfn.list_executions(stateMachineArn=arn)["executions"]
    described = [sfn.describe_execution(executionArn=e["executionArn"]) for e in listed]
    mine = [d for d in described if json.loads(d["input"]).get("idempotencyKey") == key]
    return sorted(mine, key=lambda d: d["startDate"])


def rows(engine: Engine, table_output: str, key: str) -> list[dict[str, Any]]:
    return [r for r in engine.tables.items(output(engine, table_output)) if r["idempotencyKey"] == key]


def side_effects(engine: Engine, provider: Provider, order_id: str) -> dict[str, int]:
    """How many times each side effect of the order ran, counted where it happens."""
    return {
        "reserve invocations": len(engine.workflow.runs(f"{order_id}#reserve")),
        "reservations": len(rows(engine, "ReservationsTableName", f"{order_id}#reserve")),
        "charges at the provider": provider.charges[f"{order_id}#charge"],
        "charge children": len(executions(engine, "ChargeStateMachineArn", f"{order_id}#charge")),
        "ship children": len(executions(engine, "ShipStateMachineArn", f"{order_id}#ship")),
        "shipments": len(rows(engine, "ShipmentsTableName", f"{order_id}#ship")),
    }


ONCE = dict.fromkeys(
    ["reserve invocations", "reservations", "charges at the provider", "charge children", "ship children", "shipments"],
    1,
)


def test_an_order_started_twice_runs_each_side_effect_once_and_the_second_replays_the_first(
    engine: Engine, provider: Provider
) -> None:
    order = an_order()

    first, second = run(engine, order), run(engine, order)

    assert first.status == "SUCCEEDED", first.cause
    assert second.status == "SUCCEEDED", second.cause
    assert first.output["status"] == "CONFIRMED"
    assert second.output == first.output  # the same reservation, charge and shipment: replayed from the records
    assert side_effects(engine, provider, order["orderId"]) == ONCE
    charge = f"{order['orderId']}#charge"
    (request,) = [r for r in provider.requests if r.headers.get("idempotency-key") == charge]
    assert json.loads(request.body) == {"orderId": order["orderId"], "amount": 4200, "currency": "EUR"}
    assert first.output["chargeId"] == provider.answered[charge]["id"]
    # The unguarded steps ran in both; each guarded step's workflow ran once more, and replayed.
    assert (
        first.path
        == second.path
        == [
            "ValidateOrder",
            "AcceptOrder",
            "ReserveStock",
            "ChargeCard",
            "RequestShipment",
            "ConfirmOrder",
        ]
    )
    for step, workflow in GUARDS.items():
        runs = executions(engine, workflow, f"{order['orderId']}#{STEP_KEYS[step]}")
        assert [json.loads(r["output"])["replayed"] for r in runs] == [False, True]


def test_an_order_started_ten_times_at_once_runs_each_side_effect_once(engine: Engine, provider: Provider) -> None:
    order = an_order()
    arns: list[str] = []
    ready = threading.Barrier(10)

    def go() -> None:
        ready.wait()
        arns.append(start(engine, order))

    threads = [threading.Thread(target=go) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outcomes = [engine.wait(arn) for arn in arns]

    assert side_effects(engine, provider, order["orderId"]) == ONCE
    succeeded = [o for o in outcomes if o.status == "SUCCEEDED"]
    assert succeeded and all(o.output == succeeded[0].output for o in succeeded)
    # The others waited for the owner of a step's key and gave up (the duplicate's wait, InProgressMaxPolls).
    for failed in (o for o in outcomes if o.status != "SUCCEEDED"):
        assert failed.error == "States.TaskFailed"
        assert json.loads(str(failed.cause))["Error"] == WorkflowError.IN_PROGRESS
    # Started again once they are done, the order replays every step.
    again = run(engine, order)
    assert again.status == "SUCCEEDED" and again.output == succeeded[0].output
    assert side_effects(engine, provider, order["orderId"]) == ONCE


def test_a_charge_that_fails_midway_and_is_redriven_runs_the_completed_step_once(
    engine: Engine, provider: Provider
) -> None:
    order = an_order()
    provider.down = True
    try:
        failed = run(engine, order)
    finally:
        provider.down = False

    # The stock was reserved; the provider answered 503 to the charge and its 3 retries (the workflow's
    # ProviderUnavailableError, the key released); no charge was made and no shipment requested.
    assert (failed.status, failed.error) == ("FAILED", "States.TaskFailed")
    assert json.loads(str(failed.cause))["Error"] == "ProviderUnavailableError"
    assert failed.path[-1] == "ChargeCard"
    charge = f"{order['orderId']}#charge"
    assert len([r for r in provider.requests if r.headers.get("idempotency-key") == charge]) == 4
    assert {**side_effects(engine, provider, order["orderId"])} == {
        **ONCE,
        "charges at the provider": 0,
        "charge children": 4,
        "ship children": 0,
        "shipments": 0,
    }

    engine.client("stepfunctions").redrive_execution(executionArn=failed.arn)
    redriven = engine.wait(failed.arn)

    assert redriven.status == "SUCCEEDED", redriven.cause
    # Redriven from ChargeCard: ReserveStock was not entered again, and its workflow ran once.
    history = engine.history(failed.arn)
    entered = [e["stateEnteredEventDetails"]["name"] for e in history if e["type"].endswith("StateEntered")]
    assert entered.count("ReserveStock") == 1 and entered.count("ChargeCard") == 2
    assert len(executions(engine, "ReserveWorkflowArn", f"{order['orderId']}#reserve")) == 1
    assert side_effects(engine, provider, order["orderId"]) == {**ONCE, "charge children": 5}
    # And the order started again replays all three steps from their records.
    again = run(engine, order)
    assert again.status == "SUCCEEDED" and again.output == redriven.output
    assert side_effects(engine, provider, order["orderId"]) == {**ONCE, "charge children": 5}


def _started_by(engine: Engine, state_machine_output: str, parent: str) -> list[str]:
    """The executions of a state machine of the stack that ``parent`` started (their input's
    AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID)."""
    sfn = engine.client("stepfunctions")
    listed = sfn.list_executions(stateMachineArn=output(engine, state_machine_output))["executions"]
    return [
        e["executionArn"]
        for e in listed
        if json.loads(sfn.describe_execution(executionArn=e["executionArn"])["input"]).get(
            "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID"
        )
        == parent
    ]


def _counts(engine: Engine, arn: str) -> tuple[int, int, int]:
    """An execution's state transitions (states entered), DynamoDB requests and Lambda invocations (its tasks)."""
    history = engine.history(arn)
    scheduled = [e["taskScheduledEventDetails"]["resourceType"] for e in history if "taskScheduledEventDetails" in e]
    entered = sum(1 for e in history if e["type"].endswith("StateEntered"))
    return entered, scheduled.count("dynamodb"), scheduled.count("lambda")


def step_cost(engine: Engine, order_arn: str, step: str) -> tuple[int, int, int, int, int]:
    """What one guarded step of one order execution cost: the order's transitions in it, the guarding workflow's
    transitions and DynamoDB requests, the child's transitions (0 for a function), and the Lambda invocations of
    the workflow and the child."""
    history = engine.history(order_arn)
    entered = [e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e]
    (workflow,) = _started_by(engine, GUARDS[step], order_arn)
    transitions, dynamodb, lambdas = _counts(engine, workflow)
    child_transitions = 0
    for child in _started_by(engine, CHILDREN[step], workflow) if step in CHILDREN else []:
        entered_child, _, lambdas_child = _counts(engine, child)
        child_transitions += entered_child
        lambdas += lambdas_child
    return entered.count(step), transitions, dynamodb, child_transitions, lambdas


def test_the_documented_cost_of_each_guarded_step_is_measured(engine: Engine) -> None:
    # examples/orders/README.md, "What each guarded step costs": per step and run, the order's transitions, the
    # guarding workflow's transitions and DynamoDB requests, the child's transitions, and Lambda invocations.
    documented = {
        (step, run_): tuple(int(n) for n in counts)
        for step, run_, *counts in re.findall(
            r"^\| `(\w+)` \| [^|]+ \| (first run|replay) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$",
            README.read_text(),
            re.MULTILINE,
        )
    }
    order = an_order()
    first, replay = run(engine, order), run(engine, order)
    assert (first.status, replay.status) == ("SUCCEEDED", "SUCCEEDED")

    measured = {
        (step, run_): step_cost(engine, outcome.arn, step)
        for step in GUARDS
        for run_, outcome in (("first run", first), ("replay", replay))
    }

    assert documented == measured, measured
    # The order's own transitions: its two unguarded steps before, one after, and one per guarded step.
    assert len(first.path) == len(replay.path) == 6
