"""moto's Batch (and the EC2 models it imports) is not loaded with the engine, yet works when asked for.

Both are checked in one fresh interpreter (what a process imports is the point): first what the engine's import
loaded, then Batch asked for in the same process, after the engine held it back."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

IN_A_NEW_INTERPRETER = """
import json
import sys

import boto3
import idemflow.engine.engine
from moto.stepfunctions.parser.models import stepfunctions_parser_backends

loaded = sorted(m for m in ("moto.batch.models", "moto.ec2", "moto.ec2.models") if m in sys.modules)

from moto import mock_aws
from moto.backends import get_backend
from moto.batch.utils import JobStatus

with mock_aws():
    batch = boto3.client("batch", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    environments = batch.describe_compute_environments()["computeEnvironments"]
print(json.dumps({
    "loaded": loaded,
    "status": JobStatus.SUCCEEDED.value,
    "environments": environments,
    "backend": type(get_backend("batch")).__name__,
}))
"""


@pytest.fixture(scope="module")
def answer() -> dict[str, Any]:
    result = subprocess.run([sys.executable, "-c", IN_A_NEW_INTERPRETER], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    answered: dict[str, Any] = json.loads(result.stdout)
    return answered


def test_the_engine_imports_without_moto_batch_and_ec2(answer: dict[str, Any]) -> None:
    assert answer["loaded"] == []


def test_moto_batch_still_works_when_asked_for(answer: dict[str, Any]) -> None:
    assert answer["status"] == "SUCCEEDED"
    assert (answer["environments"], answer["backend"]) == ([], "BackendDict")
