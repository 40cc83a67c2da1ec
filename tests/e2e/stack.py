"""The deployed stack the end-to-end tests run against, and how they run an execution on it.

Skipped unless IDEMFLOW_STACK names a deployed stack and AWS credentials are available:
    IDEMFLOW_STACK=idempotent-workflow AWS_PROFILE=... .venv/bin/pytest -m e2e
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import boto3
import pytest

from tests.polling import wait_until

STACK = os.environ.get("IDEMFLOW_STACK", "")


def _credentials_available() -> bool:
    try:
        return boto3.session.Session().get_credentials() is not None
    except Exception:  # any failure means: no usable credentials
        return False


def skip_without_a_stack() -> None:
    """Skip the calling module unless there is a stack to run against."""
    if not STACK or not _credentials_available():
        pytest.skip("set IDEMFLOW_STACK and AWS credentials to run the end-to-end tests", allow_module_level=True)


def stack_outputs() -> dict[str, str]:
    stack = boto3.client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def run(sfn: Any, arn: str, body: dict[str, Any], deadline: float = 120) -> dict[str, Any]:
    """Start an execution and poll it (within ``deadline`` seconds) until it is no longer running."""
    execution = sfn.start_execution(stateMachineArn=arn, name=str(uuid.uuid4()), input=json.dumps(body))

    def ended() -> dict[str, Any] | None:
        described: dict[str, Any] = sfn.describe_execution(executionArn=execution["executionArn"])
        return None if described["status"] == "RUNNING" else described

    return wait_until(ended, deadline, what=f"{execution['executionArn']} to end", interval=1)
