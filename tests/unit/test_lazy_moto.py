"""moto's Batch (and the EC2 models it imports) is not loaded with the engine, yet works when asked for.

Each check runs in a fresh interpreter: what a process imports is the point."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_engine_imports_without_moto_batch_and_ec2() -> None:
    loaded = run(
        """
        import sys
        import idemflow.engine.engine
        from moto.stepfunctions.parser.models import stepfunctions_parser_backends
        print(sorted(m for m in ("moto.batch.models", "moto.ec2", "moto.ec2.models") if m in sys.modules))
        """
    )
    assert loaded == "[]"


def test_moto_batch_still_works_when_asked_for() -> None:
    answered = run(
        """
        import boto3
        import idemflow.engine.engine
        from moto import mock_aws
        from moto.backends import get_backend
        from moto.batch.utils import JobStatus

        assert JobStatus.SUCCEEDED.value == "SUCCEEDED"
        with mock_aws():
            batch = boto3.client("batch", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
            print(batch.describe_compute_environments()["computeEnvironments"], type(get_backend("batch")).__name__)
        """
    )
    assert answered == "[] BackendDict"
