"""docs/layout.md lists what is there: every top-level folder and every module of idemflow."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from tests.paths import LAYOUT_DOC, PROJECT_ROOT

# An entry: "- `path`: what it is", or "- `a`, `b`: what they are"; a folder ends with "/".
ENTRY = re.compile(r"^- ((?:`[^`]+`(?:, )?)+):", re.M)


def layout_section(page: str) -> str:
    """The "Layout" heading (the page's title, or a section of it) up to the next heading of its level."""
    heading = re.search(r"^(#{1,2}) Layout\n", page, re.M)
    assert heading, "no Layout heading"
    end = page.find(f"\n{heading.group(1)} ", heading.end())
    return page[heading.start() : end if end >= 0 else len(page)]


def listed_paths(page: str) -> list[str]:
    return [path for entry in ENTRY.findall(layout_section(page)) for path in re.findall(r"`([^`]+)`", entry)]


def ignored(name: str) -> bool:
    """Hidden, or matched by a .gitignore pattern that applies at the top level (a build or cache)."""
    patterns = [line.strip().rstrip("/") for line in (PROJECT_ROOT / ".gitignore").read_text().splitlines()]
    return name.startswith(".") or any(p and "/" not in p and fnmatch.fnmatch(name, p) for p in patterns)


def entry(path: Path) -> str:
    relative = path.relative_to(PROJECT_ROOT).as_posix()
    return f"{relative}/" if path.is_dir() else relative


def expected_entries() -> set[str]:
    """The top level's folders (its files come and go: reports, local settings), idemflow's modules and
    subpackages, the engine's subpackages and each service's package."""
    top = {entry(p) for p in PROJECT_ROOT.iterdir() if p.is_dir() and not ignored(p.name)}
    package = PROJECT_ROOT / "idemflow"
    modules = {entry(p) for p in package.glob("*.py")}
    subpackages = {entry(p.parent) for p in package.glob("*/__init__.py")}
    engine = {entry(p.parent) for p in (package / "engine").glob("*/__init__.py")}
    services = {entry(p.parent) for p in (package / "engine" / "services").glob("*/__init__.py")}
    return top | modules | subpackages | engine | services


def test_every_listed_path_exists() -> None:
    listed = listed_paths(LAYOUT_DOC.read_text())

    assert len(listed) == len(set(listed)), "a path listed twice"
    for path in listed:
        found = PROJECT_ROOT / path
        assert found.is_dir() if path.endswith("/") else found.is_file(), f"docs/layout.md lists {path}: not there"


def test_every_top_level_folder_and_idemflow_module_is_listed() -> None:
    missing = expected_entries() - set(listed_paths(LAYOUT_DOC.read_text()))

    assert not missing, f"add to docs/layout.md: {sorted(missing)}"


def test_the_entries_are_read_from_the_section_only() -> None:
    readme = "## Intro\n\n- `elsewhere.py`: not layout\n\n## Layout\n\n- `a/`, `b.py`: both\n- `c`: one\n"
    readme += "  - `d`: nested, not an entry\n\n## Next\n\n- `after.py`: not layout\n"

    assert listed_paths(readme) == ["a/", "b.py", "c"]


def test_a_page_titled_layout_is_read_whole_and_the_top_level_lists_its_docs() -> None:
    page = "# Layout\n\n- `a/`: one\n\n## Details\n\n- `b`: still layout\n\n# Other\n\n- `c`: not layout\n"

    assert listed_paths(page) == ["a/", "b"]
    assert "docs/" in expected_entries() and "docs/" in listed_paths(LAYOUT_DOC.read_text())


def test_no_production_module_cites_a_test_path() -> None:
    # The code says what it does; which test shows it is the tests' business. A path of LocalStack's
    # AWS-recorded tests (tests/aws/...) is a source, and the files a new project is given are its own.
    cited = []
    for module in sorted((PROJECT_ROOT / "idemflow").rglob("*.py")):
        if module.name == "scaffold.py":  # writes a new project's own tests
            continue
        for number, line in enumerate(module.read_text().splitlines(), 1):
            for found in re.findall(r"tests/[\w/.]*", line):
                if not found.startswith("tests/aws/") and "[tool.idemflow.mutants]" not in module.read_text():
                    cited.append(f"{module.relative_to(PROJECT_ROOT)}:{number}: {found}")
    assert cited == []


def test_the_makefile_entry_names_every_target_but_clean() -> None:
    phony = re.search(r"^\.PHONY: (.+)$", (PROJECT_ROOT / "Makefile").read_text(), re.M)
    assert phony
    line = next(line for line in LAYOUT_DOC.read_text().splitlines() if line.startswith("- `Makefile`:"))

    assert set(re.findall(r"`(\w+)`", line.split(":", 1)[1])) == set(phony.group(1).split()) - {"clean"}
