"""Executions (``executions.py``): ``start-time``, ``atomic-starts``, ``thread-list`` and ``worker-thread``. For each
change, moto 5.2.5's behaviour without it and the engine's with it."""

from __future__ import annotations

import copy
import datetime
import json
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from idemflow.engine import registry, state
from idemflow.engine.services.stepfunctions import executions
from idemflow.engine.services.stepfunctions.clock import aws_timestamp
from idemflow.engine.services.stepfunctions.executions import wait_for_execution
from tests.unit.changes.machines import (
    AWS_START_TIME,
    create_state_machine,
    history_types,
    run,
    start,
    wait_until,
)

pytestmark = pytest.mark.unit


# ---------------------------------------------------------------------------------------------
# start-time: $$.Execution.StartTime
# ---------------------------------------------------------------------------------------------

START_TIME_MACHINE = {
    "StartAt": "Stamp",
    "States": {"Stamp": {"Type": "Pass", "Parameters": {"t.$": "$$.Execution.StartTime"}, "End": True}},
}


def test_unpatched_moto_5_2_5_start_time_breaks_describe_execution(unpatched: None, sfn: Any) -> None:
    execution_arn = start(sfn, create_state_machine(sfn, START_TIME_MACHINE))
    assert wait_for_execution(execution_arn, 10)
    # Unpatched, the wait polls the status, which moto sets before the output: wait for the output too (a
    # describe between the two found no output to serialize, under load).
    wait_until(lambda: executions.find_execution(execution_arn).output is not None, 10)

    with pytest.raises(TypeError, match="datetime is not JSON serializable"):
        sfn.describe_execution(executionArn=execution_arn)


def test_patched_start_time_is_an_aws_timestamp(patched: None, sfn: Any) -> None:
    described = run(sfn, create_state_machine(sfn, START_TIME_MACHINE))

    assert described["status"] == "SUCCEEDED"
    start_time = json.loads(described["output"])["t"]
    assert AWS_START_TIME.match(start_time), start_time
    assert start_time == aws_timestamp(described["startDate"])


def test_aws_timestamp_format() -> None:
    moment = datetime.datetime(2026, 11, 23, 9, 26, 0, 123987, tzinfo=datetime.timezone(datetime.timedelta(hours=1)))
    assert aws_timestamp(moment) == "2026-11-23T08:26:00.123Z"
    assert aws_timestamp(datetime.datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05.000Z"


# ---------------------------------------------------------------------------------------------
# atomic-starts
# ---------------------------------------------------------------------------------------------
WAIT_AN_HOUR = {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 3600, "End": True}}}


@pytest.fixture
def held_start(sfn: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """A start of "held" (a one-hour Wait) paused on its own thread after moto listed the execution and
    before it started its worker: the window in which moto 5.2.5 has not set its status yet."""
    from moto.stepfunctions.parser.backend.execution import Execution

    state.update(wait_time_scale=1.0)
    machine = create_state_machine(sfn, WAIT_AN_HOUR)
    inside, release = threading.Event(), threading.Event()
    build_worker = Execution._get_start_execution_worker

    def paused(self: Any) -> Any:
        if self.name == "held":
            inside.set()
            release.wait(10)
        return build_worker(self)

    monkeypatch.setattr(Execution, "_get_start_execution_worker", paused)
    outcome: dict[str, Any] = {}

    def first_start() -> None:
        outcome["start"] = sfn.start_execution(stateMachineArn=machine, name="held", input="{}")

    thread = threading.Thread(target=first_start)
    thread.start()
    assert inside.wait(10), "the first start never reached its worker"
    yield SimpleNamespace(machine=machine, release=release, thread=thread, outcome=outcome)
    release.set()
    thread.join(10)
    if "start" in outcome:
        arn = outcome["start"]["executionArn"]
        # StartExecution answers before the execution's thread has made its environment, and moto 5.2.5
        # stops an execution through that environment (None until then: an AttributeError in this teardown,
        # once under load). It exists once the Wait state is entered.
        wait_until(lambda: "WaitStateEntered" in history_types(sfn, arn), 10)
        sfn.stop_execution(executionArn=arn)


def test_unpatched_moto_5_2_5_lists_a_starting_execution_without_a_status(
    unpatched: None, held_start: SimpleNamespace, sfn: Any
) -> None:
    # In-process, moto's error escapes as the AttributeError the server turns into an HTTP 500.
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'value'"):
        sfn.list_executions(stateMachineArn=held_start.machine)
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'value'"):
        sfn.start_execution(stateMachineArn=held_start.machine, name="held", input="{}")


def test_patched_a_starting_execution_is_running_and_a_second_start_of_its_name_waits_for_it(
    patched: None, held_start: SimpleNamespace, sfn: Any
) -> None:
    listed = sfn.list_executions(stateMachineArn=held_start.machine)["executions"]
    assert [(e["name"], e["status"]) for e in listed] == [("held", "RUNNING")]
    second: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: second.update(sfn.start_execution(stateMachineArn=held_start.machine, name="held", input="{}"))
    )
    thread.start()

    held_start.release.set()
    thread.join(10)
    held_start.thread.join(10)

    assert second["executionArn"] == held_start.outcome["start"]["executionArn"]
    assert len(sfn.list_executions(stateMachineArn=held_start.machine)["executions"]) == 1


@pytest.fixture
def start_paused_before_listed(sfn: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """A start of "held" paused on its own thread after moto checked that no execution has its name and
    before it listed its own (while it copies the state machine)."""
    from moto.stepfunctions.parser import models

    state.update(wait_time_scale=1.0)
    machine = create_state_machine(sfn, WAIT_AN_HOUR)
    inside, release = threading.Event(), threading.Event()
    deepcopy = copy.deepcopy
    first: dict[str, Any] = {}

    def paused_deepcopy(value: Any, memo: Any = None) -> Any:
        if threading.current_thread() is first.get("thread"):
            inside.set()
            release.wait(10)
        return deepcopy(value, memo)

    monkeypatch.setattr(models, "copy", SimpleNamespace(deepcopy=paused_deepcopy))
    first["thread"] = threading.Thread(
        target=lambda: first.update(sfn.start_execution(stateMachineArn=machine, name="held", input="{}"))
    )
    first["thread"].start()
    assert inside.wait(10), "the first start never copied its state machine"
    yield SimpleNamespace(machine=machine, release=release, first=first)
    release.set()
    first["thread"].join(10)
    for execution in sfn.list_executions(stateMachineArn=machine)["executions"]:
        sfn.stop_execution(executionArn=execution["executionArn"])


def test_unpatched_moto_5_2_5_runs_two_executions_of_one_name_started_at_once(
    unpatched: None, start_paused_before_listed: SimpleNamespace, sfn: Any
) -> None:
    machine = start_paused_before_listed.machine
    second = sfn.start_execution(stateMachineArn=machine, name="held", input="{}")
    start_paused_before_listed.release.set()
    start_paused_before_listed.first["thread"].join(10)

    listed = sfn.list_executions(stateMachineArn=machine)["executions"]
    assert second["executionArn"] == start_paused_before_listed.first["executionArn"]  # the same ARN ...
    assert [e["name"] for e in listed] == ["held", "held"]  # ... for two executions


class SpiedLock:
    """The start lock, telling when a thread other than the first to take it asks for it."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.asked = threading.Event()
        self.first: threading.Thread | None = None

    def __enter__(self) -> None:
        if self.first is None:
            self.first = threading.current_thread()
        elif threading.current_thread() is not self.first:
            self.asked.set()
        self.lock.acquire()

    def __exit__(self, *_: Any) -> None:
        self.lock.release()


@pytest.fixture
def spied_start_lock(monkeypatch: pytest.MonkeyPatch) -> SpiedLock:
    spied = SpiedLock()
    monkeypatch.setattr(executions, "_start_lock", spied)
    return spied


def test_patched_a_start_of_a_name_being_started_waits_and_returns_the_same_execution(
    patched: None, spied_start_lock: SpiedLock, start_paused_before_listed: SimpleNamespace, sfn: Any
) -> None:
    held = start_paused_before_listed
    second: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: second.update(sfn.start_execution(stateMachineArn=held.machine, name="held", input="{}"))
    )
    thread.start()
    assert spied_start_lock.asked.wait(10), "the second start never asked for the start lock"

    held.release.set()
    thread.join(10)
    held.first["thread"].join(10)

    listed = sfn.list_executions(stateMachineArn=held.machine)["executions"]
    assert second["executionArn"] == held.first["executionArn"]
    assert [(e["name"], e["status"]) for e in listed] == [("held", "RUNNING")]


# ---------------------------------------------------------------------------------------------
# thread-list: finished interpreter threads let go; worker-thread
# ---------------------------------------------------------------------------------------------
PASS_ONLY: dict[str, Any] = {"StartAt": "Only", "States": {"Only": {"Type": "Pass", "End": True}}}


def thread_list() -> list[Any]:
    from moto.stepfunctions.parser.asl.component.program import program

    threads: list[Any] = program.TMP_THREADS
    return threads


def test_unpatched_moto_5_2_5_keeps_every_interpreter_thread(unpatched: None, sfn: Any) -> None:
    machine = create_state_machine(sfn, PASS_ONLY)
    before = len(thread_list())

    for _ in range(20):
        run(sfn, machine)

    assert len(thread_list()) >= before + 20
    assert not any(t.is_alive() for t in thread_list()[before:])  # all finished, all kept


def test_patched_lets_finished_threads_go(sfn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # inline-states left out: with it, a Pass-only execution starts no thread that goes in the list.
    registry.apply(without=("inline-states",))
    state.update(wait_time_scale=0)
    monkeypatch.setattr(executions, "PRUNE_EVERY", 8)
    machine = create_state_machine(sfn, PASS_ONLY)

    for _ in range(40):
        run(sfn, machine)

    assert len(thread_list()) < 8 + 2  # what has finished since the last pass, and what still runs


def test_patched_thread_list_is_one_list_for_every_module(patched: None) -> None:
    from moto.stepfunctions.parser import utils
    from moto.stepfunctions.parser.asl.component.state.exec import execute_state
    from moto.stepfunctions.parser.backend import execution_worker

    assert utils.TMP_THREADS is thread_list() is execute_state.TMP_THREADS is execution_worker.TMP_THREADS


def test_patched_ended_execution_lets_its_thread_go(patched: None, sfn: Any) -> None:
    machine = create_state_machine(sfn, PASS_ONLY)
    done = run(sfn, machine)

    execution = executions.find_execution(done["executionArn"])
    assert wait_for_execution(done["executionArn"], timeout=0)  # answered from the status
    # The thread drops itself as its last step, just after the status is final.
    wait_until(lambda: not hasattr(execution.exec_worker, executions.THREAD_ATTR))


PAUSE_30: dict[str, Any] = {"StartAt": "Pause", "States": {"Pause": {"Type": "Wait", "Seconds": 30, "End": True}}}


def test_unpatched_moto_5_2_5_keeps_no_thread_to_join(unpatched: None, sfn: Any) -> None:
    execution_arn = start(sfn, create_state_machine(sfn, PAUSE_30))

    wait_until(lambda: "WaitStateEntered" in history_types(sfn, execution_arn))
    execution = executions.find_execution(execution_arn)
    assert execution.status == "RUNNING"
    assert getattr(execution.exec_worker, executions.THREAD_ATTR, None) is None  # only its status to poll
    sfn.stop_execution(executionArn=execution_arn)
    assert wait_for_execution(execution_arn, 5)


def test_patched_a_running_execution_has_a_thread_to_join(patched: None, sfn: Any) -> None:
    state.update(wait_time_scale=1.0)
    execution_arn = start(sfn, create_state_machine(sfn, PAUSE_30))

    wait_until(lambda: "WaitStateEntered" in history_types(sfn, execution_arn))
    thread = getattr(executions.find_execution(execution_arn).exec_worker, executions.THREAD_ATTR)
    assert thread.is_alive()
    sfn.stop_execution(executionArn=execution_arn)
    thread.join(5)
    assert not thread.is_alive()
    assert sfn.describe_execution(executionArn=execution_arn)["status"] == "ABORTED"


# stop_running: what an engine that stops does to the executions still running


class _JustStarted:
    """A worker whose thread has not made its environment yet when it is first looked at (moto's ExecutionWorker
    makes ``env`` in its thread): its ``stop`` then fails as moto's does, ``self.env.set_stop`` on None."""

    def __init__(self) -> None:
        self.looks = 0
        self.stopped = threading.Event()

    @property
    def env(self) -> Any:
        self.looks += 1
        return None if self.looks == 1 else self

    def stop(self, stop_date: Any, error: Any, cause: Any) -> None:
        if self.looks <= 1:
            raise AttributeError("'NoneType' object has no attribute 'set_stop'")
        self.stopped.set()


def test_a_worker_whose_environment_comes_later_is_stopped_on_a_later_pass(patched: None) -> None:
    worker = _JustStarted()
    thread = threading.Thread(target=worker.stopped.wait, args=(30,), name="sfn-execution", daemon=True)
    setattr(worker, executions.THREAD_ATTR, thread)
    thread.start()
    with executions._running_lock:
        executions._running[id(worker)] = worker
    try:
        assert executions.stop_running(timeout=30) == []
        assert worker.stopped.is_set() and not thread.is_alive()
    finally:
        worker.stopped.set()
        with executions._running_lock:
            executions._running.pop(id(worker), None)
