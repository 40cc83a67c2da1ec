"""The CLI end to end: ``run`` and ``demo`` on an engine of their own, ``serve`` as a subprocess where its
process is what is tested (Ctrl-C, its exit code), else in a thread of this process (what it prints, and what
the printed commands do against it: a process of its own would import the engine and deploy for the first
time again, which this process has already done).

Each in-process command starts and stops its own engine (one engine per process at a time), so this
module never uses the ``engine`` fixture.
"""

from __future__ import annotations

import io
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from idemflow import cli, client
from idemflow.cli.app import build_parser
from idemflow.cli.commands import cmd_serve
from idemflow.contract import sample_payload
from idemflow.engine.stack import resolve_stack
from tests.paths import PROJECT_ROOT
from tests.polling import wait_until
from tests.prewarmed import prewarmed_aws

pytestmark = pytest.mark.functional

READY_LINE = "Ctrl-C to stop."
SIDE_EFFECT = resolve_stack().side_effect_function()
"""The function the template's workflow wraps, as the engine names it (the CLI deploys the same template)."""


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def new_key() -> str:
    return f"order-{uuid.uuid4()}"


# -- run -------------------------------------------------------------------------------------------------------
def test_run_repeat_replays_the_second_execution_and_invokes_once(capsys: pytest.CaptureFixture[str]) -> None:
    key = new_key()
    code, out, err = run_cli(capsys, "run", "--key", key, "--repeat", "2", "--json", "--wait-time-scale", "0")

    assert code == 0, err
    document = json.loads(out)
    first, second = document["executions"]
    assert (first["status"], first["replayed"]) == ("SUCCEEDED", False)
    assert (second["status"], second["replayed"]) == ("SUCCEEDED", True)
    assert first["result"] is not None and second["result"] == first["result"]
    assert first["path"][-1] == "ReturnResult" and second["path"][-1] == "ReturnCached"
    assert first["name"] != second["name"], "duplicates must reach the workflow, not name deduplication"
    assert document["summary"] == {
        "executions": 2,
        "byStatus": {"SUCCEEDED": 2},
        "byError": {},
        "replayed": 1,
        "function": SIDE_EFFECT.name,
        "sideEffectInvocations": 1,
    }


def test_run_concurrent_duplicates_run_the_side_effect_once(capsys: pytest.CaptureFixture[str]) -> None:
    key = new_key()
    code, out, err = run_cli(
        capsys,
        "run",
        "--key",
        key,
        "--repeat",
        "6",
        "--concurrency",
        "6",
        "--json",
        "--wait-time-scale",
        "0.02",
        "--parameter-overrides",
        "InProgressPollSeconds=1",
        "InProgressMaxPolls=100",
    )

    assert code == 0, err
    document = json.loads(out)
    executions, summary = document["executions"], document["summary"]
    assert len(executions) == 6
    assert [e["replayed"] for e in executions].count(False) == 1
    assert summary["byStatus"] == {"SUCCEEDED": 6} and summary["replayed"] == 5
    assert summary["sideEffectInvocations"] == 1
    assert any("WaitForOwner" in e["path"] for e in executions), "no duplicate overlapped the owner's run"


def test_run_prints_each_execution_and_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    key = new_key()
    code, out, _ = run_cli(
        capsys,
        "run",
        "--key",
        key,
        "--repeat",
        "2",
        "--wait-time-scale",
        "0",
        "--payload",
        '{"currency": "EUR", "amount": 100, "customerId": "c-9"}',
    )

    assert code == 0
    assert "#1   SUCCEEDED  replayed=false" in out and "#2   SUCCEEDED  replayed=true" in out
    assert '"amount": 100' in out
    assert "ValidateInput → DeriveKeys → ReadRecord → CheckRecord → ComputeLease → AcquireLock" in out
    assert f"summary: 2 SUCCEEDED; 1 replayed; side-effect invocations for the key: 1 ({SIDE_EFFECT.name})" in out


def test_run_with_a_failed_execution_exits_1_and_reports_its_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys,
        "run",
        "--key",
        new_key(),
        "--json",
        "--wait-time-scale",
        "0",
        "--payload",
        '{"customerId": "cust-1", "amount": 0, "currency": "EUR"}',
    )

    assert code == 1
    (execution,) = json.loads(out)["executions"]
    assert execution["status"] == "FAILED" and execution["error"] == "PaymentValidationError"
    assert "amount" in execution["cause"]


def test_run_deploys_a_template_that_nests_the_workflow(capsys: pytest.CaptureFixture[str]) -> None:
    example = PROJECT_ROOT / "examples" / "outbox"
    key = new_key()
    code, out, err = run_cli(
        capsys,
        "run",
        "--template",
        str(example / "template.yaml"),
        "--key",
        key,
        "--repeat",
        "2",
        "--json",
        "--wait-time-scale",
        "0",
    )

    assert code == 0, err
    document = json.loads(out)
    assert document["payload"] == sample_payload(example / "template.yaml"), "the template's own sample event"
    assert [e["replayed"] for e in document["executions"]] == [False, True]
    wrapped = resolve_stack(example / "template.yaml").side_effect_function()
    assert (document["summary"]["function"], document["summary"]["sideEffectInvocations"]) == (wrapped.name, 1)


ORDERS = PROJECT_ROOT / "examples" / "orders" / "template.yaml"


def test_run_counts_the_child_executions_of_a_workflow_whose_side_effect_is_a_state_machine(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The orders example nests the workflow three times: --workflow picks the one around ShipStateMachine, whose
    # side effect has no function to count (side_effect_function raises for it): run counts its executions.
    key = new_key()
    code, out, err = run_cli(
        capsys,
        "run",
        "--template",
        str(ORDERS),
        "--workflow",
        "ShipGuard",
        "--key",
        key,
        "--repeat",
        "2",
        "--json",
        "--wait-time-scale",
        "0",
    )

    assert code == 0, err
    document = json.loads(out)
    assert [e["replayed"] for e in document["executions"]] == [False, True]
    child = resolve_stack(ORDERS).side_effect_state_machine("ShipGuard")
    assert child.logical_id == "ShipStateMachine"
    summary = document["summary"]
    assert (summary["function"], summary["stateMachine"], summary["sideEffectInvocations"]) == (None, child.arn, 1)


def test_serve_names_a_state_machine_side_effect(capsys: pytest.CaptureFixture[str]) -> None:
    server = serve_here("--template", str(ORDERS), "--workflow", "ChargeGuard")
    try:
        stack = resolve_stack(ORDERS)
        (line,) = [line.strip() for line in server.lines if line.strip().startswith("side effect:")]
        assert line == f"side effect:    state machine {stack.side_effect_state_machine('ChargeGuard').arn}"
        assert server.arn == stack.outputs["ChargeWorkflowArn"]
    finally:
        server.stop()


def test_run_without_a_payload_or_a_sample_event_exits_2_naming_where_it_looked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    template = tmp_path / "template.yaml"
    template.write_text((PROJECT_ROOT / "template.yaml").read_text())

    code, out, err = run_cli(capsys, "run", "--template", str(template), "--key", new_key())

    assert (code, out) == (2, "")
    assert str(tmp_path / "events" / "event.json") in err and "--payload" in err


def test_run_counts_the_invocations_of_the_function_named_by_function(capsys: pytest.CaptureFixture[str]) -> None:
    stack = resolve_stack()
    other = next(f for f in stack.functions.values() if f.name != SIDE_EFFECT.name)
    key = new_key()
    code, out, err = run_cli(
        capsys, "run", "--key", key, "--repeat", "2", "--json", "--wait-time-scale", "0", "--function", other.logical_id
    )

    assert code == 0, err
    summary = json.loads(out)["summary"]
    # The other function (the clock) is not invoked with the key in its event: none of its runs count.
    assert (summary["function"], summary["sideEffectInvocations"]) == (other.name, 0)


def test_run_with_an_unknown_function_exits_2_naming_the_templates_functions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_cli(capsys, "run", "--key", new_key(), "--wait-time-scale", "0", "--function", "Nope")

    assert code == 2 and out == ""
    assert "--function Nope: no such function" in err and SIDE_EFFECT.logical_id in err


def test_run_with_an_unknown_template_parameter_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "run", "--key", "k", "--parameter-overrides", "NoSuchParameter=1")

    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("idemflow: error: ") and "NoSuchParameter" in err


# -- demo ---------------------------------------------------------------------------------------------------------
def test_demo_passes_its_ten_steps_showing_each_keys_run_before_its_replay(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_cli(capsys, "demo")

    assert code == 0, out + err
    lines = out.splitlines()
    steps = [line.split("]", 1)[0] + "]" for line in lines if line.startswith("[")]
    assert steps == [f"[{n}/10]" for n in range(1, 11)]
    assert lines[-1] == "demo passed: 10 of 10 expectations met"
    for step in ("[9/10]", "[10/10]"):  # the queue's and the topic's two deliveries: the run, then the replay
        at = next(i for i, line in enumerate(lines) if line.startswith(step))
        shown = [line for line in lines[at + 1 : at + 3]]
        assert all(line.strip().startswith("delivery of message ") for line in shown), shown
        assert ['"replayed": false' in shown[0], '"replayed": true' in shown[1]] == [True, True], shown


# -- serve, and start / record / history against it ----------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@dataclass
class Served:
    process: subprocess.Popen[str]
    lines: list[str]
    url: str
    arn: str
    table: str

    def stop(self, timeout: float = 20.0) -> tuple[int, str, str]:
        self.process.send_signal(signal.SIGINT)
        out, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, "\n".join(self.lines) + out, err


def _field(lines: list[str], label: str) -> str:
    line = next(line for line in lines if line.strip().startswith(label))
    return line.split(label, 1)[1].split()[0]


def serve(*extra: str, timeout: float = 60.0) -> Served:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "idemflow.cli", "serve", "--port", str(port), "--wait-time-scale", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in iter(process.stdout.readline, ""):
            lines.put(line.rstrip("\n"))
            if line.startswith(READY_LINE):
                return  # the rest is read by communicate()
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while not seen or seen[-1] != READY_LINE:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            line = None
        if line is None or time.monotonic() > deadline:
            process.kill()
            _, err = process.communicate()
            pytest.fail(f"idemflow serve did not get ready: {seen} {err}")
        seen.append(line)
    url = _field(seen, "endpoint:")
    assert url == f"http://127.0.0.1:{port}"
    return Served(process, seen, url, _field(seen, "state machine:"), _field(seen, "records table:"))


class _Printed(io.StringIO):
    """What ``serve`` prints in this process: its lines as they come, and an event once it is ready."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.ready = threading.Event()
        self._partial = ""

    def write(self, text: str) -> int:
        *complete, self._partial = (self._partial + text).split("\n")
        self.lines.extend(complete)
        if any(line.startswith(READY_LINE) for line in complete):
            self.ready.set()
        return len(text)


@dataclass
class ServedHere:
    """``serve`` in a thread of this process: the command's own function, on its own engine."""

    thread: threading.Thread
    stopping: threading.Event
    printed: _Printed
    ended: dict[str, Any]
    url: str = ""
    arn: str = ""
    table: str = ""

    @property
    def lines(self) -> list[str]:
        return self.printed.lines

    def stop(self, timeout: float = 20.0) -> tuple[int, str, str]:
        self.stopping.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "serve did not stop"
        error = self.ended.get("error")
        return self.ended.get("code", 1), "\n".join(self.lines), repr(error) if error else ""


def runs(line: str, script: str) -> bool:
    """Whether a line serve printed runs ``script`` (``aws``, ``idemflow``): by its name, or by the path the banner
    writes when PATH would not find the virtual environment's script (``.venv/bin/aws``)."""
    return re.match(rf"(\S*/)?{script} ", line.strip()) is not None


def serve_here(*extra: str, timeout: float = 60.0) -> ServedHere:
    args = build_parser().parse_args(["serve", "--port", str(free_port()), "--wait-time-scale", "0", *extra])
    printed, stopping, ended = _Printed(), threading.Event(), {}

    def run() -> None:
        try:
            ended["code"] = cmd_serve(args, printed, stopping)
        except BaseException as error:  # reported by the test, not lost in the thread
            ended["error"] = error
            printed.ready.set()

    thread = threading.Thread(target=run, name="serve-here")
    thread.start()
    here = ServedHere(thread, stopping, printed, ended)
    if not printed.ready.wait(timeout) or "error" in ended:
        stopping.set()
        thread.join(timeout)
        pytest.fail(f"idemflow serve did not get ready: {printed.lines} {ended.get('error')!r}")
    here.url, here.arn = _field(here.lines, "endpoint:"), _field(here.lines, "state machine:")
    here.table = _field(here.lines, "records table:")
    return here


@pytest.fixture
def served() -> Iterator[Served]:
    server = serve()
    yield server
    if server.process.poll() is None:
        server.process.kill()
        server.process.communicate()


def test_serve_start_record_history_then_ctrl_c(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    key = new_key()
    start = ["start", "--endpoint-url", served.url, "--state-machine-arn", served.arn, "--key", key]
    assert any("aws stepfunctions start-execution --endpoint-url " + served.url in line for line in served.lines)

    code, out, err = run_cli(capsys, *start, "--wait", "--json")
    assert code == 0, err
    first = json.loads(out)
    assert first["status"] == "SUCCEEDED" and first["replayed"] is False and first["alreadyExisted"] is False
    assert first["name"] == client.execution_name(key, cli.sample_payload(PROJECT_ROOT / "template.yaml"))
    assert first["path"][-1] == "ReturnResult"

    # The same start again: Step Functions returns the execution of that name instead of a second one.
    code, out, _ = run_cli(capsys, *start, "--wait", "--json")
    again = json.loads(out)
    assert code == 0 and again["alreadyExisted"] is True and again["executionArn"] == first["executionArn"]

    # A fresh name reaches the workflow, which replays the stored result.
    code, out, _ = run_cli(capsys, *start, "--wait", "--json", "--fresh")
    fresh = json.loads(out)
    assert code == 0 and fresh["replayed"] is True and fresh["result"] == first["result"]

    code, out, _ = run_cli(
        capsys, *start, "--wait", "--payload", '{"customerId": "cust-1", "amount": 1, "currency": "EUR"}'
    )
    assert code == 1 and "FAILED  IdempotencyKeyReused" in out

    code, out, _ = run_cli(capsys, "record", "--endpoint-url", served.url, "--table", served.table, "--key", key)
    assert code == 0
    assert "status:         COMPLETED" in out and f"owner:          {first['executionArn']}" in out
    assert "result:" in out and json.dumps(first["result"], indent=2, ensure_ascii=False).splitlines()[1] in out

    code, out, _ = run_cli(capsys, "record", "--endpoint-url", served.url, "--table", served.table, "--key", new_key())
    assert code == 1 and out.startswith("no record for key")

    code, out, _ = run_cli(capsys, "history", "--endpoint-url", served.url, "--execution-arn", first["executionArn"])
    assert code == 0
    assert "ExecutionStarted" in out and "ExecutionSucceeded" in out
    assert "AcquireLock" in out and "dynamodb:putItem" in out and "lambda:invoke" in out

    code, out, err = run_cli(
        capsys, "history", "--endpoint-url", served.url, "--execution-arn", first["executionArn"] + "-missing"
    )
    assert code == 1 and out == "" and err.startswith("idemflow: error: GetExecutionHistory: ")

    began = time.monotonic()
    code, out, err = served.stop()
    assert code == 0, err
    assert time.monotonic() - began < 20
    assert "idemflow serve: stopping" in out
    assert "Traceback" not in err


def test_sync_start_on_an_express_deployment(capsys: pytest.CaptureFixture[str]) -> None:
    server = serve_here("--parameter-overrides", "WorkflowType=EXPRESS")
    try:
        key = new_key()
        start = [
            "start",
            "--endpoint-url",
            server.url,
            "--state-machine-arn",
            server.arn,
            "--key",
            key,
            "--sync",
            "--json",
        ]
        code, out, err = run_cli(capsys, *start)
        assert code == 0, err
        first = json.loads(out)
        assert first["status"] == "SUCCEEDED" and first["replayed"] is False and ":express:" in first["executionArn"]
        code, out, _ = run_cli(capsys, *start)
        assert code == 0 and json.loads(out)["replayed"] is True
    finally:
        code, _, err = server.stop()
    assert code == 0, err


def test_start_against_nothing_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    arn = "arn:aws:states:us-east-1:123456789012:stateMachine:idemflow-IdempotentStateMachine"
    code, out, err = run_cli(
        capsys, "start", "--endpoint-url", f"http://127.0.0.1:{free_port()}", "--state-machine-arn", arn, "--key", "k"
    )
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "Could not connect to the endpoint URL" in err


@pytest.mark.parametrize("command", ["start", "run"])
def test_a_bad_key_is_refused_by_name_before_any_request_or_deploy(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The grammar of docs/contract.md#keys: no whitespace at either end. Checked once on each path: client.start
    # for `start` (before its first request: the endpoint below listens to nothing), the CLI for `run` (before
    # the engine is deployed).
    checked: list[str] = []
    original = client.keys.check_input
    monkeypatch.setattr(client.keys, "check_input", lambda key, payload: (checked.append(key), original(key, payload)))
    arn = "arn:aws:states:us-east-1:123456789012:stateMachine:idemflow-IdempotentStateMachine"
    endpoint = ["--endpoint-url", f"http://127.0.0.1:{free_port()}", "--state-machine-arn", arn]
    deployed = []
    monkeypatch.setattr("idemflow.cli.embedded.deploy", lambda *a, **k: deployed.append(a))

    code, out, err = run_cli(capsys, command, *(endpoint if command == "start" else []), "--key", " padded")

    assert (code, out, deployed) == (2, "", [])
    assert err.startswith("idemflow: error: IdempotencyKeyInvalid: ") and err.count("\n") == 1
    assert checked == [" padded"]
    if command == "start":  # a good key too is checked once, then the request is sent (to nothing here)
        checked.clear()
        assert run_cli(capsys, command, *endpoint, "--key", "good")[0] == 1
        assert checked == ["good"]


def test_serve_on_a_port_in_use_exits_1_saying_so(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, out, err = run_cli(capsys, "serve", "--port", str(port))

    assert code == 1 and out == ""
    assert err.count("\n") == 1 and f"port {port} is in use" in err and "Traceback" not in err


def test_run_with_a_bad_mock_config_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "MockConfigFile.json"
    bad.write_text('{"StateMachines": 5}')

    code, _, stderr = run_cli(
        capsys, "run", "--key", "k", "--mock-config", str(bad), "--test-case", "T", "--wait-time-scale", "0"
    )

    err = stderr.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "MockConfigFile.json" in err[0] and "StateMachines" in err[0]


def test_run_sends_the_sample_events_key_with_its_payload_and_a_new_key_with_another(
    capsys: pytest.CaptureFixture[str],
) -> None:
    template = PROJECT_ROOT / "template.yaml"
    event = json.loads((PROJECT_ROOT / "events" / "event.json").read_text())
    base = ["run", "--template", str(template), "--wait-time-scale", "0", "--json"]

    code, out, err = run_cli(capsys, *base)
    assert code == 0, err
    document = json.loads(out)
    assert (document["key"], document["payload"]) == (event["idempotencyKey"], event["payload"])
    assert document["executions"][0]["result"]["chargeId"] == event["idempotencyKey"]

    code, out, err = run_cli(capsys, *base, "--payload", json.dumps({**event["payload"], "amount": 1}))
    assert code == 0, err
    key = json.loads(out)["key"]
    assert key != event["idempotencyKey"] and key.startswith("order-")  # not the event's: its payload is another


# The key and the result statemachine/MockConfigFile.json's records and mocked side effect were written for
# (tests/functional/test_mock_config.py keeps them in step with the sample event).
MOCK_CONFIG = PROJECT_ROOT / "statemachine" / "MockConfigFile.json"
MOCK_KEY = "order-mock-0001"
MOCK_RESULT = json.loads(MOCK_CONFIG.read_text())["MockedResponses"]["RunSideEffectSucceeded"]["0"]["Return"]["Payload"]


def test_run_with_a_test_case_gets_the_files_responses_and_invokes_no_function(
    capsys: pytest.CaptureFixture[str],
) -> None:
    template = str(PROJECT_ROOT / "template.yaml")
    base = ["run", "--template", template, "--wait-time-scale", "0", "--key", MOCK_KEY, "--json"]
    assert cli.main([*base, "--mock-config", str(MOCK_CONFIG), "--test-case", "HappyPathTest"]) == 0

    document = json.loads(capsys.readouterr().out)
    (execution,) = document["executions"]
    assert execution["executionArn"].startswith(document["stateMachineArn"].replace(":stateMachine:", ":execution:"))
    assert (execution["status"], execution["result"]) == ("SUCCEEDED", MOCK_RESULT)
    assert document["summary"]["sideEffectInvocations"] == 0  # the mocked RunSideEffect: the real function never ran
    # The same run without the file: the real function runs, once, and returns its own result.
    assert cli.main(base) == 0
    real = json.loads(capsys.readouterr().out)
    assert real["summary"]["sideEffectInvocations"] == 1
    assert real["executions"][0]["result"] != MOCK_RESULT  # chargedAt is the real clock's, not the file's 2030


@pytest.mark.parametrize(
    "given", [["--mock-config", str(MOCK_CONFIG)], ["--test-case", "HappyPathTest"]], ids=["file", "case"]
)
def test_run_takes_a_mock_config_only_with_a_test_case(capsys: pytest.CaptureFixture[str], given: list[str]) -> None:
    assert cli.main(["run", "--template", str(PROJECT_ROOT / "template.yaml"), "--key", MOCK_KEY, *given]) == 2

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--mock-config and --test-case go together" in err


def test_an_endpoint_answering_a_web_page_is_one_line_without_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    import http.server

    class Page(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = b"<!DOCTYPE html><html><body><h1>Not an AWS API</h1></body></html>"
            self.send_response(404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        code, out, err = run_cli(capsys, "start", "--endpoint-url", url, "--state-machine-arn", "arn:x", "--key", "k")
    finally:
        server.shutdown()
        server.server_close()

    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "answered HTTP 404 with a web page" in err and "<html>" not in err


@pytest.fixture(scope="module")
def aws_cli_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment the printed AWS CLI lines run in: any credentials (the engine takes any), and the AWS CLI
    this environment installed first on PATH, prewarmed (tests/prewarmed.py)."""
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    with prewarmed_aws(tmp_path_factory.mktemp("aws"), env) as prewarmed:
        yield prewarmed


def test_serve_prints_a_publish_to_the_topic_door_that_runs_the_workflow(
    capsys: pytest.CaptureFixture[str], aws_cli_env: dict[str, str]
) -> None:
    server = serve_here("--parameter-overrides", "TopicFrontDoor=true")
    try:
        (publish,) = [line.strip() for line in server.lines if runs(line, "aws") and " sns publish " in line]
        assert any(line.strip().startswith("topic:") and "(to " in line for line in server.lines)
        env = aws_cli_env
        sent = subprocess.run(["bash", "-c", publish], env=env, capture_output=True, text=True, timeout=60)
        assert sent.returncode == 0, sent.stderr
        assert json.loads(sent.stdout)["MessageId"]

        def completed() -> bool:
            code, out, _ = run_cli(
                capsys, "record", "--endpoint-url", server.url, "--table", server.table, "--key", "order-5"
            )
            return code == 0 and "COMPLETED" in out

        wait_until(completed, 60, what="order-5 to complete", interval=0.05)
    finally:
        server.stop()


def test_serve_prints_a_post_and_a_get_for_a_standard_workflows_http_door() -> None:
    server = serve_here("--parameter-overrides", "HttpFrontDoor=true", "WorkflowType=STANDARD")
    try:
        curls = [line.strip() for line in server.lines if line.strip().startswith("curl ")]
        (post,) = [c for c in curls if " -X POST " in c]
        (get,) = [c for c in curls if " -X " not in c]
        sent = subprocess.run(["bash", "-c", post], capture_output=True, text=True, timeout=60)
        assert sent.returncode == 0 and sent.stdout.startswith("HTTP/1.1 202"), sent.stdout + sent.stderr
        (location,) = [
            h.split(":", 1)[1].strip() for h in sent.stdout.splitlines() if h.lower().startswith("location:")
        ]
        env = {**os.environ, "ID": location.rsplit("/", 1)[1]}

        def answered() -> str:
            got = subprocess.run(["bash", "-c", get], env=env, capture_output=True, text=True, timeout=60)
            return got.stdout if got.stdout.startswith("HTTP/1.1 200") else ""

        body = wait_until(answered, 60, what="the GET to answer the outcome", interval=0.05).split("\n\n", 1)[1]
        # signed by curl --aws-sigv4 with the local key: the engine's own user, whose keys the door scopes
        assert re.fullmatch(r"iam:arn:aws:iam::\d{12}:user/local\|order-2", json.loads(body)["idempotencyKey"])
        assert all("--aws-sigv4 " in c and "--user local:local" in c for c in (post, get))
        assert any("(AWS_IAM: SigV4-signed callers only" in line for line in server.lines)
    finally:
        server.stop()


def test_serve_prints_how_to_create_the_doors_stream_and_write_a_record_that_runs_the_workflow(
    capsys: pytest.CaptureFixture[str], aws_cli_env: dict[str, str]
) -> None:
    arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
    server = serve_here("--parameter-overrides", f"KinesisStreamArn={arn}")
    try:
        assert any(line.strip() == f"stream:         {arn}  (a pipe waits for it: create it)" for line in server.lines)
        kinesis = [line.strip() for line in server.lines if runs(line, "aws") and " kinesis " in line]
        assert [" create-stream " in kinesis[0], " put-record " in kinesis[1]] == [True, True]
        env = aws_cli_env
        for command in kinesis:
            sent = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=60)
            assert sent.returncode == 0, sent.stderr

        def completed() -> bool:
            code, out, _ = run_cli(
                capsys, "record", "--endpoint-url", server.url, "--table", server.table, "--key", "order-6"
            )
            return code == 0 and "COMPLETED" in out

        wait_until(completed, 60, what="order-6 to complete", interval=0.05)
    finally:
        server.stop()


def test_serve_prints_an_item_for_the_outbox_examples_table_stream_that_runs_the_workflow(
    capsys: pytest.CaptureFixture[str], aws_cli_env: dict[str, str]
) -> None:
    template = str(PROJECT_ROOT / "examples" / "outbox" / "template.yaml")
    server = serve_here("--template", template, "--parameter-overrides", "RequestsTableDoor=true")
    try:
        assert any(line.strip().startswith("stream:") and "(a pipe reads it)" in line for line in server.lines)
        (put,) = [line.strip() for line in server.lines if " dynamodb put-item " in line]
        env = aws_cli_env
        sent = subprocess.run(["bash", "-c", put], env=env, capture_output=True, text=True, timeout=60)
        assert sent.returncode == 0, sent.stderr

        def completed() -> bool:
            code, out, _ = run_cli(
                capsys,
                "record",
                "--endpoint-url",
                server.url,
                "--table",
                server.table,
                "--scope",
                "notifications",
                "--key",
                "order-7",
            )
            return code == 0 and "COMPLETED" in out

        wait_until(completed, 60, what="order-7 to complete", interval=0.05)
    finally:
        server.stop()


def test_serve_prints_a_bucket_and_a_write_for_an_event_door_on_s3s_events(aws_cli_env: dict[str, str]) -> None:
    # The event door with a pattern on aws.s3 takes a bucket's events; the bucket is the user's. The printed
    # lines make one, send its events to EventBridge and write an object: the door delivers its event (the
    # example charge declines it, so it ends on the dead-letter queue with the object's key).
    pattern = json.dumps({"source": ["aws.s3"], "detail-type": ["Object Created"]})
    server = serve_here(
        "--parameter-overrides", "EventFrontDoor=true", f"EventPattern={pattern}", "DoorKeyField=object.key"
    )
    try:
        lines = [line.strip() for line in server.lines if " s3api " in line or " s3 cp " in line]
        assert not [line for line in server.lines if " put-events " in line]  # its source would not match
        (note,) = [line.strip() for line in server.lines if line.strip().startswith("# the example charge")]
        assert "dead-lettered (PaymentValidationError)" in note  # said before it happens
        env = aws_cli_env
        for command in lines:
            sent = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=60)
            assert sent.returncode == 0, (command, sent.stderr)
        sqs = boto3.client(
            "sqs", endpoint_url=server.url, region_name="us-east-1", aws_access_key_id="l", aws_secret_access_key="l"
        )
        url = next(u for u in sqs.list_queues()["QueueUrls"] if "DoorDeadLetterQueue" in u)

        def dead_lettered() -> list[dict[str, Any]]:
            got = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"]).get("Messages", [])
            return [m for m in got if m["MessageAttributes"]["idempotencyKey"]["StringValue"] == "order-8.json"]

        assert wait_until(dead_lettered, 60, what="the object's event to be delivered", interval=0.05)
    finally:
        server.stop()


def test_serve_prints_an_item_for_a_table_stream_that_the_example_charge_completes(
    capsys: pytest.CaptureFixture[str], aws_cli_env: dict[str, str]
) -> None:
    # The table stream door hands the item's new image, in DynamoDB JSON, as the payload: the example charge
    # reads it as the payment it holds. With DoorKeyField=idempotencyKey (a typed attribute) the delivery is
    # keyed by its stream record's eventID, and the banner says so.
    arn = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2024-01-01T00:00:00.000"
    server = serve_here("--parameter-overrides", f"DynamoDBStreamArn={arn}")
    try:
        dynamodb = [line.strip() for line in server.lines if runs(line, "aws") and " dynamodb " in line]
        assert [" create-table " in dynamodb[0], " put-item " in dynamodb[1]] == [True, True]
        (note,) = [line.strip() for line in server.lines if line.strip().startswith("# the payload is the item")]
        assert "dynamodb:<eventID>" in note and "DoorKeyField=idempotencyKey.S" in note
        for command in dynamodb:
            sent = subprocess.run(["bash", "-c", command], env=aws_cli_env, capture_output=True, text=True, timeout=60)
            assert sent.returncode == 0, (command, sent.stderr)

        def delivered() -> list[dict[str, Any]]:
            code, out, _ = run_cli(
                capsys, "deliveries", "--endpoint-url", server.url, "--stack-name", "idemflow", "--json"
            )
            assert code == 0, out
            return [d for d in json.loads(out)["deliveries"] if d["outcome"] != "RUNNING"]

        (delivery,) = wait_until(delivered, 60, what="the item to be delivered", interval=0.05)
        assert delivery["outcome"] == "COMPLETED", delivery
        assert str(delivery["key"]).startswith("dynamodb:")
        code, out, _ = run_cli(
            capsys, "record", "--endpoint-url", server.url, "--table", server.table, "--key", delivery["key"]
        )
        assert code == 0 and "COMPLETED" in out, out
    finally:
        server.stop()
