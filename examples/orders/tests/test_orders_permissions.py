"""The grants of the orders example's roles are needed: each removed from a copy of the example's template, the
order fails at the step whose call it allowed, refused as AWS refuses it. The engine decides each task's and
function's calls under its role (docs/local.md, "Permissions"); the same template with every grant runs each step
(test_orders_example.py), so each refusal here is the grant's.

Sources of the denials' shapes:
- an SDK task's (ship.asl.json's ``aws-sdk:dynamodb:putItem``): Step Functions names an SDK task's error
  ``<Service>.<Exception>`` ("AWS SDK service integrations",
  https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html), the SDK for Java 2.x's class,
  recorded on AWS in LocalStack's AWS-validated
  tests/aws/services/stepfunctions/v2/error_handling/test_aws_sdk.snapshot.json (``test_dynamodb_invalid_param``):
  ``"error": "DynamoDb.DynamoDbException"``, ``"cause": "<message> (Service: DynamoDb, Status Code: 400, Request ID:
  <id>)"``; the message is IAM's denial (IAM User Guide, "Troubleshoot access denied error messages");
- an HTTP Task's (charge.asl.json): the role needs ``states:InvokeHTTPEndpoint``,
  ``events:RetrieveConnectionCredentials`` and the connection secret's ``GetSecretValue`` and ``DescribeSecret``
  ("Call HTTPS APIs in Step Functions workflows", IAM permissions to run an HTTP Task,
  https://docs.aws.amazon.com/step-functions/latest/dg/call-https-apis.html); a connection it may not read fails
  ``Events.ConnectionResource.AccessDenied`` (the page's "Connection errors"); a denied endpoint fails with the cause
  recorded in serverless-operations/serverless-step-functions issue 599 ("AWS Step Functions is not authorized to
  perform states:InvokeHTTPEndpoint on API Endpoint <endpoint>. ..."), under ``States.Permissions``, the predefined
  error of a task without the privileges it needs (Amazon States Language, Appendix A);
- a ``.sync`` task's look at its child: ``states:DescribeExecution`` on the child's execution ("IAM policies for
  starting Step Functions executions", Synchronous,
  https://docs.aws.amazon.com/step-functions/latest/dg/stepfunctions-iam.html), refused as the task's StartExecution
  is (``StepFunctions.AWSStepFunctionsException``, tests/functional/test_permissions.py).

Not covered: ``states:StopExecution`` on a ``.sync`` child, which AWS uses when the parent stops while its child
runs; the engine does not stop a child then (statemachine/privileges-explained.json)."""

from __future__ import annotations

import json
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from idemflow.engine import Engine
from idemflow.template.loader import load_template
from tests.http_server import Answer, Seen, Server, serving

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
def provider() -> Iterator[Server]:
    """A payment provider that charges every request, and keeps each request it was sent."""

    def charge(seen: Seen) -> Answer:
        body = json.loads(seen.body)
        return Answer.json({"id": f"ch_{uuid.uuid4().hex}", "amount": body["amount"], "currency": body["currency"]})

    with serving({"/v1/charges": charge}) as server:
        yield server


@pytest.fixture(scope="module")
def provider_url(provider: Server) -> str:
    return provider.url


@pytest.fixture
def order_without(copy: Path, provider_url: str) -> Iterator[Any]:
    started: list[Engine] = []

    def start(logical_id: str, sid: str, edit: Any = None) -> tuple[Engine, dict[str, Any]]:
        template = load_template(EXAMPLE / "template.yaml")
        if edit is None:
            _without(template, logical_id, sid)
        else:
            edit(template)
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
        ("OrderStateMachine", "WatchGuards", "states:DescribeExecution", "ReserveStock"),
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


def _ordered(engine: Engine, order: dict[str, Any]) -> Any:
    assert engine.stack is not None
    arn = engine.client("stepfunctions").start_execution(
        stateMachineArn=engine.stack.outputs["OrderStateMachineArn"], input=json.dumps(order)
    )["executionArn"]
    return engine.wait(arn)


def _task_failures(engine: Engine, output: str) -> list[dict[str, Any]]:
    """The TaskFailed details of every execution of the state machine a stack output names."""
    assert engine.stack is not None
    sfn = engine.client("stepfunctions")
    found = []
    for execution in sfn.list_executions(stateMachineArn=engine.stack.outputs[output])["executions"]:
        history = engine.history(execution["executionArn"])
        found += [e["taskFailedEventDetails"] for e in history if e["type"] == "TaskFailed"]
    return found


def _denial(role: str, action: str, resource: str) -> str:
    return (
        rf"User: arn:aws:sts::\d{{12}}:assumed-role/{role}/[A-Za-z]{{32}} is not authorized to perform: "
        rf"{re.escape(action)} on resource: {re.escape(resource)} because no identity-based policy allows the "
        rf"{re.escape(action)} action"
    )


def test_an_sdk_task_denied_fails_with_the_sdk_services_exception(order_without: Any) -> None:
    engine, order = order_without("ShipStateMachine", "ShipmentWrites")
    outcome = _ordered(engine, order)

    assert (outcome.status, outcome.path[-1]) == ("FAILED", "RequestShipment")
    [failure] = _task_failures(engine, "ShipStateMachineArn")
    assert failure["error"] == "DynamoDb.DynamoDbException"
    assert (failure["resource"], failure["resourceType"]) == ("putItem", "aws-sdk:dynamodb")
    assert engine.stack is not None
    table = f"arn:aws:dynamodb:{engine.region}:123456789012:table/{engine.stack.outputs['ShipmentsTableName']}"
    role = r"[^/]*ShipStateMachineRole[^/]*"  # the role SAM makes for the state machine
    assert re.fullmatch(
        _denial(role, "dynamodb:PutItem", table) + r" \(Service: DynamoDb, Status Code: 400, Request ID: [^)]+\)",
        failure["cause"],
    )
    assert engine.client("dynamodb").scan(TableName=engine.stack.outputs["ShipmentsTableName"])["Count"] == 0


@pytest.mark.parametrize("sid", ["ProviderCredentials", "ProviderSecret"])
def test_an_http_task_that_may_not_read_its_connection_fails_access_denied(
    order_without: Any, provider: Server, sid: str
) -> None:
    sent = len(provider.paths("/v1/charges"))
    engine, order = order_without("ChargeStateMachine", sid)
    outcome = _ordered(engine, order)

    assert (outcome.status, outcome.path[-1]) == ("FAILED", "ChargeCard")
    failures = _task_failures(engine, "ChargeStateMachineArn")
    assert failures and all(f["error"] == "Events.ConnectionResource.AccessDenied" for f in failures)
    action = "events:RetrieveConnectionCredentials" if sid == "ProviderCredentials" else "secretsmanager:GetSecretValue"
    assert all(f"is not authorized to perform: {action} on resource: arn:aws:" in f["cause"] for f in failures)
    assert len(provider.paths("/v1/charges")) == sent  # no charge was sent


def _charge_condition(operator: str, key: str, value: str) -> Any:
    """The ChargeAtProvider statement's condition on ``key`` set to ``value``."""

    def edit(template: dict[str, Any]) -> None:
        for policy in template["Resources"]["ChargeStateMachine"]["Properties"]["Policies"]:
            for statement in policy["Statement"]:
                if statement.get("Sid") == "ChargeAtProvider":
                    statement["Condition"][operator][key] = value

    return edit


@pytest.mark.parametrize("edit", ["without the statement", "another endpoint in its condition", "GET only"])
def test_an_http_task_whose_endpoint_is_not_allowed_fails_states_permissions(
    order_without: Any, provider: Server, edit: str
) -> None:
    sent = len(provider.paths("/v1/charges"))
    if edit == "without the statement":
        engine, order = order_without("ChargeStateMachine", "ChargeAtProvider")
    elif edit == "GET only":
        engine, order = order_without("", "", _charge_condition("StringEquals", "states:HTTPMethod", "GET"))
    else:
        condition = _charge_condition("StringLike", "states:HTTPEndpoint", "https://payments.example.com/*")
        engine, order = order_without("", "", condition)
    outcome = _ordered(engine, order)

    assert (outcome.status, outcome.path[-1]) == ("FAILED", "ChargeCard")
    failures = _task_failures(engine, "ChargeStateMachineArn")
    endpoint = f"{provider.url}/v1/charges"
    assert failures
    for failure in failures:
        assert failure["error"] == "States.Permissions"
        assert failure["cause"] == (
            f"AWS Step Functions is not authorized to perform states:InvokeHTTPEndpoint on API Endpoint {endpoint}. "
            "Ensure that the StateMachine role contains the states:InvokeHTTPEndpoint permission for the given API "
            "Endpoint"
        )
    assert len(provider.paths("/v1/charges")) == sent


def test_an_http_task_whose_condition_names_its_endpoint_and_method_charges_once(
    order_without: Any, provider: Server
) -> None:
    """The allowed side of the condition keys: the provider's own URL and POST, written here in place of the
    template's parameter."""
    sent = len(provider.paths("/v1/charges"))
    engine, order = order_without("", "", _charge_condition("StringLike", "states:HTTPEndpoint", f"{provider.url}/*"))
    outcome = _ordered(engine, order)

    assert outcome.status == "SUCCEEDED"
    assert _task_failures(engine, "ChargeStateMachineArn") == []
    assert len(provider.paths("/v1/charges")) == sent + 1
