"""What the interleaving checker explores is declared by the project, not named in the package."""

from __future__ import annotations

from pathlib import Path

import pytest

from idemflow.explore import TargetsError, load_targets
from idemflow.explore.__main__ import main

pytestmark = pytest.mark.unit


def test_the_projects_targets_are_read_from_its_pyproject() -> None:
    targets = load_targets(Path.cwd())  # the tests run from the project's root

    assert next(iter(targets)) == "project"
    for target in targets.values():
        assert target.template.is_file() and target.payload  # each with its sample event's payload


def test_a_project_that_declares_no_target_is_told_what_to_add(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')

    with pytest.raises(TargetsError, match=r"no \[tool.idemflow.explore\] targets .*targets = \{ project"):
        load_targets(tmp_path)


def test_an_undeclared_target_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--target", "nowhere", "--quick"])

    assert exited.value.code == 2
    assert "--target nowhere: not declared (declared: project, outbox, child)" in capsys.readouterr().err
