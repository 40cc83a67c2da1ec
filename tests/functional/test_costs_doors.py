"""The cost table of the queue, topic, event and stream doors (docs/doors.md) is what a delivery costs: counted on the
embedded engine from the intake's and the workflow's execution histories."""

from __future__ import annotations

import re

from bench.costs import DOORS, OUTBOX_DOOR, OUTBOX_TEMPLATE, measure_doors, measure_table_stream
from idemflow.engine import Engine
from tests.paths import DOORS_DOC

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
