"""The changes' tests: "unpatched" is moto with no change installed (``registry.remove()``), "patched" with every
change (``registry.apply()``); whatever a test does to them, the next finds them as they were."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from idemflow.engine import registry, state
from idemflow.engine.services.stepfunctions import retention
from idemflow.engine.services.stepfunctions.clock import clear_recorded_delays
from tests import sessions
from tests.unit.changes.machines import MOTO_CONFIG, REGION


@pytest.fixture(autouse=True)
def _restore_patch_state() -> Iterator[None]:
    """Whatever a test does to the changes, the next test finds them as they were."""
    left_out = registry.left_out()
    scale = state.current().wait_time_scale
    clear_recorded_delays()
    yield
    if left_out is None:
        registry.remove()
    else:
        registry.apply(without=left_out, hooks_too=True)
    state.update(wait_time_scale=scale, retention=None)
    retention.forget_all()
    clear_recorded_delays()


@pytest.fixture(autouse=True)
def _quiet_interpreter() -> Iterator[None]:
    # moto's interpreter logs every failing state at ERROR level with the repr of its whole tree.
    logger = logging.getLogger("moto.stepfunctions.parser")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(level)


@pytest.fixture
def patched() -> None:
    registry.apply()
    state.update(wait_time_scale=0)


@pytest.fixture
def unpatched() -> None:
    registry.remove()


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws(config=MOTO_CONFIG):
        yield


@pytest.fixture
def sfn(aws: None) -> Any:
    return sessions.client("stepfunctions", region_name=REGION)


@pytest.fixture
def ddb(aws: None) -> Any:
    return sessions.client("dynamodb", region_name=REGION)
