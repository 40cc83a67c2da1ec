"""The docs' commands run as pasted: every ```bash block of README.md and docs/*.md is run here with bash
(``set -euo pipefail``, from the project's root, no AWS credentials or settings of the caller's) unless the
line before it says why not (``<!-- docs-test: not run: REASON -->``: on AWS, with Docker, or the command
that runs this suite).

A block marked ``<!-- docs-test: serve -->`` is ``idemflow serve``, which a reader starts in a terminal of
its own: it is started in the background, and the page's next blocks run against it, until the page's next
serve block (a reader stops one serve before starting another on the same port). The one change made
to what is pasted: serve's port, 8083 on the page, is a free port here (so that two runs never collide),
in that block and in the page's next ones.

The reader's shell is the same for every page (an empty HOME, no AWS settings). The pages'
``.venv/bin/idemflow`` and ``.venv/bin/aws`` are the project's own scripts started from a process that has
already imported them (``tests/prewarmed.py``: the same script, arguments, environment, streams and signals, its
import done once instead of per command): the second change made to what is pasted is those paths, the
launchers' in their place (``aws``'s launcher is first on the shell's PATH).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.paths import PROJECT_ROOT
from tests.prewarmed import IDEMFLOW_PRELOAD, prewarmed, prewarmed_aws

pytestmark = pytest.mark.functional

PAGES = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]
MARK = re.compile(r"<!-- docs-test: (?P<what>serve|not run: (?P<why>.+?)) -->")
PORT = "8083"
"""serve's port on the pages."""
IDEMFLOW = ".venv/bin/idemflow"
"""How the pages run the project's CLI (from the project's root)."""
AWS = ".venv/bin/aws"
"""How the pages run the AWS CLI the project installs (from the project's root)."""


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    text: str
    mark: str | None
    """None (run), "serve", or the reason it is not run."""


def blocks(page: Path) -> list[Block]:
    """The ```bash blocks of a page, each with the docs-test mark on the line before its fence."""
    found, lines = [], page.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() in ("```bash", "```sh", "```shell", "```console"):
            start = i
            i += 1
            while lines[i].strip() != "```":
                i += 1
            previous = lines[start - 1].strip() if start else ""
            mark = MARK.fullmatch(previous)
            what = None if mark is None else mark["why"] or mark["what"]
            found.append(Block(page, start + 1, "\n".join(lines[start + 1 : i]), what))
        i += 1
    return found


def environment(home: Path) -> dict[str, str]:
    """A reader's shell: the project's .venv/bin first on PATH, no AWS settings and no credentials (an empty
    HOME: no ~/.aws), nothing of pytest's. The cache folder stays the caller's (XDG_CACHE_HOME), as a
    reader's ~/.cache is theirs: with the empty HOME's, every command parsed the definition again."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTEST_", "VIRTUAL_ENV"))}
    env.setdefault("XDG_CACHE_HOME", str(Path.home() / ".cache"))
    env["HOME"] = str(home)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


@contextmanager
def serving(command: str, env: dict[str, str], where: str) -> Iterator[None]:
    """``command`` (an ``idemflow serve``) in the background, until its banner says it is ready."""
    process = subprocess.Popen(
        ["bash", "-c", f"exec {command}"],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    banner: list[str] = []
    deadline = time.monotonic() + 120
    try:
        assert process.stdout is not None
        for line in process.stdout:  # each line as serve prints it (it flushes its banner)
            banner.append(line)
            if line.startswith("Ctrl-C to stop.") or time.monotonic() > deadline:
                break
        assert banner and banner[-1].startswith("Ctrl-C to stop."), f"{where}: serve did not start\n{''.join(banner)}"
        yield
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], Path]]:
    """The reader's shell environment, with its ``aws`` prewarmed, and the prewarmed ``idemflow``'s launcher."""
    shell = environment(tmp_path_factory.mktemp("home"))
    with (
        prewarmed(tmp_path_factory.mktemp("idemflow"), shell, "idemflow", IDEMFLOW_PRELOAD) as idemflow,
        prewarmed_aws(tmp_path_factory.mktemp("aws"), shell) as env,
    ):
        yield env, idemflow


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(PROJECT_ROOT)) for p in PAGES])
def test_the_pages_commands_run_as_pasted(page: Path, reader: tuple[dict[str, str], Path]) -> None:
    env, idemflow = reader
    port = free_port()
    with ExitStack() as stack:
        for block in blocks(page):
            where = f"{page.relative_to(PROJECT_ROOT)}:{block.line}"
            text = block.text.replace(PORT, port).replace(IDEMFLOW, str(idemflow)).replace(AWS, "aws")
            if block.mark == "serve":
                stack.close()  # a reader stops the page's previous serve (Ctrl-C) before starting another
                stack.enter_context(serving(text.split("#", 1)[0].strip(), env, where))
            elif block.mark is None:
                result = subprocess.run(
                    ["bash", "-c", f"set -euo pipefail\n{text}"],
                    cwd=PROJECT_ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                assert result.returncode == 0, (
                    f"{where}: exit {result.returncode}\n{text}\n{result.stdout}{result.stderr}"
                )


def test_every_block_is_run_or_says_why_not() -> None:
    unmarked_marks = []
    not_run = []
    for page in PAGES:
        text = page.read_text()
        marks = len(MARK.findall(text))
        marked = [b for b in blocks(page) if b.mark is not None]
        if marks != len(marked):  # a mark that is not right above a fence is a typo that would run the block
            unmarked_marks.append(f"{page.name}: {marks} marks, {len(marked)} on a block")
        not_run += [f"{b.page.name}:{b.line}: {b.mark}" for b in marked if b.mark != "serve"]
    assert unmarked_marks == []
    # What is not run is on AWS, in Docker, or this suite itself: each says so.
    assert all(re.search(r"AWS|Docker|make test|suite|init", line) for line in not_run), not_run
    # The README's own commands run, but for make test (it is this suite) and deploying to AWS.
    readme = [b for b in blocks(PROJECT_ROOT / "README.md") if b.mark not in (None, "serve")]
    assert [b.text.split()[0] for b in readme] == ["make", "sam"], readme
