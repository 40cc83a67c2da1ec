"""The cost table of docs/protocol.md is what the workflow costs: counted from execution histories, path by path."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from bench.costs import measure
from idemflow.engine import Engine
from tests.paths import PROTOCOL_DOC


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(wait_time_scale=0) as running:
        yield running


def test_the_documented_cost_table_is_measured(engine: Engine) -> None:
    page = PROTOCOL_DOC.read_text()
    documented = {
        path: tuple(int(n) for n in figures.split(" / "))
        for path, figures in re.findall(r"^\| ([a-z][^|]+?) \| \**(\d+ / \d+ / \d+)\** \|", page, re.MULTILINE)
    }

    measured = {c.path: (c.transitions, c.dynamodb, c.lambdas) for c in measure(engine)}

    assert documented == measured


def test_a_duplicate_takes_fewer_transitions_than_the_aws_samples_pattern(engine: Engine) -> None:
    # aws-samples idempotent-workflow-sam: 6 transitions, 2 DynamoDB requests, 1 Lambda invocation.
    duplicate = next(c for c in measure(engine) if c.path == "duplicate of a completed run")

    assert (duplicate.transitions, duplicate.dynamodb, duplicate.lambdas) <= (6, 2, 1)
    assert duplicate.transitions < 6 and duplicate.lambdas == 0 and duplicate.outcome == "SUCCEEDED"
