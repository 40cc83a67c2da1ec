"""The engine's seam: the services of ``idemflow/engine/services`` deploy the template, their loops are
owned by the engine's background owner, and what no service runs is listed, never dropped."""

from __future__ import annotations

import json
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from idemflow.contract import IDEMPOTENCY_TABLE_LOGICAL_ID, sample_payload
from idemflow.engine import Engine, state
from idemflow.engine.background import Background
from idemflow.engine.catalog import SERVICES, resource_types
from idemflow.engine.errors import BackgroundError
from idemflow.engine.services.base import Service
from idemflow.engine.services.dynamodb.service import DynamoDB
from idemflow.engine.services.events.service import Events
from idemflow.engine.services.lambda_.service import Lambda
from idemflow.engine.state import EngineState
from idemflow.template import Resolver, ResourceType, Stack, cfn_string
from tests.paths import TEMPLATE_PATH
from tests.polling import wait_until

pytestmark = pytest.mark.functional


def loop_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(Background.THREAD_PREFIX)]


class Probe(Service):
    """A service of its own type, as a door would be: it reads ``Custom::Probe`` resources, records its life
    cycle, and runs a loop per resource that counts rounds until the engine stops it."""

    name = "probe"
    calls: ClassVar[list[str]] = []
    fail_loop: ClassVar[bool] = False
    fail_stop: ClassVar[bool] = False

    @staticmethod
    def read(r: Resolver, lid: str, props: dict[str, Any], where: str) -> str:
        return cfn_string(r.setting(props, "Label", where), f"{where}.Label")

    resource_types = (ResourceType("Custom::Probe", read),)

    def open(self) -> None:
        self.calls.append("open")
        self.rounds = 0

    def attach(self, state: EngineState) -> EngineState:
        self.calls.append("attach")
        return state

    def deploy(self, stack: Stack) -> None:
        self.labels = [label for _, s in stack.stacks() for label in s.models(str).values()]
        self.calls.append(f"deploy {self.labels}")

    def start(self) -> None:
        self.calls.append("start")
        self.started = threading.Event()

        def loop(stopping: threading.Event) -> None:
            self.started.set()
            while not stopping.wait(0.001):
                self.rounds += 1
                if self.fail_loop:
                    raise RuntimeError("the probe's poller broke")

        self.context.background.start(f"probe-{self.labels[0]}", loop)

    def wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes] | None:
        if not str(environ.get("PATH_INFO", "")).startswith("/probe/"):
            return None
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [f"probe {self.labels[0]} {environ['PATH_INFO']}".encode()]

    def stop(self) -> None:
        self.calls.append("stop")
        if self.fail_stop:
            raise RuntimeError("the probe could not stop")

    def reset(self) -> None:
        self.calls.append("reset")


@pytest.fixture
def template(tmp_path: Path) -> Path:
    """A template nesting the project's workflow (the real template, not a copy) beside a resource of the
    probe's type."""
    path = tmp_path / "template.yaml"
    workflow = {"Type": "AWS::Serverless::Application", "Properties": {"Location": str(TEMPLATE_PATH)}}
    probe = {"Type": "Custom::Probe", "Properties": {"Label": "one"}}
    path.write_text(yaml.safe_dump({"Resources": {"Workflow": workflow, "ProbeResource": probe}}))
    return path


@pytest.fixture(autouse=True)
def _probe_state() -> None:
    Probe.calls.clear()
    Probe.fail_loop = False
    Probe.fail_stop = False


def test_each_resource_type_belongs_to_one_service() -> None:
    types = resource_types()
    owners = {spec.type: service.name for service in SERVICES for spec in service.resource_types}
    assert set(types) == set(owners)
    with pytest.raises(ValueError, match="declared by two services"):
        resource_types((*SERVICES, DynamoDB))


def test_a_service_runs_its_life_cycle_and_its_loop_is_joined_when_the_engine_stops(template: Path) -> None:
    engine = Engine(template, wait_time_scale=0, services=(*SERVICES, Probe))
    with engine:
        probe = engine.service(Probe)
        assert probe.started.wait(5)
        assert engine.background.names == ["probe-one"]
        assert loop_threads() == [f"{Background.THREAD_PREFIX}probe-one"]
        # the workflow still runs beside it
        with urllib.request.urlopen(f"{engine.endpoint_url}/probe/ping") as answer:  # the service's own route
            assert answer.read() == b"probe one /probe/ping"
        # every other request still reaches moto
        assert engine.http_client("stepfunctions").list_state_machines()["stateMachines"]
        outcome = engine.run({"idempotencyKey": "seam-1", "payload": sample_payload(TEMPLATE_PATH)})
        assert (outcome.status, engine.workflow.side_effect_runs("seam-1")) == ("SUCCEEDED", 1)
    assert Probe.calls == ["open", "attach", "deploy ['one']", "start", "stop", "reset"]
    assert probe.rounds > 0
    assert loop_threads() == []


def test_a_failed_loop_is_raised_by_stop_after_everything_is_down(template: Path) -> None:
    engine = Engine(template, wait_time_scale=0, services=(*SERVICES, Probe))
    engine.start()
    Probe.fail_loop = True
    probe = engine.service(Probe)
    assert probe.started.wait(5)
    message = r"probe-one failed: RuntimeError\(\"the probe's poller broke\"\)"
    with pytest.raises(BackgroundError, match=message):  # the loop fails on its next round: check() reports it
        wait_until(lambda: engine.background.check(), 10, what="check() to report the failed loop")
    with pytest.raises(BackgroundError, match=message):
        engine.stop()  # and stop() raises it, once everything is down
    engine.stop()  # reported once
    assert Probe.calls[-2:] == ["stop", "reset"]
    assert loop_threads() == []
    with Engine(wait_time_scale=0):  # nothing was left behind: the next engine starts
        pass


def test_a_type_no_listed_service_runs_is_listed_not_served(template: Path) -> None:
    with Engine(template, wait_time_scale=0) as engine:  # no probe service: Custom::Probe is not run
        assert "ProbeResource: Custom::Probe: not emulated locally" in engine.unserved()


def test_the_workflows_table_is_served_by_the_dynamodb_service() -> None:
    without_dynamodb = tuple(s for s in SERVICES if s is not DynamoDB)
    with Engine(wait_time_scale=0, services=without_dynamodb) as engine:
        table = engine.stack.resources[IDEMPOTENCY_TABLE_LOGICAL_ID] if engine.stack else None
        assert table is not None and not table.served
        assert engine.client("dynamodb").list_tables()["TableNames"] == []


def test_reset_leaves_a_backend_nobody_imported_unimported(monkeypatch: pytest.MonkeyPatch) -> None:
    import moto.sqs.models

    class Unused(Service):
        name = "unused"
        moto_backends = ("apigateway", "sqs")

    monkeypatch.delitem(sys.modules, "moto.apigateway", raising=False)
    queue = moto.sqs.models.sqs_backends["123456789012"]["us-east-1"].create_queue("left-by-a-test")

    Unused(Engine()).reset()

    assert "moto.apigateway" not in sys.modules  # nothing was in it: not imported to be emptied
    assert queue.name not in moto.sqs.models.sqs_backends["123456789012"]["us-east-1"].queues  # emptied


def test_the_engine_state_holds_what_the_services_attach_until_the_engine_stops(template: Path) -> None:
    assert state.current() == EngineState()
    engine = Engine(template, wait_time_scale=0.25, services=(*SERVICES, Probe))
    with engine:
        attached = state.current()
        assert attached.lambda_runtime is engine.service(Lambda).runtime is not None
        assert attached.event_receiver == engine.service(Events).matched
        assert (attached.faults, attached.wait_time_scale, attached.gate) == (engine.faults, 0.25, None)
        engine.set_clock_offset(90)
        assert state.current().clock_offset.total_seconds() == 90
        assert state.current().lambda_runtime is attached.lambda_runtime  # one field replaced, the rest kept
    assert state.current() == EngineState()  # moto's own behaviour again: nothing of the engine is reached


def test_services_see_a_narrow_context_not_the_engine(template: Path) -> None:
    engine = Engine(template, wait_time_scale=0, services=(*SERVICES, Probe))
    probe = engine.service(Probe)
    assert not hasattr(probe, "engine")
    assert probe.context.settings.wait_time_scale == 0 and probe.context.region == engine.region
    with engine:
        assert probe.context.endpoint_url == engine.endpoint_url and probe.context.stack is engine.stack
        assert probe.context.service(Lambda) is engine.service(Lambda)


@pytest.mark.parametrize(
    ("overrides", "wanted"),
    [
        ({}, {"iam", "lambda", "dynamodb", "stepfunctions"}),
        ({"QueueFrontDoor": "true"}, {"iam", "lambda", "dynamodb", "stepfunctions", "sqs", "pipes"}),
    ],
    ids=["no door", "the queue door"],
)
def test_a_start_makes_the_clients_of_what_the_template_declares_and_no_other(
    overrides: dict[str, str], wanted: set[str]
) -> None:
    # Each client costs milliseconds to make even from a warm session, and test modules, CLI commands and
    # checker runs each start an engine: a service with nothing to deploy makes none.
    with Engine(wait_time_scale=0, parameter_overrides=overrides) as engine:
        assert {service for service, _ in engine._clients} == wanted


def test_engines_of_a_process_share_their_in_process_clients_by_region_not_their_http_ones() -> None:
    # A client is costly to make even from a warm session, and an engine's start made four; an
    # in-process client names no engine (its requests reach the process's moto backends).
    with Engine(wait_time_scale=0) as first:
        clients = {s: first.client(s) for s in ("dynamodb", "stepfunctions")}
        http = first.http_client("stepfunctions")
    with Engine(wait_time_scale=0) as second:
        assert {s: second.client(s) for s in clients} == clients
        assert second.http_client("stepfunctions") is not http  # it names the engine's port
        assert second.client("stepfunctions").list_state_machines()["stateMachines"]  # and reaches its machine
    with Engine(wait_time_scale=0, region="eu-west-1") as elsewhere:
        assert elsewhere.client("dynamodb") is not clients["dynamodb"]
        assert elsewhere.client("dynamodb").meta.region_name == "eu-west-1"


def execution_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "sfn-execution" and t.is_alive()]


def test_an_execution_still_running_when_the_engine_stops_ends_with_it(tmp_path: Path) -> None:
    # moto's backends are the process's: an execution left running past its engine's stop would run its next
    # state against the next engine's resources, which have the same names (its Catch sending to "the"
    # dead-letter queue of another test's stack). A Wait of an hour then a queue write stands for any such run.
    queue = {"Type": "AWS::SQS::Queue"}
    definition = {
        "StartAt": "Hold",
        "States": {
            "Hold": {"Type": "Wait", "Seconds": 3600, "Next": "Send"},
            "Send": {
                "Type": "Task",
                "Resource": "arn:aws:states:::sqs:sendMessage",
                "Parameters": {"QueueUrl": "${QueueUrl}", "MessageBody": "late"},
                "End": True,
            },
        },
    }
    (tmp_path / "hold.asl.json").write_text(json.dumps(definition))
    machine = {
        "Type": "AWS::Serverless::StateMachine",
        "Properties": {
            "DefinitionUri": "hold.asl.json",
            "DefinitionSubstitutions": {"QueueUrl": {"Ref": "Queue"}},
            "Policies": [{"SQSSendMessagePolicy": {"QueueName": {"Fn::GetAtt": ["Queue", "QueueName"]}}}],
        },
    }
    path = tmp_path / "template.yaml"
    resources = {"Queue": queue, "Hold": machine}
    path.write_text(json.dumps({"Transform": "AWS::Serverless-2016-10-31", "Resources": resources}))
    before = set(execution_threads())
    engine = Engine(path, wait_time_scale=1).start()
    try:
        assert engine.stack is not None
        sfn = engine.client("stepfunctions")
        arn = sfn.list_state_machines()["stateMachines"][0]["stateMachineArn"]
        execution = sfn.start_execution(stateMachineArn=arn)["executionArn"]
        wait_until(lambda: set(execution_threads()) - before, 10, what="the execution's thread")
        assert sfn.describe_execution(executionArn=execution)["status"] == "RUNNING"
    finally:
        engine.stop()
    assert set(execution_threads()) - before == set()  # ended when stop() returned, not an hour later


def test_a_service_that_fails_to_stop_leaves_the_engine_down_and_its_error_raised(template: Path) -> None:
    engine = Engine(template, wait_time_scale=0, services=(*SERVICES, Probe)).start()
    Probe.fail_stop = True
    with pytest.raises(RuntimeError, match="the probe could not stop"):
        engine.stop()
    assert Probe.calls[-2:] == ["stop", "reset"]  # the services after it stopped and reset all the same
    assert loop_threads() == []
    Probe.fail_stop = False
    with Engine(template, wait_time_scale=0, services=(*SERVICES, Probe)) as again:  # the process's engine is free
        assert again.stack is not None
