"""The permission mutants (``make privileges``): each grant written in a template, deleted in turn.

A role's grants as the template writes them: the ``Policies`` of a SAM function or state machine (an inline policy
document's statements, each SAM policy template such as ``LambdaInvokePolicy:`` as a whole, a managed policy named by
its name), and the ``Policies`` of an ``AWS::IAM::Role`` (each ``PolicyDocument``'s statements), inside ``Fn::If``
branches too. A mutant deletes one statement or policy template, or one action of a statement with several. The
generator is a pure function of the template as :func:`~idemflow.template.loader.load_template` reads it; the
campaign writes each mutant back as JSON, which CloudFormation and SAM read as they read YAML.

What the template does not write cannot be deleted from it: the managed policies the SAM transform attaches by itself
(``AWSLambdaBasicExecutionRole`` to each function's implicit role, ``AWSXrayWriteOnlyAccess`` with tracing) are
listed by :func:`attached_by_sam`, and each must be explained as the survivors are.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

JsonObject = dict[str, Any]
TemplatePath = tuple[str | int, ...]

_SAM_WITH_POLICIES = ("AWS::Serverless::Function", "AWS::Serverless::StateMachine")
_ROLE = "AWS::IAM::Role"
_NO_VALUE = {"Ref": "AWS::NoValue"}


@dataclass(frozen=True)
class Deletion:
    """One grant deleted: ``template`` is the whole mutated template (a deep copy; the original is untouched)."""

    id: str
    """``<LogicalId>/<grant>`` or ``<LogicalId>/<grant>/<action>``: the grant is a statement's ``Sid`` (else its
    place, ``Policies[0].Statement[1]``), or a SAM policy template's or managed policy's name."""
    description: str
    template: JsonObject


@dataclass(frozen=True)
class _Grant:
    label: str
    path: TemplatePath
    """Where the grant is, from the template's root."""
    removal: TemplatePath
    """What deleting it removes: the grant itself, or the policy entry it is the only statement of."""
    actions: tuple[str, ...]


def _is_if(node: Any) -> bool:
    return isinstance(node, dict) and len(node) == 1 and "Fn::If" in node and isinstance(node["Fn::If"], list)


def _branches(node: Any, path: TemplatePath) -> Iterator[tuple[Any, TemplatePath]]:
    """``node`` itself, or each branch of an ``Fn::If`` (nested ones too); ``AWS::NoValue`` is no grant."""
    if _is_if(node):
        for index in (1, 2):
            if index < len(node["Fn::If"]):
                yield from _branches(node["Fn::If"][index], (*path, "Fn::If", index))
    elif node != _NO_VALUE:
        yield node, path


def _statements(document: Any, path: TemplatePath, entry: TemplatePath, label: str) -> Iterator[_Grant]:
    listed = document.get("Statement") if isinstance(document, dict) else None
    if isinstance(listed, dict):
        listed = [listed]
        only_path: TemplatePath | None = (*path, "Statement")
    else:
        only_path = None
    if not isinstance(listed, list):
        return
    live = [item for i, item in enumerate(listed) for _ in _branches(item, (*path, "Statement", i))]
    for i, item in enumerate(listed):
        for statement, where in _branches(item, (*path, "Statement", i)):
            if not isinstance(statement, dict):
                continue
            name = str(statement.get("Sid") or f"{label}.Statement[{i}]")
            action = statement.get("Action")
            actions = tuple(action) if isinstance(action, list) and all(isinstance(a, str) for a in action) else ()
            where = only_path or where
            yield _Grant(name, where, entry if len(live) == 1 else where, actions if len(actions) > 1 else ())


def _grants(resource: JsonObject, logical_id: str) -> Iterator[_Grant]:
    props = resource.get("Properties") or {}
    policies = props.get("Policies")
    base: TemplatePath = ("Resources", logical_id, "Properties", "Policies")
    if not isinstance(policies, list):
        return
    counts: dict[str, int] = {}
    for i, item in enumerate(policies):
        for entry, where in _branches(item, (*base, i)):
            if resource.get("Type") == _ROLE:
                name = str(entry.get("PolicyName") or f"Policies[{i}]") if isinstance(entry, dict) else f"Policies[{i}]"
                document = entry.get("PolicyDocument") if isinstance(entry, dict) else None
                yield from _statements(document, (*where, "PolicyDocument"), where, name)
            elif isinstance(entry, dict) and "Statement" in entry:
                yield from _statements(entry, where, where, f"Policies[{i}]")
            elif (isinstance(entry, dict) and len(entry) == 1) or isinstance(entry, str):
                name = entry if isinstance(entry, str) else next(iter(entry))
                counts[name] = counts.get(name, 0) + 1
                label = name if counts[name] == 1 else f"{name}#{counts[name]}"
                yield _Grant(label, where, where, ())


def _delete(template: JsonObject, path: TemplatePath) -> JsonObject:
    mutated = copy.deepcopy(template)
    node: Any = mutated
    for key in path[:-1]:
        node = node[key]
    last = path[-1]
    if path[-2:-1] == ("Fn::If",):
        node[last] = dict(_NO_VALUE)  # a branch: it grants nothing
    else:
        del node[last]  # an item of a list, or a key
    return mutated


def _without_action(template: JsonObject, path: TemplatePath, action: str) -> JsonObject:
    mutated = copy.deepcopy(template)
    node: Any = mutated
    for key in path:
        node = node[key]
    node["Action"] = [a for a in node["Action"] if a != action]
    return mutated


def privilege_deletions(template: JsonObject) -> list[Deletion]:
    """Every grant the template writes deleted in turn, then each action of a statement with several, in the
    template's order."""
    found: list[Deletion] = []
    for logical_id, resource in (template.get("Resources") or {}).items():
        if not isinstance(resource, dict) or resource.get("Type") not in (*_SAM_WITH_POLICIES, _ROLE):
            continue
        for grant in _grants(resource, logical_id):
            grant_id = f"{logical_id}/{grant.label}"
            found.append(Deletion(grant_id, f"{grant_id} deleted", _delete(template, grant.removal)))
            for action in grant.actions:
                found.append(
                    Deletion(
                        f"{grant_id}/{action}",
                        f"{action} deleted from {grant_id}",
                        _without_action(template, grant.path, action),
                    )
                )
    return found


def attached_by_sam(template: JsonObject, region: str = "us-east-1") -> list[str]:
    """``<Role>/<managed policy name>`` for each managed policy the SAM transform attaches to a role it makes that the
    template does not name itself (so no deletion of the template's text can remove it)."""
    from idemflow.template.roles import transform  # the SAM transform: only when asked

    written = {
        entry
        for resource in (template.get("Resources") or {}).values()
        if isinstance(resource, dict) and resource.get("Type") in _SAM_WITH_POLICIES
        for entry in (resource.get("Properties") or {}).get("Policies") or []
        if isinstance(entry, str)
    }
    attached = []
    made = transform(template, region).template
    for logical_id, resource in made["Resources"].items():
        if resource.get("Type") != _ROLE or logical_id in (template.get("Resources") or {}):
            continue
        for arn in resource.get("Properties", {}).get("ManagedPolicyArns") or []:
            text = json.dumps(arn) if not isinstance(arn, str) else arn
            name = text.rstrip('"}').rsplit("/", 1)[-1]
            if name not in written:
                attached.append(f"{logical_id}/{name}")
    return attached


def render_template(template: JsonObject) -> str:
    """The text written for a mutant and for the control run alike: JSON, which SAM reads as YAML."""
    return json.dumps(template, indent=1, ensure_ascii=False) + "\n"


def template_id(template: Path, grant_id: str) -> str:
    """A deletion's id in the campaign: the template's path (relative to the project), a colon, the grant's id."""
    return f"{template.as_posix()}:{grant_id}"


@dataclass(frozen=True)
class PrivilegesConfig:
    templates: tuple[Path, ...]
    # The templates the project's ``templates`` patterns match, relative to the project, in their order.
    tests: tuple[str, ...]
    explained: Path


def load_privileges_config(repo: Path) -> PrivilegesConfig:
    """``[tool.idemflow.privileges]`` of the project's ``pyproject.toml``: its ``templates`` (glob patterns, relative
    to the project; ``template.yaml`` when not given), its ``tests`` (cheapest first) and the ``explained`` file (each
    surviving deletion's one-sentence reason)."""
    from idemflow.mutants.config import tool_table
    from idemflow.mutants.errors import MutantsConfigError

    pyproject, table, tests = tool_table(repo, "privileges", "its tests and explained file")
    patterns = table.get("templates", ["template.yaml"])
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise MutantsConfigError(f"{pyproject}: [tool.idemflow.privileges] templates must be a list of glob patterns")
    templates: list[Path] = []
    for pattern in patterns:
        templates += [p.relative_to(repo) for p in sorted(repo.glob(pattern)) if p.relative_to(repo) not in templates]
    return PrivilegesConfig(
        templates=tuple(t for t in templates if (repo / t).is_file()),
        tests=tuple(tests),
        explained=Path(str(table.get("explained", "privileges-explained.json"))),
    )


@dataclass(frozen=True)
class TemplateDeletion:
    """A deletion as the campaign runs it: in which template of the project, and that template's new text."""

    id: str
    description: str
    template: Path
    text: str


def summary(outcomes: list[Any], attached: list[str], explained: dict[str, str]) -> str:
    """The campaign's last line. Deletions: refused by a test (killed, or timed out), explained (the file has its
    reason), unexplained (survived without one, or the run failed otherwise); the managed policies SAM attaches are
    counted as explained or unexplained too."""
    from idemflow.mutants.campaign import Verdict

    refused = sum(1 for o in outcomes if o.verdict in (Verdict.KILLED, Verdict.TIMEOUT))
    said = sum(1 for o in outcomes if o.verdict is Verdict.EQUIVALENT) + sum(1 for a in attached if a in explained)
    unsaid = sum(1 for o in outcomes if o.verdict in (Verdict.SURVIVED, Verdict.ERROR))
    unsaid += sum(1 for a in attached if a not in explained)
    return f"privileges: {len(outcomes)} cut, {refused} refused by a test, {said} explained, {unsaid} unexplained"


def main(argv: list[str] | None = None) -> int:
    """``python -m idemflow.mutants.privileges`` (``make privileges``): 0 when every surviving deletion is explained,
    1 otherwise, 2 when the campaign could not run."""
    import argparse
    import sys

    from idemflow.mutants.campaign import (
        DEFAULT_JOBS,
        DEFAULT_TIMEOUT,
        load_equivalent,
        markdown_report,
        report_line,
        run_rewrites,
        stale_entries,
    )
    from idemflow.mutants.errors import MutantsError
    from idemflow.template import TemplateError
    from idemflow.template.loader import load_template

    parser = argparse.ArgumentParser(
        prog="python -m idemflow.mutants.privileges",
        description="Delete each statement, SAM policy template and action of every role the templates write, one at "
        "a time, and run the fast tests against each.",
    )
    parser.add_argument("--tests", nargs="+", metavar="TEST", help="default: [tool.idemflow.privileges] tests")
    parser.add_argument("-k", "--only", metavar="PATTERN", help="only the deletions whose id contains PATTERN")
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS, help="deletions run in parallel (default 2)")
    parser.add_argument("--list", action="store_true", help="print the deletions' ids, run nothing")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS", help="per deletion")
    parser.add_argument("--report", type=Path, metavar="PATH", help="also write the report as Markdown")
    args = parser.parse_args(argv)
    repo = Path.cwd()
    try:
        if args.jobs < 1 or args.timeout <= 0:
            raise MutantsError("--jobs must be at least 1 and --timeout positive")
        try:
            config = load_privileges_config(repo)
            originals = {t: load_template(repo / t) for t in config.templates}
            every = [
                TemplateDeletion(template_id(t, d.id), f"{t}: {d.description}", t, render_template(d.template))
                for t, template in originals.items()
                for d in privilege_deletions(template)
            ]
            attached = [template_id(t, a) for t, template in originals.items() for a in attached_by_sam(template)]
        except (ValueError, TemplateError) as exc:
            raise MutantsError(str(exc)) from exc
        selected = [d for d in every if args.only is None or args.only in d.id]
        if not selected:
            raise MutantsError(f"no deletion id contains {args.only!r} (see --list)")
        explained = load_equivalent(repo / config.explained)
        if args.list:
            for deletion in selected:
                print(f"{deletion.id}: {deletion.description}")
            for name in attached:
                print(f"ATTACHED BY SAM {name}")
            return 0
        tests = args.tests or list(config.tests)
        outcomes = run_rewrites(
            repo,
            Path(sys.executable),
            {t: render_template(template) for t, template in originals.items()},
            selected,
            lambda deletion: {deletion.template: deletion.text},
            explained,
            tests,
            args.jobs,
            args.timeout,
            what="templates",
        )
    except MutantsError as exc:
        print(f"privileges: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("privileges: interrupted", file=sys.stderr)
        return 130
    known = {d.id for d in every} | set(attached)
    warnings = stale_entries(explained, known, outcomes, config.explained)
    for outcome in outcomes:
        print(report_line(outcome))
    lines = []
    for name in attached:
        reason = explained.get(name)
        lines.append(f"ATTACHED BY SAM {name}: {reason}" if reason else f"UNEXPLAINED attached by SAM {name}")
    for line in [*lines, *warnings]:
        print(line)
    last = summary(outcomes, attached, explained)
    if args.report is not None:
        text = markdown_report(outcomes, [], [*lines, *warnings], tests, ", ".join(map(str, config.templates)))
        args.report.write_text(text + f"\n**{last}**\n")
    print(last)
    return 0 if last.endswith(" 0 unexplained") else 1


if __name__ == "__main__":
    raise SystemExit(main())
