"""The mutants of a definition: a pure function from the definition (a dict) to the mutants, with stable ids
(``AcquireLock.ConditionExpression#1``, ``RunSideEffect.Catch[1]``, ``CheckRecord.Choices[3].And[1]``):
each DynamoDB condition clause, ``Catch`` and ``Retry`` entry and ``Choice`` rule deleted in turn. Nothing
here runs anything (its unit tests run it on small definitions and the real one)."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

JsonObject = dict[str, Any]

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
