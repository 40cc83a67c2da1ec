"""Two workflows share one idempotency table, each with its own WorkflowScope, and wrap the same function
(the project's template nested twice in a user's template, the second given the first's table): the
same idempotency key runs the side effect once in each, and neither replays the other's result."""

from __future__ import annotations

import os
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from idemflow.contract import IDEMPOTENCY_TABLE_SUBSTITUTION, RecordStatus
from idemflow.engine import Engine
from idemflow.engine.stack import resolve_stack
from idemflow.template import TemplateError
from tests.paths import TEMPLATE_PATH

HANDLER = """\
def handler(event, context):
    # Says which execution ran it: the execution ARN names the state machine, so each workflow's own.
    return {"ranFor": event["executionId"], "key": event["idempotencyKey"]}
"""


def user_template(directory: Path) -> Path:
    (directory / "fn").mkdir(parents=True)
    (directory / "fn" / "app.py").write_text(HANDLER)
    location = os.path.relpath(TEMPLATE_PATH, directory)
    template = directory / "template.yaml"
    template.write_text(
        textwrap.dedent(
            f"""\
            Transform: AWS::Serverless-2016-10-31
            Resources:
              Notify:
                Type: AWS::Serverless::Function
                Properties: {{CodeUri: fn/, Handler: app.handler, Runtime: python3.12, Timeout: 10}}
              Orders:
                Type: AWS::Serverless::Application
                Properties:
                  Location: {location}
                  Parameters:
                    SideEffectFunctionArn: !GetAtt Notify.Arn
                    WorkflowScope: orders
              Refunds:
                Type: AWS::Serverless::Application
                Properties:
                  Location: {location}
                  Parameters:
                    SideEffectFunctionArn: !GetAtt Notify.Arn
                    WorkflowScope: refunds
                    IdempotencyTableName: !GetAtt Orders.Outputs.IdempotencyTableName
            """
        )
    )
    return template


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    template = user_template(tmp_path_factory.mktemp("two-workflows"))
    with Engine(template, wait_time_scale=0, workflow="Orders") as running:
        yield running


def test_two_scopes_share_one_table_and_run_the_same_key_once_each(engine: Engine) -> None:
    assert sorted(engine.workflows) == ["Orders", "Refunds"]
    key = f"shared-{uuid.uuid4()}"
    body = {"idempotencyKey": key, "payload": {"orderId": "o-1"}}

    engine.use_workflow("Orders")
    orders_arn, orders_table = engine.workflow.state_machine_arn, engine.workflow.idempotency_table
    orders = [engine.run(body), engine.run(body)]
    engine.use_workflow("Refunds")
    refunds_arn, refunds_table = engine.workflow.state_machine_arn, engine.workflow.idempotency_table
    refunds = [engine.run(body), engine.run(body)]

    stack = engine.stack
    assert stack is not None
    substitutions = [sm.substitutions[IDEMPOTENCY_TABLE_SUBSTITUTION] for sm in stack.all_state_machines()]
    assert orders_table == refunds_table and set(substitutions) == {orders_table}, "one table"
    assert orders_arn != refunds_arn and len(stack.all_tables()) == 1
    # Each workflow ran the side effect for the key once, and replayed its own result to its duplicate.
    assert [o.replayed for o in orders] == [False, True] and [o.replayed for o in refunds] == [False, True]
    assert orders[1].output["result"] == orders[0].output["result"]
    assert refunds[1].output["result"] == refunds[0].output["result"]
    assert orders[0].output["result"]["ranFor"].split(":")[-2] in orders_arn
    assert refunds[0].output["result"]["ranFor"].split(":")[-2] in refunds_arn
    assert engine.workflow.side_effect_runs(key) == 2
    # Two records, one per scope, in the one table.
    engine.use_workflow("Orders")
    orders_record, refunds_record = engine.workflow.record(key), engine.workflow.record(key, scope="refunds")
    assert orders_record is not None and refunds_record is not None
    assert orders_record["id"] != refunds_record["id"]
    assert {orders_record["status"], refunds_record["status"]} == {RecordStatus.COMPLETED}
    assert (orders_record["owner"], refunds_record["owner"]) == (orders[0].arn, refunds[0].arn)
    assert len(engine.workflow.records("orders")) >= 1 and engine.workflow.records("refunds") == [refunds_record]


def test_a_template_with_two_workflows_needs_one_chosen(tmp_path: Path) -> None:
    stack = resolve_stack(user_template(tmp_path))

    with pytest.raises(TemplateError, match=r"2 workflows \('Orders', 'Refunds'\): choose one"):
        stack.workflow()
    assert stack.workflow("Refunds").parameters["WorkflowScope"] == "refunds"
