"""``--stack-name`` of a project that nests the workflow (``idemflow init``'s layout): the workflow's outputs
are its nested stack's, which the parent lists as an ``AWS::CloudFormation::Stack`` resource. ``record``
follows into the one nested stack that has the output it needs, and names the nested stacks when it cannot
choose (``test_stack_outputs.py``: a stack holding the workflow itself)."""

from __future__ import annotations

import uuid
from pathlib import Path

import boto3
import pytest

from idemflow import cli
from idemflow.engine import Engine

from .test_shared_table import user_template

pytestmark = pytest.mark.functional


def test_record_by_the_parent_stack_reads_the_scope_of_its_nested_workflow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "welcome"
    assert cli.main(["init", str(project), "--function-name", "SendWelcomeEmail"]) == 0
    key = f"nested-{uuid.uuid4()}"
    with Engine(project / "template.yaml", wait_time_scale=0) as engine:
        parent = engine.stack.name if engine.stack is not None else ""
        where = ["--endpoint-url", engine.endpoint_url, "--stack-name", parent, "--key", key]
        cfn = boto3.client(
            "cloudformation", endpoint_url=engine.endpoint_url, region_name=engine.region,
            aws_access_key_id="local", aws_secret_access_key="local",
        )  # fmt: skip
        (described,) = cfn.describe_stacks(StackName=parent)["Stacks"]
        assert "WorkflowScope" not in {o["OutputKey"] for o in described["Outputs"]}  # the nested stack's only
        assert cli.main(["start", *where, "--wait"]) == 0
        capsys.readouterr()

        assert cli.main(["record", *where]) == 0

    printed = capsys.readouterr().out
    assert "(sendwelcomeemail#" in printed and "COMPLETED" in printed


def test_record_by_a_parent_of_two_workflows_names_its_nested_stacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Engine(user_template(tmp_path), wait_time_scale=0, workflow="Orders") as engine:
        parent = engine.stack.name if engine.stack is not None else ""
        where = ["--endpoint-url", engine.endpoint_url, "--stack-name", parent, "--key", "k"]

        assert cli.main(["record", *where]) == 1

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"stack '{parent}' has no output IdempotencyTableName" in err
    assert f"{parent}-Orders (Orders), {parent}-Refunds (Refunds)" in err and "--stack-name" in err
