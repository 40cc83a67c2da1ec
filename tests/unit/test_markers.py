"""pytest's markers are the test folders: one per folder, each added by the root conftest.py."""

from __future__ import annotations

import tomllib

import pytest

from conftest import ROOT, MarkerError, folder_marker, marked_folders


def declared_markers() -> dict[str, str]:
    """pyproject.toml's markers, by name, with their descriptions."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    lines: list[str] = config["tool"]["pytest"]["ini_options"]["markers"]
    return {name.strip(): text.strip() for name, _, text in (line.partition(":") for line in lines)}


def test_every_test_folder_has_its_marker_and_every_marker_its_folder() -> None:
    folders = marked_folders()

    assert set(declared_markers()) == set(folders)
    assert {"unit", "functional", "conformance", "charge", "e2e", "explore"} <= set(folders)
    for name, folder in folders.items():
        assert any(folder.rglob("test_*.py")), f"{folder.relative_to(ROOT)} holds no test module"
        assert declared_markers()[name].startswith(f"{folder.relative_to(ROOT)},"), "a marker names its folder"


def test_each_test_of_this_run_carries_its_folder_marker_and_no_other(request: pytest.FixtureRequest) -> None:
    # The run's whole collection (each xdist worker collects every test): a run of the whole suite checks
    # every test, and `pytest -m conformance` then selects exactly tests/conformance.
    folders = set(marked_folders())
    assert request.node.get_closest_marker("unit") is not None, "the hook marked this very test"
    for item in request.session.items:
        carried = {m.name for m in item.iter_markers()} & folders
        assert carried == {folder_marker(item.path)}, item.nodeid


def test_a_test_outside_the_test_folders_is_refused() -> None:
    with pytest.raises(MarkerError, match="not in a test folder"):
        folder_marker(ROOT / "idemflow" / "test_stray.py")


def test_a_test_marked_with_another_folders_marker_is_refused() -> None:
    module = ROOT / "tests" / "unit" / "test_x.py"

    assert folder_marker(module, {"unit", "parametrize"}) == "unit"
    with pytest.raises(MarkerError, match=r"tests/unit/test_x.py is marked functional but lives in tests/unit"):
        folder_marker(module, {"functional", "parametrize"})


def test_an_examples_tests_take_the_examples_name() -> None:
    assert folder_marker(ROOT / "examples" / "outbox" / "tests" / "test_y.py") == "outbox"
