"""The grants of the orders example's roles are needed: each removed from a copy of the example's template, the
order fails at the step whose call it allowed, refused as AWS refuses it. The engine decides each
task's and function's calls under its role (docs/local.md, "Permissions"); the HTTP Task's calls
(``events:RetrieveConnectionCredentials``, the connection's secret, ``states:InvokeHTTPEndpoint``) are not decided
locally yet, nor ``.sync``'s DescribeExecution and StopExecution, so those grants are not covered here."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from idemflow.engine import Engine
from idemflow.template.loader import load_template
from tests.http_server import Answer, Seen, serving

EXAMPLE = Path(__file__).resolve().parent.parent
ROOT = EXAMPLE.parent.parent
ORDER: dict[str, Any] = json.loads((EXAMPLE / "events" / "order.json").read_text())


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project and the example, laid out as in the checkout (the example nests ../../template.yaml)."""
    root = tmp_path_factory.mktemp("orders")
    for folder in ("statemachine", "functions", "layers"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "template.yaml", root / "template.yaml")
    shutil.copytree(EXAMPLE, root / "examples" / "orders", ignore=shutil.ignore_patterns("__pycache__", "tests"))
    return root / "examples" / "orders"


def _without(template: dict[str, Any], logical_id: str, sid: str) -> None:
    for policy in template["Resources"][logical_id]["Properties"]["Policies"]:
        statements = policy["Statement"]
        if any(s.get("Sid") == sid for s in statements):
            policy["Statement"] = [s for s in statements if s.get("Sid") != sid]
            return
    raise AssertionError(f"{logical_id} has no statement {sid}: the test must follow the template")


@pytest.fixture(scope="module")
def provider_url() -> Iterator[str]:
    """A payment provider that charges every request (the charge's grants are not what these tests remove)."""

    def charge(seen: Seen) -> Answer:
        body = json.loads(seen.body)
        return Answer.json({"id": f"ch_{uuid.uuid4().hex}", "amount": body["amount"], "currency": body["currency"]})

    with serving({"/v1/charges": charge}) as server:
        yield server.url


@pytest.fixture
def order_without(copy: Path, provider_url: str) -> Iterator[Any]:
    started: list[Engine] = []

    def start(logical_id: str, sid: str) -> tuple[Engine, dict[str, Any]]:
        template = load_template(EXAMPLE / "template.yaml")
        _without(template, logical_id, sid)
        path = copy / f"template-{uuid.uuid4().hex}.yaml"
        path.write_text(json.dumps(template, indent=1))
        overrides = {"PaymentProviderUrl": provider_url}
        engine = Engine(path, parameter_overrides=overrides, wait_time_scale=0, workflow="ReserveGuard").start()
        started.append(engine)
        return engine, {**ORDER, "orderId": f"order-{uuid.uuid4()}"}

    yield start
    for engine in started:
        engine.stop()


def _histories(engine: Engine) -> str:
    """Every execution's history on the engine, as one text (where a denial shows, whichever execution met it)."""
    sfn = engine.client("stepfunctions")
    text = []
    for machine in sfn.list_state_machines()["stateMachines"]:
        for execution in sfn.list_executions(stateMachineArn=machine["stateMachineArn"])["executions"]:
            text.append(json.dumps(engine.history(execution["executionArn"]), default=str))
    return "\n".join(text)


@pytest.mark.parametrize(
    ("logical_id", "sid", "action", "failed_at"),
    [
        ("OrderStateMachine", "StartGuards", "states:StartExecution", "ReserveStock"),
        ("OrderStateMachine", "GuardExecutionEvents", "events:PutTargets", "ReserveStock"),
        ("ReserveStockFunction", "ReservationWrites", "dynamodb:PutItem", "ReserveStock"),
        ("ShipStateMachine", "ShipmentWrites", "dynamodb:PutItem", "RequestShipment"),
    ],
)
def test_an_order_whose_role_lacks_a_grant_fails_where_it_is_needed(
    order_without: Any, logical_id: str, sid: str, action: str, failed_at: str
) -> None:
    engine, order = order_without(logical_id, sid)
    sfn = engine.client("stepfunctions")
    assert engine.stack is not None
    arn = sfn.start_execution(stateMachineArn=engine.stack.outputs["OrderStateMachineArn"], input=json.dumps(order))[
        "executionArn"
    ]
    outcome = engine.wait(arn)

    assert outcome.status == "FAILED"
    assert outcome.path[-1] == failed_at
    assert f"is not authorized to perform: {action}" in _histories(engine)
