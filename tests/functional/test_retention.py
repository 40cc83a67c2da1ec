"""The engine's retention of closed executions with the real workflow: past it, an execution is gone as on AWS
after its 90 days (Step Functions developer guide, "Execution guarantees": "Execution history data removed after
90 days. Workflow names can be reused after removal of out-of-date execution data"), and a duplicate start then
reaches the record, which still replays the result without the side effect."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError

from idemflow import client
from idemflow.engine import Engine
from tests.charge.side_effect import payment


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(wait_time_scale=0, retain_executions=2) as running:
        yield running


def test_a_duplicate_after_its_first_run_was_evicted_replays_from_the_record(engine: Engine, key: str) -> None:
    sfn = engine.http_client("stepfunctions")
    arn = engine.workflow.state_machine_arn
    body = payment()
    first = client.start(sfn, arn, key, body)
    assert isinstance(first, str) and engine.wait(first).status == "SUCCEEDED"
    for other in range(2):  # two later runs push the first out of a retention of two
        assert engine.run({"idempotencyKey": f"{key}-{other}", "payload": payment()}).status == "SUCCEEDED"

    with pytest.raises(ClientError, match="ExecutionDoesNotExist"):
        sfn.describe_execution(executionArn=first)
    again = client.start(sfn, arn, key, body)  # the same name, free again: a new execution

    assert again == first  # the same ARN (name and state machine), a new execution behind it
    outcome = engine.wait(again)
    assert outcome.status == "SUCCEEDED" and outcome.output["replayed"] is True
    assert engine.workflow.side_effect_runs(key) == 1


def test_serve_and_run_take_the_retention(engine: Engine) -> None:
    from idemflow.cli.errors import CliError
    from idemflow.cli.parser import build_parser

    args = build_parser().parse_args(["serve", "--retain-executions", "all", "--retain-for", "3600"])
    assert (args.retain_executions, args.retain_for) == (None, 3600.0)
    with pytest.raises(CliError, match="--retain-executions: expected a count of executions"):
        build_parser().parse_args(["run", "--retain-executions", "some"])


def test_executions_the_engine_let_go_of_leave_the_retention_too(engine: Engine, key: str) -> None:
    from idemflow.engine.services.stepfunctions import retention

    for n in range(2):
        assert engine.run({"idempotencyKey": f"{key}-{n}", "payload": payment()}).status == "SUCCEEDED"
    assert retention.kept() == 2  # the retention's bound here

    forgotten = engine.forget_ended_executions()

    assert len(forgotten) >= 2
    assert retention.kept() == 0  # nothing held for executions already gone
