"""The README's "Layout" section lists what is there: every top-level folder and every module of idemflow."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from tests.paths import PROJECT_ROOT, README_PATH

# An entry: "- `path`: what it is", or "- `a`, `b`: what they are"; a folder ends with "/".
ENTRY = re.compile(r"^- ((?:`[^`]+`(?:, )?)+):", re.M)


def layout_section(readme: str) -> str:
    start = readme.index("\n## Layout\n")
    end = readme.find("\n## ", start + 1)
    return readme[start : end if end >= 0 else len(readme)]


def listed_paths(readme: str) -> list[str]:
    return [path for entry in ENTRY.findall(layout_section(readme)) for path in re.findall(r"`([^`]+)`", entry)]


def ignored(name: str) -> bool:
    """Hidden, or matched by a .gitignore pattern that applies at the top level (a build or cache)."""
    patterns = [line.strip().rstrip("/") for line in (PROJECT_ROOT / ".gitignore").read_text().splitlines()]
    return name.startswith(".") or any(p and "/" not in p and fnmatch.fnmatch(name, p) for p in patterns)


def entry(path: Path) -> str:
    relative = path.relative_to(PROJECT_ROOT).as_posix()
    return f"{relative}/" if path.is_dir() else relative


def expected_entries() -> set[str]:
    """The top level's folders (its files come and go: reports, local settings), and idemflow's modules and
    subpackages."""
    top = {entry(p) for p in PROJECT_ROOT.iterdir() if p.is_dir() and not ignored(p.name)}
    package = PROJECT_ROOT / "idemflow"
    modules = {entry(p) for p in package.glob("*.py")}
    subpackages = {entry(p.parent) for p in package.glob("*/__init__.py")}
    return top | modules | subpackages


def test_every_listed_path_exists() -> None:
    listed = listed_paths(README_PATH.read_text())

    assert len(listed) == len(set(listed)), "a path listed twice"
    for path in listed:
        found = PROJECT_ROOT / path
        assert found.is_dir() if path.endswith("/") else found.is_file(), f"README Layout lists {path}: not there"


def test_every_top_level_folder_and_idemflow_module_is_listed() -> None:
    missing = expected_entries() - set(listed_paths(README_PATH.read_text()))

    assert not missing, f"add to the README's Layout section: {sorted(missing)}"


def test_the_entries_are_read_from_the_section_only() -> None:
    readme = "## Intro\n\n- `elsewhere.py`: not layout\n\n## Layout\n\n- `a/`, `b.py`: both\n- `c`: one\n"
    readme += "  - `d`: nested, not an entry\n\n## Next\n\n- `after.py`: not layout\n"

    assert listed_paths(readme) == ["a/", "b.py", "c"]
