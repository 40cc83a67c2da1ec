"""``execution-index`` (idemflow/engine/services/stepfunctions/execution_index.py) against moto 5.2.5: without
it, finding one execution walks every execution its state machine keeps; with it, none is walked, and every answer
is the same (the execution, the idempotent start of a running one, ExecutionAlreadyExists, ExecutionDoesNotExist,
the state machine of an execution, a stopped execution), compared request by request with every speedup
left out. In-process moto (``mock_aws``) with the interpreter: no server, no engine."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from idemflow.engine import registry, state
from idemflow.engine.services.stepfunctions.execution_index import IndexedExecutions
from idemflow.engine.services.stepfunctions.executions import wait_for_execution
from tests import sessions

pytestmark = [pytest.mark.unit, pytest.mark.usefixtures("restore_registry")]

REGION = "us-east-1"
CONFIG = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
ROLE = "arn:aws:iam::123456789012:role/sfn"
PASS = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}
WAIT = {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 3600, "End": True}}}


def sfn_backend() -> Any:
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    return stepfunctions_parser_backends["123456789012"][REGION]


class Kept:
    """An execution kept from long ago: each read of its ARN or name is counted."""

    reads = 0

    def __init__(self, n: int) -> None:
        self._arn = f"arn:aws:states:{REGION}:123456789012:execution:old:kept-{n}"
        self._name = f"kept-{n}"
        self.status = "SUCCEEDED"

    @property
    def execution_arn(self) -> str:
        Kept.reads += 1
        return self._arn

    @property
    def name(self) -> str:
        Kept.reads += 1
        return self._name


def keep(machine_arn: str, count: int) -> None:
    """``count`` old executions at the front of the state machine's list, as a long run leaves them."""
    state_machine = sfn_backend().describe_state_machine(machine_arn)
    for n in range(count):
        state_machine.executions.insert(0, Kept(n))


def requests(sfn: Any, machine: str, waiting: str) -> list[Callable[[], Any]]:
    """The requests that find an execution, each reading one answer."""
    first = sfn.start_execution(stateMachineArn=machine, name="one", input="{}")["executionArn"]
    wait_for_execution(first, 10)
    running = sfn.start_execution(stateMachineArn=waiting, name="held", input='{"a":1}')["executionArn"]
    missing = first.replace(":one", ":none")

    def call(f: Callable[[], Any]) -> Callable[[], Any]:
        def answer() -> Any:
            try:
                return f()
            except ClientError as exc:
                return exc.response["Error"]["Code"], exc.response["Error"]["Message"]

        return answer

    return [
        call(lambda: sfn.describe_execution(executionArn=first)["status"]),
        call(lambda: sfn.describe_execution(executionArn=missing)),
        call(lambda: [e["type"] for e in sfn.get_execution_history(executionArn=first)["events"]]),
        call(lambda: sfn.describe_state_machine_for_execution(executionArn=first)["stateMachineArn"]),
        call(lambda: sfn.start_execution(stateMachineArn=machine, name="one", input="{}")),  # ended: refused
        call(lambda: sfn.start_execution(stateMachineArn=waiting, name="held", input='{"a":1}')["executionArn"]),
        call(lambda: sfn.start_execution(stateMachineArn=waiting, name="held", input='{"a":2}')),
        call(lambda: sorted(sfn.stop_execution(executionArn=running))),  # its status moves on its own thread
        call(lambda: sfn.stop_execution(executionArn=missing)),
    ]


def answers(apply: Callable[[], None]) -> tuple[list[Any], int]:
    apply()
    state.update(wait_time_scale=1.0)
    with mock_aws(config=CONFIG):
        sfn = sessions.client("stepfunctions", region_name=REGION)
        machine = sfn.create_state_machine(name="pass", definition=json.dumps(PASS), roleArn=ROLE)["stateMachineArn"]
        waiting = sfn.create_state_machine(name="wait", definition=json.dumps(WAIT), roleArn=ROLE)["stateMachineArn"]
        calls = requests(sfn, machine, waiting)
        keep(machine, 500)
        keep(waiting, 500)
        Kept.reads = 0
        got = [call() for call in calls]
        reads = Kept.reads
        for arn in (machine, waiting):  # end the held execution's thread
            for execution in sfn.list_executions(stateMachineArn=arn, statusFilter="RUNNING")["executions"]:
                sfn.stop_execution(executionArn=execution["executionArn"])
    state.update(wait_time_scale=0)
    return got, reads


def test_unpatched_moto_5_2_5_walks_every_kept_execution_to_find_one() -> None:
    _, reads = answers(lambda: registry.apply(without=registry.names("speedup")))
    assert reads >= 9 * 500  # each request walked a state machine's 500 kept executions, or more


def test_patched_finds_executions_without_walking_them_and_answers_the_same() -> None:
    unpatched, _ = answers(lambda: registry.apply(without=registry.names("speedup")))
    patched, reads = answers(registry.apply)
    assert reads == 0
    assert patched == unpatched
    assert patched[1][0] == "ExecutionDoesNotExist" and patched[4][0] == "ExecutionAlreadyExists"
    assert patched[0] == "SUCCEEDED" and patched[5] == unpatched[5]  # the running execution itself, again


def test_the_index_follows_the_list() -> None:
    class E:
        def __init__(self, arn: str, name: str) -> None:
            self.execution_arn, self.name = arn, name

    a, b, c = E("arn-a", "x"), E("arn-b", "x"), E("arn-c", "y")
    executions = IndexedExecutions([a])
    executions.append(b)
    executions.append(c)
    assert executions.by_name["x"] is a and executions.by_arn["arn-b"] is b  # the first of a name
    executions.remove(a)
    assert executions.by_name["x"] is b and "arn-a" not in executions.by_arn and list(executions) == [b, c]
    assert executions.pop() is c and "y" not in executions.by_name
    executions.clear()
    assert not executions.by_arn and not executions.by_name and not executions
