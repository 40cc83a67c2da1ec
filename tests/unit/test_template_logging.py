"""The state machine's logs: a level and whether payloads are logged are parameters, payloads off by default
(Step Functions developer guide, "Logging using CloudWatch Logs": LoggingConfiguration's level and
includeExecutionData)."""

from __future__ import annotations

from typing import Any

import pytest

from idemflow.contract import STATE_MACHINE_LOGICAL_ID
from idemflow.engine.catalog import resource_types
from idemflow.template import Resolver, load_template
from tests.paths import TEMPLATE_PATH


def logging_of(overrides: dict[str, str]) -> dict[str, Any]:
    """The resolved Logging property of the workflow's state machine for these parameter overrides."""
    template = load_template(TEMPLATE_PATH)
    params = {name: str(spec.get("Default", "")) for name, spec in template["Parameters"].items()}
    params.update(overrides)
    resolver = Resolver(template, "s", "us-east-1", "123456789012", params, TEMPLATE_PATH, (), resource_types())
    props = resolver.properties(STATE_MACHINE_LOGICAL_ID)
    logging: dict[str, Any] = resolver.value(props["Logging"], "Logging")
    return logging


def test_payloads_are_not_logged_by_default_and_errors_are() -> None:
    logging = logging_of({})

    assert (logging["Level"], logging["IncludeExecutionData"]) == ("ERROR", False)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"ExecutionLogLevel": "ALL", "ExecutionLogIncludesData": "true"}, ("ALL", True)),
        ({"ExecutionLogLevel": "OFF"}, ("OFF", False)),
    ],
)
def test_the_level_and_the_payloads_are_parameters(overrides: dict[str, str], expected: tuple[str, bool]) -> None:
    logging = logging_of(overrides)

    assert (logging["Level"], logging["IncludeExecutionData"]) == expected
