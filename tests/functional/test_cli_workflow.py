"""``run`` and ``serve`` act on the workflow ``--workflow`` names when the template holds several."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from idemflow import cli

from .test_shared_table import user_template


def test_run_chooses_a_workflow_by_its_path_and_says_how_when_none_is_chosen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = str(user_template(tmp_path))
    key = f"choose-{uuid.uuid4()}"
    base = ["run", "--template", template, "--wait-time-scale", "0", "--key", key, "--payload", '{"orderId": "o"}']

    assert cli.main(base) == 2
    error = capsys.readouterr().err.strip()
    assert "2 workflows ('Orders', 'Refunds')" in error and "--workflow PATH" in error and "\n" not in error

    assert cli.main([*base, "--workflow", "Refunds", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["stateMachineArn"].endswith("Refunds-IdempotentStateMachine")
    assert document["summary"]["sideEffectInvocations"] == 1
