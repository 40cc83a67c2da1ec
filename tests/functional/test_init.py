"""``idemflow init``: from nothing to a green test of one's own side effect in two commands. What it writes is
checked here; its printed steps are run as printed, from a clean venv, in ``test_wheel.py``, and a project
nesting the published workflow runs its own test here, with pytest, in a process of its own."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from idemflow import cli
from idemflow.contract import SIDE_EFFECT_SUBSTITUTION
from idemflow.engine.stack import resolve_stack
from idemflow.template import load_template, published_as
from idemflow.workflow import packaged_workflow
from tests.cfn_lint import cfn_lint
from tests.paths import PROJECT_ROOT
from tests.unit.test_definition_rules import _asl_validator

pytestmark = pytest.mark.functional


def test_init_makes_a_project_around_the_function_nesting_a_copy_of_the_workflow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    project = tmp_path / "welcome"

    assert cli.main(["init", str(project), "--function-name", "SendWelcomeEmail"]) == 0
    printed = capsys.readouterr().out
    assert "python -m pytest" in printed
    # The next steps name the commands of the environment init ran in, as a shell in this folder finds them.
    python, command = (Path(shlex.split(step)[0]) for step in printed.split("next:\n", 1)[1].splitlines())
    assert python.absolute() == Path(sys.executable).absolute()
    assert command.absolute() == Path(sys.executable).parent.absolute() / "idemflow" and command.exists()
    # Its own test runs, with the printed commands, in tests/functional/test_wheel.py: from a clean venv.
    # Nested from its own copy of the packaged workflow (no path to a checkout), the new function wrapped.
    template = load_template(project / "template.yaml")
    app = template["Resources"]["IdempotentWorkflow"]["Properties"]
    assert app["Location"] == "workflow/template.yaml"
    copy = project / "workflow"
    for shipped in ("statemachine/idempotent.asl.json", "statemachine/intake.asl.json", "functions/clock/app.py"):
        assert (copy / shipped).read_bytes() == (packaged_workflow() / shipped).read_bytes(), shipped
        assert not (copy / shipped).is_symlink()
    assert not list(copy.rglob("__pycache__"))
    # Nothing of the example side effect: its code, its events, its layer, its resources, its mutation notes.
    written = {str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()}
    example = [
        *(PROJECT_ROOT / "functions" / "charge").rglob("*.py"),
        *(PROJECT_ROOT / "events").iterdir(),
        *(PROJECT_ROOT / "layers").rglob("*.txt"),
        PROJECT_ROOT / "statemachine" / "mutants-equivalent.json",
        PROJECT_ROOT / "statemachine" / "MockConfigFile.json",
    ]
    example_bytes = {p.read_bytes() for p in example} - {b""}  # charge's empty __init__.py is anyone's
    assert [w for w in written if (project / w).read_bytes() in example_bytes] == []
    example_names = {p.name for p in example if p.suffix == ".json"} - {"event.json"}  # the user's own is event.json
    assert [w for w in written if Path(w).name in example_names] == []
    assert [
        w for w in written if w.startswith(("workflow/events/", "workflow/functions/charge/", "workflow/layers/"))
    ] == []
    # "payment data" in a log parameter's description is about any payload; the example's names are not.
    example_words = re.compile(r"\b(charge|ledger|paymentprovider|payments|amount|currency)", re.IGNORECASE)
    assert [(w, example_words.findall((project / w).read_text())) for w in sorted(written)] == [
        (w, []) for w in sorted(written)
    ]
    nested = load_template(copy / "template.yaml")
    assert not {"ChargeFunction", "LedgerTable", "PowertoolsLayer"} & set(nested["Resources"])
    assert nested["Outputs"].keys() >= {"StateMachineArn", "IdempotencyTableName", "WorkflowScope"}
    assert json.loads((project / "events" / "event.json").read_text()) == {
        "idempotencyKey": "example-1",
        "payload": {"example": True},
    }
    assert app["Parameters"][SIDE_EFFECT_SUBSTITUTION] == {"Fn::GetAtt": ["SendWelcomeEmailFunction", "Arn"]}
    stack = resolve_stack(project / "template.yaml")
    assert stack.side_effect_function().logical_id == "SendWelcomeEmailFunction"
    assert stack.workflow().parameters["WorkflowScope"] == "sendwelcomeemail"
    assert json.loads((project / "events" / "event.json").read_text())["idempotencyKey"]
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    assert cfn_lint((project / "template.yaml").read_text(), "us-east-1", pytestconfig.cache) == []
    assert cfn_lint((copy / "template.yaml").read_text(), "us-east-1", pytestconfig.cache) == []
    # Its own test passes on what init wrote, the trimmed copy of the workflow nested.
    assert_own_test_passes(project)


def a_users_shell() -> dict[str, str]:
    """The environment a user's commands run in: nothing of pytest's or of AWS's."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "AWS_"))}


def assert_own_test_passes(project: Path, *only: str) -> None:
    """The project's tests (or ``only`` these files of it), run as its user runs them: pytest in the project's
    folder, in a process of its own: a first run and its duplicate, a rejected request, and the side effect's
    write refused once its role's grant is removed from a copy of the template."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *only],
        cwd=project,
        env=a_users_shell(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    passed = f"{2 if only else 3} passed"
    assert result.returncode == 0 and passed in result.stdout, result.stdout + result.stderr


def test_init_makes_a_project_around_a_state_machine_that_the_printed_steps_and_the_demo_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    project = tmp_path / "signups"

    assert cli.main(["init", str(project), "--state-machine-name", "RecordSignup"]) == 0
    printed = capsys.readouterr().out

    # The nested workflow runs the project's own state machine, whose role may write the project's table only.
    template = load_template(project / "template.yaml")
    app = template["Resources"]["IdempotentWorkflow"]["Properties"]
    assert app["Location"] == "workflow/template.yaml"
    assert app["Parameters"]["SideEffectStateMachineArn"] == {"Ref": "RecordSignupStateMachine"}
    assert SIDE_EFFECT_SUBSTITUTION not in app["Parameters"]
    child = template["Resources"]["RecordSignupStateMachine"]["Properties"]
    assert child["DefinitionUri"] == "statemachine/side_effect.asl.json"
    assert child["Policies"] == [
        {
            "Statement": [
                {
                    "Sid": "RecordSignupWrites",
                    "Effect": "Allow",
                    "Action": "dynamodb:PutItem",
                    "Resource": {"Fn::GetAtt": ["RecordSignupTable", "Arn"]},
                }
            ]
        }
    ]
    assert not (project / "src").exists()  # no function: the side effect is the state machine
    stack = resolve_stack(project / "template.yaml")
    assert stack.side_effect_is_state_machine()
    assert stack.side_effect_state_machine().logical_id == "RecordSignupStateMachine"
    assert stack.workflow().parameters["WorkflowScope"] == "recordsignup"
    # The copy needs the state machine's ARN and no function's; nothing of the example in what init wrote.
    nested = load_template(project / "workflow" / "template.yaml")
    assert "Default" not in nested["Parameters"]["SideEffectStateMachineArn"]
    assert nested["Parameters"]["SideEffectFunctionArn"]["Default"] == ""
    example_words = re.compile(r"\b(charge|ledger|paymentprovider|payments|amount|currency)", re.IGNORECASE)
    written = sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file())
    assert [(w, example_words.findall((project / w).read_text())) for w in written] == [(w, []) for w in written]
    result = _asl_validator(stack.side_effect_state_machine().definition, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    assert cfn_lint((project / "template.yaml").read_text(), "us-east-1", pytestconfig.cache) == []
    assert cfn_lint((project / "workflow" / "template.yaml").read_text(), "us-east-1", pytestconfig.cache) == []

    # Every step init prints, as printed: its tests pass, and run counts the child's executions for the key.
    steps = [line.split("#", 1)[0].strip() for line in printed.split("next:\n", 1)[1].splitlines()]
    steps = [step for step in steps if " pip install " not in step]  # this venv has pytest
    assert [shlex.split(step)[1:3] for step in steps] == [["-m", "pytest"], ["run", "--template"]], printed
    tested = subprocess.run(shlex.split(steps[0]), env=a_users_shell(), capture_output=True, text=True, timeout=300)
    assert tested.returncode == 0 and "3 passed" in tested.stdout, tested.stdout + tested.stderr
    # idemflow's own command, in this process (its script runs cli.main with the same arguments).
    assert cli.main(shlex.split(steps[1])[1:]) == 0
    summary = capsys.readouterr().out.splitlines()[-1]
    assert summary.startswith("summary: 1 SUCCEEDED; 0 replayed; side-effect invocations for the key: 1 (state machine")
    assert summary.endswith(":stateMachine:idemflow-RecordSignupStateMachine: its executions)"), summary

    # The demo takes the project's template: the workflow's five steps, the child's executions counted.
    assert cli.main(["demo", "--template", str(project / "template.yaml")]) == 0
    demo = capsys.readouterr().out
    assert [line.split("]", 1)[0] + "]" for line in demo.splitlines() if line.startswith("[")] == [
        f"[{n}/5]" for n in range(1, 6)
    ]
    assert "side effect state machine arn:aws:states:" in demo
    assert "replayed=true, same result, state machine not started: side-effect executions still 1" in demo
    assert "status:         COMPLETED" in demo and "[FAILED]" not in demo
    assert demo.rstrip().endswith("demo passed: 5 of 5 expectations met")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--function-name", "send email"], "--function-name 'send email': expected a capitalised name"),
        (["--state-machine-name", "record"], "--state-machine-name 'record': expected a capitalised name"),
        (["--function-name", "Send", "--scope", "has space"], "--scope"),
        (
            ["--function-name", "Send", "--state-machine-name", "Record"],
            "argument --state-machine-name: not allowed with argument --function-name",
        ),
        ([], "one of the arguments --function-name --state-machine-name is required"),
    ],
)
def test_init_rejects_names_the_template_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert cli.main(["init", str(tmp_path / "p"), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize(
    ("argv", "scope"),
    [
        (["--function-name", "Send", "--scope", "yes"], "yes"),
        (["--function-name", "Send", "--scope", "0755"], "0755"),
        (["--function-name", "Send", "--scope", "null"], "null"),
        (["--function-name", "Send", "--scope", "1.10"], "1.10"),
        (["--function-name", "Yes"], "yes"),
    ],
)
def test_the_scope_is_written_so_that_it_reads_back_as_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], scope: str
) -> None:
    # Unquoted, YAML 1.1 (CloudFormation's reading too) turns yes into true, 0755 into 493, null into nothing.
    assert cli.main(["init", str(tmp_path / "p"), *argv]) == 0
    assert resolve_stack(tmp_path / "p" / "template.yaml").workflow().parameters["WorkflowScope"] == scope


def test_the_next_commands_printed_survive_a_directory_with_a_space(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "my project"

    assert cli.main(["init", str(project), "--function-name", "Send"]) == 0

    commands = [line.split("#")[0].split() for line in capsys.readouterr().out.splitlines() if "python -m" in line]
    assert [shlex.split(" ".join(c))[-1] for c in commands] == [str(project)]


def test_init_never_writes_into_a_directory_that_has_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mine.txt").write_text("keep me")

    assert cli.main(["init", str(tmp_path), "--function-name", "Send"]) == 2
    assert "not an empty directory" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]


APPLICATION_ID = "arn:aws:serverlessrepo:eu-west-1:123456789012:applications/idempotent-workflow"


def test_init_can_nest_the_published_workflow_by_application_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    project = tmp_path / "welcome"

    assert cli.main(["init", str(project), "--function-name", "Send", "--application-id", APPLICATION_ID]) == 0

    assert APPLICATION_ID in capsys.readouterr().out
    assert not (project / "workflow").exists()  # nothing copied: the repository's application is nested
    location = load_template(project / "template.yaml")["Resources"]["IdempotentWorkflow"]["Properties"]["Location"]
    assert location == {"ApplicationId": APPLICATION_ID, "SemanticVersion": published_as()[1]}
    # Locally, the engine nests the installed package's copy, around the new function.
    stack = resolve_stack(project / "template.yaml")
    assert stack.side_effect_function().logical_id == "SendFunction"
    assert stack.workflow().parameters["WorkflowScope"] == "send"
    assert_own_test_passes(project, "tests/test_side_effect.py")  # its permissions' test is the copy's
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    assert cfn_lint((project / "template.yaml").read_text(), "eu-west-1", pytestconfig.cache) == []


def test_init_refuses_another_application_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = APPLICATION_ID.replace("idempotent-workflow", "someone-elses-app")

    assert cli.main(["init", str(tmp_path / "p"), "--function-name", "Send", "--application-id", other]) == 2

    assert "application 'someone-elses-app' is not this workflow" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()
