"""The README speaks the contract's words and shows the current definition."""

from __future__ import annotations

import re

from idemflow.contract import RecordStatus, WorkflowError
from idemflow.diagram import embedded_block, readme_block
from idemflow.template import load_template
from tests.paths import DEFINITION_PATH, PROJECT_ROOT, README_PATH

README = README_PATH.read_text()


def test_diagram_is_generated_from_the_current_definition() -> None:
    assert embedded_block(README) == readme_block(), "run `idemflow diagram --write` and commit README.md"


def test_every_state_appears_in_the_diagram() -> None:
    import json

    states = json.loads(DEFINITION_PATH.read_text())["States"]
    block = embedded_block(README) or ""
    assert all(re.search(rf"\b{name}\b", block) for name in states)


def test_every_error_name_and_status_is_documented() -> None:
    for name in [*WorkflowError, *RecordStatus]:
        assert f"`{name.value}`" in README, name


def test_every_template_parameter_is_documented() -> None:
    for name in load_template()["Parameters"]:
        assert f"`{name}`" in README, name


def test_the_two_setup_commands_exist_in_the_makefile_and_ci_runs_the_test_one() -> None:
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    assert "make demo" in README and "make test" in README
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (PROJECT_ROOT / ".ci" / "run").read_text()


def test_what_make_test_needs_beyond_python_is_said_and_installed() -> None:
    # make test needs Node and npm (asl-validator); make bench runs the suite, so it installs asl-validator
    # too.
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert "Node.js" in readme and "npm" in readme and "asl-validator" in readme
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    targets = {line.split(":")[0]: line for line in makefile.splitlines() if re.match(r"^[a-z]+:", line)}
    assert "$(NODE_STAMP)" in targets["test"] and "$(NODE_STAMP)" in targets["bench"]


def test_the_side_effect_contract_names_real_fault_helpers_and_contract_errors() -> None:
    from idemflow import contract
    from idemflow.engine.faults import Faults

    section = README.split("## The side-effect contract", 1)[1].split("\n## ", 1)[0]
    helpers = set(re.findall(r"`(\w+)\((?:fn|\")", section))
    assert helpers == {"fail_next", "timeout_next", "crash_next", "lose_response_next", "before_dynamodb"}
    assert all(callable(getattr(Faults, name, None)) for name in helpers)
    for name in (
        *contract.SIDE_EFFECT_REQUEST_FIELDS,
        *contract.LAMBDA_TRANSIENT_ERRORS,
        *contract.OUTCOME_UNKNOWN_ERRORS,
    ):
        assert f"`{name}`" in section or f"{name}`" in section, name
