"""The cost table of the queue, topic, event and stream doors (docs/doors.md) is what a delivery costs: counted on the
embedded engine from the intake's and the workflow's execution histories."""

from __future__ import annotations

import re

from bench.costs import DOORS, OUTBOX_DOOR, OUTBOX_TEMPLATE, measure_doors, measure_table_stream
from idemflow.engine import Engine
from tests.paths import DOORS_DOC, README_PATH

ROW = re.compile(
    r"^\| ((?:queue message|topic message|event|stream record|table item), [^|]+?) \| ([A-Z_]+)"
    r" \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$",
    re.MULTILINE,
)


def test_the_documented_doors_cost_table_is_measured() -> None:
    documented = ROW.findall(DOORS_DOC.read_text())

    with Engine(wait_time_scale=0, parameter_overrides=DOORS) as doors:
        measured = measure_doors(doors)
    with Engine(OUTBOX_TEMPLATE, wait_time_scale=0, parameter_overrides=OUTBOX_DOOR) as outbox:
        measured += measure_table_stream(outbox)

    assert documented == [
        (
            c.delivery,
            c.outcome,
            str(c.intake_transitions),
            str(c.workflow_transitions),
            str(c.lambdas),
            str(c.dead_letters),
        )
        for c in measured
    ]


README_ROW = re.compile(
    r"^\| (queue message|topic message|event|stream record|table item)[^|]* \| (\d+) \+ (\d+) transitions, (\d+) Lambda"
    r" invocations \|(?: (\d+) \+ (\d+) transitions, (\d+) Lambda invocations)? \|$",
    re.MULTILINE,
)


def test_the_readmes_cost_summary_is_the_measured_table() -> None:
    # The README's rows are the doors table's first-of-its-key and key-completed rows, as measured there.
    doors = {row[0]: row for row in ROW.findall(DOORS_DOC.read_text())}
    summary = README_ROW.findall(README_PATH.read_text())
    assert [row[0] for row in summary] == ["queue message", "topic message", "event", "stream record", "table item"]
    for kind, *numbers in summary:
        first = doors[f"{kind}, first of its key"]
        assert numbers[:3] == [first[2], first[3], first[4]], kind
        completed = doors.get(f"{kind}, its key completed")
        assert numbers[3:] == (["", "", ""] if completed is None else [completed[2], completed[3], completed[4]]), kind
