"""Mutation testing of the state machine definition: ``python -m idemflow.mutants``.

Every guard of the workflow lives in ``statemachine/idempotent.asl.json``: DynamoDB condition clauses,
``Catch`` and ``Retry`` entries, ``Choice`` rules. A test suite that still passes after one of them is
deleted does not pin that guard down. This module deletes them one at a time (the *mutants*), runs the
fast tests against each mutant in a throw-away copy of the project, and reports which mutants the tests
killed and which survived.

Two halves, kept apart so the first can be unit-tested without running anything:

* :func:`generate` is a pure function from the definition (a dict) to the mutants, with stable ids
  (``AcquireLock.ConditionExpression#1``, ``RunSideEffect.Catch[1]``, ``CheckRecord.Choices[3].And[1]``);
* :func:`main` copies the project, proves the copy's package is the one imported, checks the unmutated
  definition passes, then runs the selection once per mutant and writes the report.

A survivor that cannot be killed (the deleted guard is redundant by construction) is explained in
``statemachine/mutants-equivalent.json``, an object mapping mutant id to a one-sentence reason.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

JsonObject = dict[str, Any]

# Cheapest first: with -x a mutant stops at its first failing test, so only the mutants that survive
# the definition rules and the workflow's paths pay for the interleaving checker's quick tier.
FAST_TESTS = [
    "tests/unit/test_definition_rules.py",
    "tests/functional/test_workflow.py",
    "tests/functional/test_races.py::test_fail_fast_never_waits_for_a_live_owner",
    "tests/explore/test_interleavings.py::test_the_quick_tier_finds_no_violation",
]
DEFINITION_PATH = Path("statemachine") / "idempotent.asl.json"
EQUIVALENT_PATH = Path("statemachine") / "mutants-equivalent.json"
DEFAULT_JOBS = 2
DEFAULT_TIMEOUT = 600.0

# The DynamoDB expressions of one request that may use ExpressionAttributeNames/Values: a name or value
# used by none of them is rejected (ValidationException), so a mutant must drop the ones it orphans.
EXPRESSION_KEYS = (
    "ConditionExpression",
    "UpdateExpression",
    "ProjectionExpression",
    "KeyConditionExpression",
    "FilterExpression",
)
_NAME_REF = re.compile(r"#[A-Za-z0-9_]+")
_VALUE_REF = re.compile(r":[A-Za-z0-9_]+")
_LOGICAL = re.compile(r"\s+(AND|OR)(?:\s+|(?=\())", re.IGNORECASE)
_BETWEEN = re.compile(r"\bBETWEEN\b", re.IGNORECASE)
_GROUP_PREFIX = re.compile(r"(NOT\s*)?\(", re.IGNORECASE)

# A path from the definition's root to one state, e.g. ("States", "Parallel", "Branches", 0, "States", "A").
StatePath = tuple[str | int, ...]


# --------------------------------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    """One deletion: ``definition`` is a complete definition, independent of the original (deep copy)."""

    id: str
    description: str
    definition: JsonObject


@dataclass(frozen=True)
class NotMutable:
    """A site the generator deliberately leaves alone, reported so that its absence is not a surprise."""

    id: str
    reason: str


@dataclass(frozen=True)
class Generation:
    mutants: list[Mutant]
    not_mutable: list[NotMutable]


@dataclass(frozen=True)
class ClauseDeletion:
    """One clause deleted from a condition expression.

    ``path`` is the clause's index at each nesting level (``(1, 0)``: first clause inside the second
    top-level clause's parentheses); ``result`` is the expression without it, ``""`` when nothing is left.
    """

    path: tuple[int, ...]
    deleted: str
    result: str


def split_clauses(expression: str) -> tuple[list[str], list[str]]:
    """The top-level clauses of a condition expression and the separators between them.

    Splits on `` AND `` / `` OR `` (any case, any whitespace) outside parentheses. The ``AND`` of
    ``x BETWEEN :a AND :b`` belongs to its clause. The separators are kept verbatim so that re-joining
    the clauses that remain changes nothing but the deletion.
    """
    clauses: list[str] = []
    separators: list[str] = []
    depth, start, position = 0, 0, 0
    between_open = False
    while position < len(expression):
        char = expression[position]
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif depth == 0 and (match := _LOGICAL.match(expression, position)):
            current = expression[start:position]
            if match.group(1).upper() == "AND" and _BETWEEN.search(current) and not between_open:
                between_open = True  # the AND of BETWEEN: not a clause boundary
            else:
                clauses.append(current)
                separators.append(match.group(0))
                start, between_open = match.end(), False
            position = match.end()
            continue
        position += 1
    clauses.append(expression[start:])
    return clauses, separators


def _join_without(clauses: list[str], separators: list[str], index: int) -> str:
    """The clauses re-joined without clause ``index`` and the one separator that bound it."""
    kept_clauses = clauses[:index] + clauses[index + 1 :]
    dropped = index - 1 if index > 0 else 0
    kept_separators = separators[:dropped] + separators[dropped + 1 :]
    joined = kept_clauses[0] if kept_clauses else ""
    for separator, clause in zip(kept_separators, kept_clauses[1:], strict=True):
        joined += separator + clause
    return joined


def _group_parts(clause: str) -> tuple[str, str, str] | None:
    """``(prefix, inner, suffix)`` when the clause is one parenthesised group (optionally ``NOT (...)``).

    ``attribute_exists(x)`` and ``(a) AND (b)`` are not groups: the opening parenthesis must close at
    the clause's very end.
    """
    stripped = clause.strip()
    match = _GROUP_PREFIX.match(stripped)
    if match is None or not stripped.endswith(")"):
        return None
    depth = 0
    for position in range(match.end() - 1, len(stripped)):
        depth += {"(": 1, ")": -1}.get(stripped[position], 0)
        if depth == 0 and position != len(stripped) - 1:
            return None
    lead = clause[: len(clause) - len(clause.lstrip())]
    trail = clause[len(clause.rstrip()) :]
    return lead + stripped[: match.end()], stripped[match.end() : -1], ")" + trail


def clause_deletions(expression: str) -> list[ClauseDeletion]:
    """Every single-clause deletion of a condition expression, nested groups included (depth first)."""
    clauses, separators = split_clauses(expression)
    found: list[ClauseDeletion] = []
    for index, clause in enumerate(clauses):
        found.append(ClauseDeletion((index,), clause.strip(), _join_without(clauses, separators, index)))
        parts = _group_parts(clause)
        if parts is None:
            continue
        prefix, inner, suffix = parts
        if len(split_clauses(inner)[0]) < 2:
            continue
        for nested in clause_deletions(inner):
            rewritten = [*clauses[:index], prefix + nested.result + suffix, *clauses[index + 1 :]]
            joined = rewritten[0] + "".join(s + c for s, c in zip(separators, rewritten[1:], strict=True))
            found.append(ClauseDeletion((index, *nested.path), nested.deleted, joined))
    return found


def _references(parameters: JsonObject) -> tuple[set[str], set[str]]:
    """The attribute names (``#x``) and values (``:x``) that a request's expressions use."""
    names: set[str] = set()
    values: set[str] = set()
    for key in EXPRESSION_KEYS:
        text = parameters.get(key)
        if isinstance(text, str):
            names.update(_NAME_REF.findall(text))
            values.update(_VALUE_REF.findall(text))
    return names, values


def _prune_orphans(parameters: JsonObject, before: tuple[set[str], set[str]]) -> None:
    """Drop the names and values that the deletion left unused (only those: the rest is not ours to fix).

    DynamoDB rejects an unused name or value with a ValidationException; a mutant failing on that would
    be killed for the wrong reason.
    """
    after = _references(parameters)
    for key, was, now in (
        ("ExpressionAttributeNames", before[0], after[0]),
        ("ExpressionAttributeValues", before[1], after[1]),
    ):
        mapping = parameters.get(key)
        if not isinstance(mapping, dict):
            continue
        orphans = (was - now) & mapping.keys()
        for orphan in orphans:
            del mapping[orphan]
        if orphans and not mapping:
            del parameters[key]


def _states(definition: JsonObject, prefix: StatePath = ()) -> Iterator[tuple[StatePath, str, JsonObject]]:
    """Every state with its path, in definition order, including those of Parallel branches and Maps."""
    for name, state in definition.get("States", {}).items():
        path: StatePath = (*prefix, "States", name)
        yield path, name, state
        for index, branch in enumerate(state.get("Branches", [])):
            yield from _states(branch, (*path, "Branches", index))
        for key in ("Iterator", "ItemProcessor"):
            if isinstance(state.get(key), dict):
                yield from _states(state[key], (*path, key))


def _mutate(definition: JsonObject, path: StatePath, edit: Callable[[JsonObject], None]) -> JsonObject:
    """A deep copy of the definition with ``edit`` applied to the state at ``path``."""
    mutated = copy.deepcopy(definition)
    node: Any = mutated
    for step in path:
        node = node[step]
    edit(node)
    return mutated


def _condition_mutants(definition: JsonObject, path: StatePath, name: str, state: JsonObject) -> list[Mutant]:
    parameters = state.get("Parameters")
    if state.get("Type") != "Task" or not isinstance(parameters, dict):
        return []
    expression = parameters.get("ConditionExpression")
    if not isinstance(expression, str):
        return []  # absent, or a dynamic ``ConditionExpression.$`` that cannot be parsed
    mutants = []
    for deletion in clause_deletions(expression):

        def edit(target: JsonObject, result: str = deletion.result) -> None:
            params = target["Parameters"]
            before = _references(params)
            if result.strip():
                params["ConditionExpression"] = result
            else:
                del params["ConditionExpression"]
            _prune_orphans(params, before)

        suffix = ".".join(str(i) for i in deletion.path)
        if deletion.result.strip():
            description = f"{name}: delete clause {deletion.deleted!r}, leaving {deletion.result.strip()!r}"
        else:
            description = f"{name}: delete the whole ConditionExpression {expression!r}"
        mutants.append(Mutant(f"{name}.ConditionExpression#{suffix}", description, _mutate(definition, path, edit)))
    return mutants


def _describe_handler(key: str, entry: Any) -> str:
    if not isinstance(entry, dict):
        return json.dumps(entry)
    errors = ", ".join(str(e) for e in entry.get("ErrorEquals", []))
    return f"{errors} -> {entry['Next']}" if key == "Catch" and "Next" in entry else errors


def _handler_mutants(definition: JsonObject, path: StatePath, name: str, state: JsonObject) -> list[Mutant]:
    """Delete each ``Retry`` and ``Catch`` entry; an emptied array goes with its key."""
    mutants = []
    for key in ("Retry", "Catch"):
        entries = state.get(key)
        if not isinstance(entries, list):
            continue
        for index, entry in enumerate(entries):

            def edit(target: JsonObject, key: str = key, index: int = index) -> None:
                del target[key][index]
                if not target[key]:
                    del target[key]

            description = f"{name}: delete {key}[{index}] ({_describe_handler(key, entry)})"
            mutants.append(Mutant(f"{name}.{key}[{index}]", description, _mutate(definition, path, edit)))
    return mutants


def describe_rule(rule: Any) -> str:
    """A Choice rule as one short line, e.g. ``not ($.x IsPresent true)``."""
    if not isinstance(rule, dict):
        return json.dumps(rule)
    for operator in ("And", "Or"):
        if isinstance(rule.get(operator), list):
            return "(" + f" {operator.lower()} ".join(describe_rule(r) for r in rule[operator]) + ")"
    if "Not" in rule:
        return f"not {describe_rule(rule['Not'])}"
    tests = [f"{k} {json.dumps(v)}" for k, v in rule.items() if k not in {"Variable", "Next", "Comment"}]
    return " ".join([str(rule.get("Variable", "?")), *tests])


def operand_deletions(rule: JsonObject) -> Iterator[tuple[str, Any, JsonObject]]:
    """``(id suffix, deleted operand, new rule)`` for each And/Or operand, at any depth (also under Not).

    An And/Or left with one operand is replaced by it, keeping the rule's other fields (``Next``).
    """
    for operator in ("And", "Or"):
        operands = rule.get(operator)
        if not isinstance(operands, list) or len(operands) < 2:
            continue
        others = {k: v for k, v in rule.items() if k != operator}
        for index, operand in enumerate(operands):
            rest = operands[:index] + operands[index + 1 :]
            replaced = {**rest[0], **others} if len(rest) == 1 and isinstance(rest[0], dict) else None
            yield f".{operator}[{index}]", operand, replaced if replaced is not None else {**rule, operator: rest}
        for index, operand in enumerate(operands):
            if isinstance(operand, dict):
                for suffix, deleted, new_operand in operand_deletions(operand):
                    new_operands = [*operands[:index], new_operand, *operands[index + 1 :]]
                    yield f".{operator}[{index}]{suffix}", deleted, {**rule, operator: new_operands}
    negated = rule.get("Not")
    if isinstance(negated, dict):
        for suffix, deleted, new_negated in operand_deletions(negated):
            yield f".Not{suffix}", deleted, {**rule, "Not": new_negated}


def _choice_mutants(
    definition: JsonObject, path: StatePath, name: str, state: JsonObject
) -> tuple[list[Mutant], list[NotMutable]]:
    rules = state.get("Choices")
    if state.get("Type") != "Choice" or not isinstance(rules, list):
        return [], []
    mutants: list[Mutant] = []
    skipped: list[NotMutable] = []
    for index, rule in enumerate(rules):
        rule_id = f"{name}.Choices[{index}]"
        summary = f"{describe_rule(rule)} -> {rule.get('Next') if isinstance(rule, dict) else '?'}"
        if len(rules) == 1:
            skipped.append(NotMutable(rule_id, f"the only rule of {name} ({summary}): a Choice needs one rule"))
        else:

            def edit(target: JsonObject, index: int = index) -> None:
                del target["Choices"][index]

            description = f"{name}: delete Choices[{index}] ({summary})"
            mutants.append(Mutant(rule_id, description, _mutate(definition, path, edit)))
        if not isinstance(rule, dict):
            continue
        for suffix, deleted, new_rule in operand_deletions(rule):

            def replace(target: JsonObject, index: int = index, new_rule: JsonObject = new_rule) -> None:
                target["Choices"][index] = copy.deepcopy(new_rule)

            description = f"{name}: delete operand {describe_rule(deleted)} of Choices[{index}] ({summary})"
            mutants.append(Mutant(rule_id + suffix, description, _mutate(definition, path, replace)))
    return mutants, skipped


def generate(definition: JsonObject) -> Generation:
    """All mutants of a definition, in definition order; the definition itself is left untouched.

    Per state: condition clauses, then Retry, Catch, and Choice rules. Ids name the state and the
    deleted element, so they stay the same while the rest of the definition changes, and are what
    ``mutants-equivalent.json`` refers to.
    """
    mutants: list[Mutant] = []
    skipped: list[NotMutable] = []
    for path, name, state in _states(definition):
        mutants += _condition_mutants(definition, path, name, state)
        mutants += _handler_mutants(definition, path, name, state)
        choice_mutants, choice_skipped = _choice_mutants(definition, path, name, state)
        mutants += choice_mutants
        skipped += choice_skipped
    ids = [m.id for m in mutants]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"duplicate mutant ids (state names must be unique): {', '.join(duplicates)}")
    return Generation(mutants, skipped)


def generate_mutants(definition: JsonObject) -> list[Mutant]:
    """The mutants of :func:`generate`, without the sites left alone."""
    return generate(definition).mutants


def render_definition(definition: JsonObject) -> str:
    """The text written for a mutant (and for the unmutated control run, so both are serialised alike)."""
    return json.dumps(definition, indent=2, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------------------------------
# Runner
# --------------------------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    verdict: Verdict
    detail: str
    seconds: float


class MutantsError(Exception):
    """A reason to stop before or instead of the campaign, said in one line."""


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


def judge(mutant: Mutant, run: PytestRun, equivalent: dict[str, str], timeout: float) -> Outcome:
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


def stale_entries(equivalent: dict[str, str], all_ids: set[str], outcomes: Sequence[Outcome]) -> list[str]:
    """Warnings for explanations that no longer fit: the mutant is gone, or the tests now kill it."""
    killed = {o.mutant.id for o in outcomes if o.verdict in (Verdict.KILLED, Verdict.TIMEOUT)}
    warnings = []
    for mutant_id in equivalent:
        if mutant_id not in all_ids:
            warnings.append(f"WARNING stale entry in {EQUIVALENT_PATH}: {mutant_id} (no such mutant)")
        elif mutant_id in killed:
            warnings.append(f"WARNING stale entry in {EQUIVALENT_PATH}: {mutant_id} (the tests kill it)")
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
    outcomes: Sequence[Outcome], skipped: Sequence[NotMutable], warnings: Sequence[str], tests: Sequence[str]
) -> str:
    lines = [
        "# Mutation testing of statemachine/idempotent.asl.json",
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
    definition file of the copy it is given.
    """
    files = project_files(repo)
    running = ProcessGroups()
    with tempfile.TemporaryDirectory(prefix="idemflow-mutants-") as scratch:
        workspaces: queue.Queue[Path] = queue.Queue()
        for number in range(max(1, min(jobs, len(mutants)))):
            workspace = Path(scratch) / f"worker-{number}"
            make_workspace(repo, files, workspace)
            check_isolation(python, workspace)
            workspaces.put(workspace)

        control = workspaces.get()
        (control / DEFINITION_PATH).write_text(render_definition(original))
        _progress(f"control run on the unmutated definition: {' '.join(tests)}")
        baseline = run_tests(python, control, tests, timeout, running)
        if baseline.returncode != 0:
            why = first_failure(baseline.output) or (
                f"timeout after {timeout:g} s" if baseline.returncode is None else f"exit {baseline.returncode}"
            )
            raise MutantsError(f"the tests fail on the unmutated definition ({why}): fix the suite first")
        counts = _SUMMARY_LINE.findall(baseline.output)
        _progress(f"control run passed in {baseline.seconds:.1f} s: {counts[-1] if counts else 'ok'}")
        workspaces.put(control)

        def attempt(mutant: Mutant) -> Outcome:
            workspace = workspaces.get()
            try:
                (workspace / DEFINITION_PATH).write_text(render_definition(mutant.definition))
                return judge(mutant, run_tests(python, workspace, tests, timeout, running), equivalent, timeout)
            finally:
                workspaces.put(workspace)

        outcomes: dict[str, Outcome] = {}
        pool = ThreadPoolExecutor(max_workers=jobs)
        try:
            futures = [pool.submit(attempt, mutant) for mutant in mutants]
            for done, future in enumerate(as_completed(futures), start=1):
                outcome = future.result()
                outcomes[outcome.mutant.id] = outcome
                _progress(f"[{done}/{len(mutants)}] {report_line(outcome)}  {outcome.seconds:.1f} s")
        except BaseException:
            running.cancel()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown()
    return [outcomes[m.id] for m in mutants]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m idemflow.mutants",
        description="Delete each condition clause, Catch, Retry and Choice rule of the definition, one at a "
        "time, and run the fast tests against each mutant.",
    )
    parser.add_argument("--tests", nargs="+", default=FAST_TESTS, metavar="TEST", help="pytest selection")
    parser.add_argument("-k", "--only", metavar="PATTERN", help="only the mutants whose id contains PATTERN")
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS, help="mutants run in parallel (default 2)")
    parser.add_argument("--list", action="store_true", help="print the mutants' ids and descriptions, run nothing")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS", help="per mutant (default 600)"
    )
    parser.add_argument("--report", type=Path, metavar="PATH", help="also write the report as Markdown")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """0 when every surviving mutant is explained, 1 otherwise, 2 when the campaign could not run."""
    args = build_parser().parse_args(argv)
    repo = Path(__file__).resolve().parent.parent
    try:
        if args.jobs < 1 or args.timeout <= 0:
            raise MutantsError("--jobs must be at least 1 and --timeout positive")
        original = json.loads((repo / DEFINITION_PATH).read_text())
        generation = generate(original)
        selected = [m for m in generation.mutants if args.only is None or args.only in m.id]
        if not selected:
            raise MutantsError(f"no mutant id contains {args.only!r} (see --list)")
        if args.list:
            for mutant in selected:
                print(f"{mutant.id}: {mutant.description}")
            for site in generation.not_mutable:
                print(f"NOT MUTABLE {site.id}: {site.reason}")
            return 0
        python = repo / ".venv" / "bin" / "python"
        if not python.exists():
            raise MutantsError(f"{python} does not exist: run `make test` first")
        equivalent = load_equivalent(repo / EQUIVALENT_PATH)
        outcomes = run_campaign(repo, python, original, selected, equivalent, args.tests, args.jobs, args.timeout)
    except MutantsError as exc:
        print(f"mutants: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mutants: interrupted", file=sys.stderr)
        return 130
    warnings = stale_entries(equivalent, {m.id for m in generation.mutants}, outcomes)
    for outcome in outcomes:
        print(report_line(outcome))
    for site in generation.not_mutable:
        print(f"NOT MUTABLE {site.id}: {site.reason}")
    for warning in warnings:
        print(warning)
    print(summary_line(outcomes))
    if args.report is not None:
        args.report.write_text(markdown_report(outcomes, generation.not_mutable, warnings, args.tests))
    unexplained = [o for o in outcomes if o.verdict in (Verdict.SURVIVED, Verdict.ERROR)]
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
