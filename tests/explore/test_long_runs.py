"""A full tier runs thousands of schedules in one engine: its memory stays flat, and it shows its progress.

Each schedule's executions, the items its key left and what moto tracks of them are let go once it has
ended (``Checker.let_go``, ``Engine.forget_ended_executions``): kept, they made ``make explore`` grow past
12 GB and each schedule slower than the last. ``--limit`` bounds a run; ``Progress`` prints a line every
500 schedules or 30 s.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.dynamodb.models.dynamo_type import Item
from moto.stepfunctions.models import StateMachine

from idemflow.engine import Engine
from idemflow.explore import BASE_PARAMETERS, Checker, Settings, load_targets
from idemflow.explore.__main__ import main
from idemflow.explore.progress import Progress, memory_mb, memory_text
from idemflow.explore.scheduler import Scheduler

from .test_interleavings import SEED


def executions_kept(engine: Engine) -> int:
    backend: Any = engine._sfn_backend()
    return sum(len(m.executions) for sm in backend.state_machines for m in (sm, *sm.versions.values()))


def items_kept(engine: Engine) -> dict[str, int]:
    assert engine.stack is not None
    return {t.name: len(engine.tables.items(t.name)) for t in engine.stack.all_tables()}


@pytest.fixture
def engine() -> Any:
    target = load_targets()["project"]
    with Engine(target.template, wait_time_scale=0, parameter_overrides=BASE_PARAMETERS) as started:
        yield started


def test_after_many_schedules_the_engine_holds_no_more_than_before_the_first(engine: Engine) -> None:
    checker = Checker(
        engine, Settings(executions=2, events=("fail", "lease"), payload=load_targets()["project"].payload)
    )
    try:
        first = checker.sample(1, seed=SEED)
        after_one = executions_kept(engine), items_kept(engine)
        report = checker.sample(12, seed=SEED)
    finally:
        checker.close()

    assert first.schedules == 1 and report.schedules == 12
    # Every schedule's two executions ran (and their key's items were written), then were let go.
    assert sum(report.outcomes.values()) == 24
    assert executions_kept(engine) == 0 == after_one[0]
    assert set(items_kept(engine).values()) == {0} == set(after_one[1].values())
    # moto's tracker of model instances (its dashboard's): no state machine copy per execution, no copy of
    # every item each read returned.
    assert len(StateMachine.instances_tracked) == 0  # type: ignore[attr-defined]
    assert len(Item.instances_tracked) == 0  # type: ignore[attr-defined]


def test_only_ended_executions_are_forgotten(engine: Engine) -> None:
    payload = load_targets()["project"].payload
    done = engine.run({"idempotencyKey": "forget-1", "payload": payload}, name="forget-done")
    scheduler = Scheduler(lambda request: False)
    scheduler.reset("held")
    engine.set_gate(scheduler)
    try:
        held = engine.start_execution({"idempotencyKey": "forget-2", "payload": payload}, name="forget-held")
        assert scheduler.quiescent([held])  # it waits at its first request: running

        forgotten = engine.forget_ended_executions()

        assert done.arn in forgotten and held not in forgotten
        assert engine.describe(held, with_path=False).status == "RUNNING"
        with pytest.raises(ClientError, match="ExecutionDoesNotExist"):
            engine.describe(done.arn)
        scheduler.tag = ""  # its next requests pass freely
        scheduler.grant(held)
        assert engine.wait(held).status == "SUCCEEDED"
    finally:
        engine.set_gate(None)
    assert engine.forget_ended_executions() == [held]
    assert executions_kept(engine) == 0


def test_limit_cuts_each_run_short_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--quick", "--target", "project", "--only", "fail-fast", "--limit", "3", "--seed", "1"])

    out = capsys.readouterr().out
    assert code == 0
    assert "fail-fast, every order, no event: 3 schedules (the first ones only: --limit), 0 violations" in out
    assert "  memory: RSS " in out and " MB, peak " in out
    assert "explored 3 schedules: 0 violations" in out


def test_a_limit_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--quick", "--limit", "0"])

    assert exited.value.code == 2
    assert "--limit: 0: not a positive number" in capsys.readouterr().err


def test_replay_runs_the_one_schedule_a_violation_prints(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--target", "project", "--only", "slow owners", "--replay", "0,1,0"])

    out = capsys.readouterr().out
    assert code == 0
    assert "slow owners (leases run out anywhere), random: 1 schedules (replayed), 0 violations" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--only", "slow owners", "--replay", "0,1"], "--replay runs one schedule of one run"),
        (["--target", "project", "--only", "slow owners", "--replay", "0,x"], "expected the comma-separated choices"),
    ],
)
def test_replay_needs_one_run_and_choices(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)

    assert exited.value.code == 2
    assert message in capsys.readouterr().err


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_prints_every_500_schedules_with_the_total_rate_and_memory() -> None:
    out, clock = io.StringIO(), FakeClock()
    progress = Progress("[project] run", 1200, out=out, clock=clock, memory=lambda: 212.4)

    for done in range(1, 1201):
        clock.now += 0.01  # 100 schedules a second, 12 s in all: never 30 s between two lines
        progress(done)

    assert out.getvalue().splitlines() == [
        "  [project] run: 500/1200 schedules, 5 s, 100.0/s, RSS 212 MB",
        "  [project] run: 1000/1200 schedules, 10 s, 100.0/s, RSS 212 MB",
    ]


def test_progress_prints_every_30_seconds_on_a_slow_run_without_a_known_total() -> None:
    out, clock = io.StringIO(), FakeClock()
    progress = Progress("[outbox] run", out=out, clock=clock, memory=lambda: None)

    for done in range(1, 11):
        clock.now += 7.0  # a line once 30 s have passed since the last one
        progress(done)

    assert out.getvalue().splitlines() == [
        "  [outbox] run: 5 schedules, 35 s, 0.1/s",
        "  [outbox] run: 10 schedules, 70 s, 0.1/s",
    ]


def test_a_short_run_prints_no_progress() -> None:
    out, clock = io.StringIO(), FakeClock()
    progress = Progress("[project] quick", 120, out=out, clock=clock)

    for done in range(1, 121):
        clock.now += 0.05
        progress(done)

    assert out.getvalue() == "" and progress.lines == 0


def test_memory_is_read_from_the_process() -> None:
    rss, peak = memory_mb("VmRSS"), memory_mb("VmHWM")

    assert rss is not None and peak is not None and 0 < rss <= peak
    assert memory_text().startswith("RSS ")
