"""The executions' clock and waits (``clock.py``): ``wait-time-scale`` and ``timestamps``. For each change, moto
5.2.5's behaviour without it and the engine's with it."""

from __future__ import annotations

import datetime
import json
import os
import re
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from idemflow.engine import state
from idemflow.engine.services.stepfunctions import clock
from idemflow.engine.services.stepfunctions.clock import parse_rfc3339, recorded_delays
from idemflow.engine.services.stepfunctions.executions import wait_for_execution
from tests.unit.changes.machines import (
    AWS_START_TIME,
    create_state_machine,
    failing_parallel,
    history_types,
    run,
    start,
    wait_until,
)

pytestmark = pytest.mark.unit


# ---------------------------------------------------------------------------------------------
# wait-time scale setting
# ---------------------------------------------------------------------------------------------


def test_wait_time_scale_rejects_nonsense() -> None:
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            state.update(wait_time_scale=bad)
    state.update(wait_time_scale=0.5)
    assert state.current().wait_time_scale == 0.5


# ---------------------------------------------------------------------------------------------
# wait-time-scale
# ---------------------------------------------------------------------------------------------

WAIT_THEN_RETRY: dict[str, Any] = {
    "StartAt": "Pause",
    "States": {
        "Pause": {"Type": "Wait", "Seconds": 30, "Next": "Flaky"},
        **failing_parallel({"IntervalSeconds": 10, "BackoffRate": 2, "MaxAttempts": 2}),
    },
}


def test_unpatched_moto_5_2_5_sleeps_real_time(unpatched: None, sfn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import moto.stepfunctions.parser.asl.component.common.retry.retrier_decl as retrier_decl

    state.update(wait_time_scale=0)  # has no effect without the patch
    # Retry: moto calls time.sleep(interval) with the full interval (uninterruptible, so a stopped
    # execution sleeps it out too). A fake clock records the calls instead of sleeping them.
    sleeps: list[float] = []
    monkeypatch.setattr(retrier_decl, "time", SimpleNamespace(sleep=sleeps.append))
    retry_only = {"StartAt": "Flaky", "States": failing_parallel(WAIT_THEN_RETRY["States"]["Flaky"]["Retry"][0])}
    assert run(sfn, create_state_machine(sfn, retry_only))["status"] == "FAILED"
    assert sleeps == [10.0, 20.0]

    # Wait: still waiting after 0.3 s of a 30 s Wait, whatever the scale.
    execution_arn = start(sfn, create_state_machine(sfn, WAIT_THEN_RETRY))
    wait_until(lambda: "WaitStateEntered" in history_types(sfn, execution_arn))
    assert not wait_for_execution(execution_arn, 0.3)
    sfn.stop_execution(executionArn=execution_arn)
    assert wait_for_execution(execution_arn, 5)
    assert recorded_delays() == []


def test_patched_scale_zero_skips_waits_and_records_them(patched: None, sfn: Any) -> None:
    arn = create_state_machine(sfn, WAIT_THEN_RETRY)

    started = time.monotonic()
    described = run(sfn, arn)
    elapsed = time.monotonic() - started

    assert described["status"] == "FAILED"
    assert described["error"] == "Boom"
    assert elapsed < 1.0
    delays = recorded_delays(described["executionArn"])
    assert [(d.kind, d.state_name, d.requested_seconds) for d in delays] == [
        ("wait", "Pause", 30.0),
        ("retry", "Flaky", 10.0),
        ("retry", "Flaky", 20.0),
    ]
    assert all(d.execution_arn == described["executionArn"] for d in delays)
    assert all(d.slept_seconds < 0.05 for d in delays)
    assert recorded_delays("arn:aws:states:us-east-1:123456789012:execution:other:x") == []


def test_patched_retry_delay_includes_max_delay_and_jitter(patched: None, sfn: Any) -> None:
    capped = {"IntervalSeconds": 10, "BackoffRate": 3, "MaxDelaySeconds": 15, "MaxAttempts": 3}
    jittered = {"IntervalSeconds": 8, "BackoffRate": 2, "MaxAttempts": 3, "JitterStrategy": "FULL"}

    capped_run = run(sfn, create_state_machine(sfn, {"StartAt": "Flaky", "States": failing_parallel(capped)}))
    jitter_run = run(sfn, create_state_machine(sfn, {"StartAt": "Flaky", "States": failing_parallel(jittered)}))

    assert [d.requested_seconds for d in recorded_delays(capped_run["executionArn"])] == [10, 15, 15]
    jitter = [d.requested_seconds for d in recorded_delays(jitter_run["executionArn"])]
    assert len(jitter) == 3
    assert all(0 <= got <= cap for got, cap in zip(jitter, [8, 16, 32], strict=True))


def test_patched_scale_shortens_real_waits(patched: None, sfn: Any) -> None:
    state.update(wait_time_scale=0.02)
    definition = {"StartAt": "Pause", "States": {"Pause": {"Type": "Wait", "SecondsPath": "$.s", "End": True}}}

    described = run(sfn, create_state_machine(sfn, definition), {"s": 5})

    assert described["status"] == "SUCCEEDED"
    (delay,) = recorded_delays(described["executionArn"])
    assert delay.requested_seconds == 5
    assert 0.09 <= delay.slept_seconds < 0.6


@pytest.mark.parametrize(
    ("definition", "entered"),
    [
        ({"StartAt": "Pause", "States": {"Pause": {"Type": "Wait", "Seconds": 30, "End": True}}}, "wait"),
        (
            {"StartAt": "Flaky", "States": failing_parallel({"IntervalSeconds": 30, "MaxAttempts": 1})},
            "retry",
        ),
    ],
)
def test_patched_stopped_execution_ends_promptly_at_full_scale(
    patched: None, sfn: Any, monkeypatch: pytest.MonkeyPatch, definition: dict[str, Any], entered: str
) -> None:
    state.update(wait_time_scale=1.0)
    in_delay = threading.Event()
    real_delay = clock._delay

    def spy(env: Any, kind: Any, requested: float) -> None:
        in_delay.set()
        real_delay(env, kind, requested)

    monkeypatch.setattr(clock, "_delay", spy)
    execution_arn = start(sfn, create_state_machine(sfn, definition))
    assert in_delay.wait(5)

    stopped_at = time.monotonic()
    sfn.stop_execution(executionArn=execution_arn)

    assert wait_for_execution(execution_arn, 3)
    assert time.monotonic() - stopped_at < 1.0
    assert sfn.describe_execution(executionArn=execution_arn)["status"] == "ABORTED"
    (delay,) = recorded_delays(execution_arn)
    assert (delay.kind, delay.requested_seconds) == (entered, 30)
    assert delay.slept_seconds < 1.0


@pytest.fixture
def tokyo_time() -> Iterator[None]:
    previous = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Tokyo"  # UTC+9, no daylight saving
    time.tzset()
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = previous
        time.tzset()


def _in_a_minute() -> str:
    return (datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%SZ")


TIMESTAMP_WAIT = {"StartAt": "Until", "States": {"Until": {"Type": "Wait", "TimestampPath": "$.until", "End": True}}}


def test_unpatched_moto_5_2_5_wait_timestamp_uses_local_time(unpatched: None, tokyo_time: None, sfn: Any) -> None:
    # The Wait should last 60 s; moto compares the UTC timestamp with local time (9 h ahead): none.
    started = time.monotonic()
    described = run(sfn, create_state_machine(sfn, TIMESTAMP_WAIT), {"until": _in_a_minute()}, timeout=5)
    assert described["status"] == "SUCCEEDED"
    assert time.monotonic() - started < 5


def test_patched_wait_timestamp_is_compared_with_utc(patched: None, tokyo_time: None, sfn: Any) -> None:
    described = run(sfn, create_state_machine(sfn, TIMESTAMP_WAIT), {"until": _in_a_minute()})

    assert described["status"] == "SUCCEEDED"
    (delay,) = recorded_delays(described["executionArn"])
    assert (delay.kind, delay.state_name) == ("wait", "Until")
    assert 55 <= delay.requested_seconds <= 60


# ---------------------------------------------------------------------------------------------
# timestamps: like AWS's
# ---------------------------------------------------------------------------------------------

COMPARE_TIMES = {
    "StartAt": "Stamp",
    "States": {
        "Stamp": {
            "Type": "Pass",
            "Parameters": {"a.$": "$.a", "b.$": "$.b", "entered.$": "$$.State.EnteredTime"},
            "Next": "Compare",
        },
        "Compare": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.a", "TimestampLessThanPath": "$.b", "Next": "Earlier"}],
            "Default": "NotEarlier",
        },
        "Earlier": {"Type": "Pass", "Result": "earlier", "ResultPath": "$.verdict", "End": True},
        "NotEarlier": {"Type": "Pass", "Result": "not earlier", "ResultPath": "$.verdict", "End": True},
    },
}
# 08:00:00.250 UTC is earlier than 10:00 at UTC+1 (09:00 UTC): AWS takes the "Earlier" branch.
TIMES = {"a": "2026-11-23T08:00:00.250Z", "b": "2026-11-23T10:00:00+01:00"}


def test_unpatched_moto_5_2_5_timestamps_with_fractions_or_offsets_never_compare(unpatched: None, sfn: Any) -> None:
    output = json.loads(run(sfn, create_state_machine(sfn, COMPARE_TIMES), TIMES)["output"])

    assert output["verdict"] == "not earlier"
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$", output["entered"])


def test_patched_timestamps_compare_like_aws(patched: None, sfn: Any) -> None:
    output = json.loads(run(sfn, create_state_machine(sfn, COMPARE_TIMES), TIMES)["output"])

    assert output["verdict"] == "earlier"
    assert AWS_START_TIME.match(output["entered"]), output["entered"]


def test_parse_rfc3339() -> None:
    utc = datetime.UTC
    assert parse_rfc3339("2026-11-23T08:00:00Z") == datetime.datetime(2026, 11, 23, 8, tzinfo=utc)
    assert parse_rfc3339("2026-11-23T08:00:00.25Z") == datetime.datetime(2026, 11, 23, 8, 0, 0, 250000, tzinfo=utc)
    assert parse_rfc3339("2026-11-23T08:00:00.123456789-02:30") == datetime.datetime(
        2026, 11, 23, 10, 30, 0, 123456, tzinfo=utc
    )
    for bad in ("2026-11-23 08:00:00Z", "2026-11-23T08:00:00", "2026-02-30T08:00:00Z", "yesterday", 5, None):
        assert parse_rfc3339(bad) is None
