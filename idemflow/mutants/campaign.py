"""The mutation campaign: copies the project, proves the copy's package is the one imported, checks the
unmutated definition passes, then runs the project's test selection once per mutant and judges each (killed,
survived, or equivalent as the project's equivalence file explains), and writes the report."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Protocol, TypeVar

from idemflow.mutants.errors import MutantsError
from idemflow.mutants.generate import JsonObject, Mutant, NotMutable, render_definition

DEFAULT_JOBS = 2
DEFAULT_TIMEOUT = 600.0


class Verdict(Enum):
    KILLED = "killed"
    TIMEOUT = "timeout"
    SURVIVED = "survived"
    EQUIVALENT = "equivalent"
    ERROR = "error"


@dataclass(frozen=True)
class PytestRun:
    """One pytest run: ``returncode`` is None when it was stopped at the timeout."""

    returncode: int | None
    output: str
    seconds: float


class Candidate(Protocol):
    """What the campaign judges: a mutant of the definition, or any other rewrite of the project's files."""

    @property
    def id(self) -> str: ...

    @property
    def description(self) -> str: ...


C = TypeVar("C", bound=Candidate)


@dataclass(frozen=True)
class Outcome:
    mutant: Candidate
    verdict: Verdict
    detail: str
    seconds: float


_FAILURE_LINE = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", re.MULTILINE)
_SUMMARY_LINE = re.compile(r"^=*\s*(\d+ (?:passed|failed|error|skipped).*?)\s*=*$", re.MULTILINE)
_SHORT_SUMMARY = "short test summary info"


def first_failure(output: str) -> str | None:
    """The node id of the first ``FAILED``/``ERROR`` line of pytest's short summary (``-rf``/``-ra``).

    Only the short summary is searched: captured log lines earlier in the output start with ``ERROR`` too.
    """
    summary = output[output.rfind(_SHORT_SUMMARY) :] if _SHORT_SUMMARY in output else output
    match = _FAILURE_LINE.search(summary)
    return match.group(1).strip() if match else None


def _git_files(repo: Path, *options: str) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", *options], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    return [name for name in listed.split("\0") if name]


def project_files(repo: Path) -> list[str]:
    """Tracked files plus untracked, not ignored ones: what the working tree means by "the project".

    The working tree, not the last commit: the campaign judges the definition and tests as they are now.
    """
    names = set(_git_files(repo)) | set(_git_files(repo, "--others", "--exclude-standard"))
    return sorted(name for name in names if (repo / name).is_file() or (repo / name).is_symlink())


def make_workspace(repo: Path, files: Sequence[str], destination: Path) -> None:
    """Copy the project into ``destination`` once; mutants then only rewrite the definition there.

    ``node_modules`` (asl-validator) is ignored by git and large: it is linked, not copied.
    """
    for name in files:
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / name, target, follow_symlinks=False)
    link = destination / "node_modules"
    if (repo / "node_modules").is_dir() and not (link.exists() or link.is_symlink()):
        link.symlink_to(repo / "node_modules", target_is_directory=True)


def _environment(workspace: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(workspace)
    return env


def check_isolation(python: Path, workspace: Path) -> None:
    """Fail unless ``import idemflow`` in the workspace finds the workspace's package.

    The project is installed in editable mode: if its finder won over PYTHONPATH, every mutant would
    run the original definition and survive.
    """
    probe = subprocess.run(
        [str(python), "-c", "import idemflow; print(idemflow.__file__)"],
        cwd=workspace,
        env=_environment(workspace),
        capture_output=True,
        text=True,
        check=False,
    )
    imported = Path(probe.stdout.strip()).resolve() if probe.returncode == 0 else None
    if imported is None or not imported.is_relative_to(workspace.resolve()):
        found = imported or probe.stderr.strip().splitlines()[-1:]
        raise MutantsError(f"in the copy {workspace}, `import idemflow` does not load the copy: {found}")


class ProcessGroups:
    """The pytest runs under way, so that an interrupted campaign can end them.

    Each run has its own session (so a timeout can end everything it started), which also puts it out
    of reach of the terminal's Ctrl-C: without this, an interrupted campaign would leave them running.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self._cancelled = False

    def add(self, group: int) -> None:
        with self._lock:
            self._groups.add(group)
            if self._cancelled:
                _kill_group(group)

    def discard(self, group: int) -> None:
        with self._lock:
            self._groups.discard(group)

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            for group in self._groups:
                _kill_group(group)


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)


def run_tests(
    python: Path, workspace: Path, tests: Sequence[str], timeout: float, running: ProcessGroups | None = None
) -> PytestRun:
    """Run the selection in the workspace, stopping at the first failure.

    pytest runs in its own session so that a timeout ends it together with everything it started
    (the local Lambda runtime's processes).
    """
    # -n 0: the mutants already run --jobs at a time; one pytest process per mutant.
    command = [str(python), "-m", "pytest", "-x", "-q", "-rf", "-n", "0", "-p", "no:cacheprovider", *tests]
    running = running or ProcessGroups()
    started = time.monotonic()
    with subprocess.Popen(
        command,
        cwd=workspace,
        env=_environment(workspace),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as process:
        running.add(process.pid)
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process.pid)
            output, _ = process.communicate()
            return PytestRun(None, output, time.monotonic() - started)
        finally:
            running.discard(process.pid)
    return PytestRun(process.returncode, output, time.monotonic() - started)


def judge(mutant: Candidate, run: PytestRun, equivalent: dict[str, str], timeout: float) -> Outcome:
    """The verdict on one mutant from its test run.

    pytest's status 1 (a test failed) and 2 (collection error) kill the mutant; any other non-zero
    status (internal or usage error, no tests) says nothing about the mutant and is an error.
    """
    if run.returncode is None:
        return Outcome(mutant, Verdict.TIMEOUT, f"timeout after {timeout:g} s", run.seconds)
    if run.returncode == 0:
        if mutant.id in equivalent:
            return Outcome(mutant, Verdict.EQUIVALENT, equivalent[mutant.id], run.seconds)
        return Outcome(mutant, Verdict.SURVIVED, mutant.description, run.seconds)
    if run.returncode in (1, 2):
        failed = first_failure(run.output) or f"pytest exit status {run.returncode}"
        return Outcome(mutant, Verdict.KILLED, failed, run.seconds)
    last = run.output.strip().splitlines()[-1:] or [""]
    return Outcome(mutant, Verdict.ERROR, f"pytest exit status {run.returncode}: {last[0]}", run.seconds)


def load_equivalent(path: Path) -> dict[str, str]:
    """The explained equivalent mutants (id -> reason); none when the file does not exist."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise MutantsError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise MutantsError(f"{path}: expected a JSON object mapping mutant id to a one-sentence reason")
    return data


def stale_entries(
    equivalent: dict[str, str],
    all_ids: set[str],
    outcomes: Sequence[Outcome],
    where: Path | str = "the equivalence file",
) -> list[str]:
    """Warnings for explanations that no longer fit: the mutant is gone, or the tests now kill it."""
    killed = {o.mutant.id for o in outcomes if o.verdict in (Verdict.KILLED, Verdict.TIMEOUT)}
    warnings = []
    for mutant_id in equivalent:
        if mutant_id not in all_ids:
            warnings.append(f"WARNING stale entry in {where}: {mutant_id} (no such mutant)")
        elif mutant_id in killed:
            warnings.append(f"WARNING stale entry in {where}: {mutant_id} (the tests kill it)")
    return warnings


def report_line(outcome: Outcome) -> str:
    mutant_id = outcome.mutant.id
    if outcome.verdict in (Verdict.KILLED, Verdict.TIMEOUT):
        return f"KILLED {mutant_id}  ({outcome.detail})"
    if outcome.verdict is Verdict.SURVIVED:
        return f"SURVIVED {mutant_id}: {outcome.detail}"
    if outcome.verdict is Verdict.EQUIVALENT:
        return f"EQUIVALENT {mutant_id}: {outcome.detail}"
    return f"ERROR {mutant_id}: {outcome.detail}"


def summary_line(outcomes: Sequence[Outcome]) -> str:
    def count(*verdicts: Verdict) -> int:
        return sum(1 for o in outcomes if o.verdict in verdicts)

    line = (
        f"mutants: {len(outcomes)}, killed: {count(Verdict.KILLED, Verdict.TIMEOUT)}, "
        f"survived: {count(Verdict.SURVIVED)}, equivalent (explained): {count(Verdict.EQUIVALENT)}"
    )
    errors = count(Verdict.ERROR)
    return line + (f", errors: {errors}" if errors else "")


def markdown_report(
    outcomes: Sequence[Outcome],
    skipped: Sequence[NotMutable],
    warnings: Sequence[str],
    tests: Sequence[str],
    definition: Path | str,
) -> str:
    lines = [
        f"# Mutation testing of {definition}",
        "",
        f"Tests: {', '.join(f'`{t}`' for t in tests)}",
        "",
        "| Result | Mutant | Detail | Seconds |",
        "| --- | --- | --- | ---: |",
    ]
    for outcome in outcomes:
        verdict = "killed (timeout)" if outcome.verdict is Verdict.TIMEOUT else outcome.verdict.value
        detail = outcome.detail.replace("|", "\\|")
        lines.append(f"| {verdict} | `{outcome.mutant.id}` | {detail} | {outcome.seconds:.1f} |")
    lines += ["", f"**{summary_line(outcomes)}**", ""]
    if skipped:
        lines += ["Not mutated:", "", *(f"- `{s.id}`: {s.reason}" for s in skipped), ""]
    if warnings:
        lines += ["Warnings:", "", *(f"- {w}" for w in warnings), ""]
    return "\n".join(lines)


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_campaign(
    repo: Path,
    definition: Path,
    python: Path,
    original: JsonObject,
    mutants: Sequence[Mutant],
    equivalent: dict[str, str],
    tests: Sequence[str],
    jobs: int,
    timeout: float,
) -> list[Outcome]:
    """Control run on the unmutated definition, then every mutant, ``jobs`` at a time.

    Each worker owns one copy of the project for the whole campaign; a mutant only rewrites the
    definition file (``definition``, relative to the project) of the copy it is given.
    """
    return run_rewrites(
        repo,
        python,
        {definition: render_definition(original)},
        mutants,
        lambda mutant: {definition: render_definition(mutant.definition)},
        equivalent,
        tests,
        jobs,
        timeout,
        what="definition",
    )


def run_rewrites(
    repo: Path,
    python: Path,
    originals: Mapping[Path, str],
    candidates: Sequence[C],
    rewrite: Callable[[C], Mapping[Path, str]],
    equivalent: dict[str, str],
    tests: Sequence[str],
    jobs: int,
    timeout: float,
    what: str,
) -> list[Outcome]:
    """Control run with ``originals`` (file relative to the project -> text), then every candidate, ``jobs`` at a
    time, each in a copy of the project where every file of ``originals`` is written as given, then the files
    ``rewrite(candidate)`` gives as it gives them. ``what`` names the originals in the control run's messages."""
    files = project_files(repo)
    running = ProcessGroups()
    with tempfile.TemporaryDirectory(prefix="idemflow-mutants-") as scratch:
        workspaces: queue.Queue[Path] = queue.Queue()
        for number in range(max(1, min(jobs, len(candidates)))):
            workspace = Path(scratch) / f"worker-{number}"
            make_workspace(repo, files, workspace)
            check_isolation(python, workspace)
            workspaces.put(workspace)

        def write(workspace: Path, rewritten: Mapping[Path, str]) -> None:
            for name, text in {**originals, **rewritten}.items():
                (workspace / name).write_text(text)

        control = workspaces.get()
        write(control, {})
        _progress(f"control run on the unmutated {what}: {' '.join(tests)}")
        baseline = run_tests(python, control, tests, timeout, running)
        if baseline.returncode != 0:
            why = first_failure(baseline.output) or (
                f"timeout after {timeout:g} s" if baseline.returncode is None else f"exit {baseline.returncode}"
            )
            raise MutantsError(f"the tests fail on the unmutated {what} ({why}): fix the suite first")
        counts = _SUMMARY_LINE.findall(baseline.output)
        _progress(f"control run passed in {baseline.seconds:.1f} s: {counts[-1] if counts else 'ok'}")
        workspaces.put(control)

        def attempt(candidate: C) -> Outcome:
            workspace = workspaces.get()
            try:
                write(workspace, rewrite(candidate))
                return judge(candidate, run_tests(python, workspace, tests, timeout, running), equivalent, timeout)
            finally:
                workspaces.put(workspace)

        outcomes: dict[str, Outcome] = {}
        pool = ThreadPoolExecutor(max_workers=jobs)
        try:
            futures = [pool.submit(attempt, candidate) for candidate in candidates]
            for done, future in enumerate(as_completed(futures), start=1):
                outcome = future.result()
                outcomes[outcome.mutant.id] = outcome
                _progress(f"[{done}/{len(candidates)}] {report_line(outcome)}  {outcome.seconds:.1f} s")
        except BaseException:
            running.cancel()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown()
    return [outcomes[c.id] for c in candidates]
