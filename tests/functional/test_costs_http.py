"""The cost tables of the HTTP door (docs/protocol.md), Express and Standard, are what a request costs: counted
on the embedded engine."""

from __future__ import annotations

import re

from bench.costs import HTTP_DOOR, HTTP_DOOR_STANDARD, measure_http, measure_http_standard
from idemflow.engine import Engine
from tests.paths import PROTOCOL_DOC, README_PATH


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


def test_the_readmes_http_row_is_the_measured_standard_table() -> None:
    # The README's row: no intake, then the first request's and the repeated request's transitions and Lambda
    # invocations, as the Standard table (checked against the measurement above) has them.
    table = re.findall(
        r"^\| ([a-zA-Z][^|]+?) \| (\d{3}) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$",
        PROTOCOL_DOC.read_text(),
        re.MULTILINE,
    )
    rows = {row[0]: row for row in table}
    (row,) = re.findall(
        r"^\| HTTP, Standard workflow[^|]* \| 0 \+ (\d+) transitions, (\d+) Lambda invocations"
        r" \| 0 \+ (\d+) transitions, (\d+) Lambda invocations \|$",
        README_PATH.read_text(),
        re.MULTILINE,
    )
    first, again = rows["first request"], rows["the same request again"]
    assert list(row) == [first[4], first[5], again[4], again[5]]
