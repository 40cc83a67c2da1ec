"""The cost tables of the HTTP door (docs/protocol.md), Express and Standard, are what a request costs: counted
on the embedded engine."""

from __future__ import annotations

import re

from bench.costs import HTTP_DOOR, HTTP_DOOR_STANDARD, measure_http, measure_http_standard
from idemflow.engine import Engine
from tests.paths import PROTOCOL_DOC


def test_the_documented_http_cost_table_is_measured() -> None:
    page = PROTOCOL_DOC.read_text()
    documented = re.findall(r"^\| ([a-zA-Z][^|]+?) \| (\d{3}) \| (\d+) \| (\d+) \| (\d+) \|$", page, re.MULTILINE)

    with Engine(wait_time_scale=0, parameter_overrides=HTTP_DOOR) as door:
        measured = measure_http(door)

    assert documented == [
        (c.request, str(c.status), str(c.api_requests), str(c.step_functions_requests), str(c.lambdas))
        for c in measured
    ]


def test_the_documented_standard_http_cost_table_is_measured() -> None:
    page = PROTOCOL_DOC.read_text()
    documented = re.findall(
        r"^\| ([a-zA-Z][^|]+?) \| (\d{3}) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", page, re.MULTILINE
    )

    with Engine(wait_time_scale=0, parameter_overrides=HTTP_DOOR_STANDARD) as door:
        measured = measure_http_standard(door)

    assert documented == [
        (
            c.request,
            str(c.status),
            str(c.api_requests),
            str(c.step_functions_requests),
            str(c.transitions),
            str(c.lambdas),
        )
        for c in measured
    ]
