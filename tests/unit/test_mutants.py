"""The mutation generator of ``idemflow.mutants``, on small hand-written definitions and the real one.

Nothing here runs a mutant: the campaign itself is ``make mutants``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from idemflow.mutants import Mutant, clause_deletions, generate, render_definition, split_clauses
from idemflow.mutants.config import load_config
from idemflow.mutants.errors import MutantsConfigError
from tests.paths import PROJECT_ROOT

pytestmark = pytest.mark.unit

RETRY_THROTTLE = {"ErrorEquals": ["DynamoDB.AmazonDynamoDBException"], "MaxAttempts": 3}
RETRY_ALL = {"ErrorEquals": ["States.ALL"], "MaxAttempts": 1}


def task(parameters: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:updateItem", "Parameters": parameters, **fields}


def machine(**states: dict[str, Any]) -> dict[str, Any]:
    return {"StartAt": next(iter(states)), "States": {**states, "Done": {"Type": "Succeed"}}}


def by_id(mutants: list[Mutant]) -> dict[str, Mutant]:
    return {m.id: m for m in mutants}


def test_clauses_split_on_top_level_and_or_only() -> None:
    clauses, separators = split_clauses("attribute_not_exists(id) OR (#status = :c AND #expiresAt <= :now) and #x = :y")
    assert clauses == ["attribute_not_exists(id)", "(#status = :c AND #expiresAt <= :now)", "#x = :y"]
    assert separators == [" OR ", " and "]
    assert split_clauses("#a = :a AND(#b = :b) ORDER")[0] == ["#a = :a", "(#b = :b) ORDER"]


def test_the_and_of_between_does_not_split() -> None:
    clauses, _ = split_clauses("#n BETWEEN :lo AND :hi AND #m = :v")
    assert clauses == ["#n BETWEEN :lo AND :hi", "#m = :v"]


def test_a_nested_clause_can_be_deleted() -> None:
    expression = "attribute_not_exists(id) OR (#status = :c AND #expiresAt <= :now)"
    deletions = {d.path: d for d in clause_deletions(expression)}
    assert set(deletions) == {(0,), (1,), (1, 0), (1, 1)}
    assert deletions[(1, 1)].deleted == "#expiresAt <= :now"
    assert deletions[(1, 1)].result == "attribute_not_exists(id) OR (#status = :c)"
    assert deletions[(1, 0)].result == "attribute_not_exists(id) OR (#expiresAt <= :now)"
    assert deletions[(0,)].result == "(#status = :c AND #expiresAt <= :now)"
    assert deletions[(1,)].result == "attribute_not_exists(id)"


def test_groups_nest_to_any_depth_and_under_not() -> None:
    deletions = {d.path: d.result for d in clause_deletions("NOT (#a = :a OR (#b = :b AND #c = :c)) AND #d = :d")}
    assert deletions[(0, 1, 0)] == "NOT (#a = :a OR (#c = :c)) AND #d = :d"
    assert deletions[(0, 0)] == "NOT ((#b = :b AND #c = :c)) AND #d = :d"
    assert sorted(deletions) == [(0,), (0, 0), (0, 1), (0, 1, 0), (0, 1, 1), (1,)]
    unspaced = {d.path: d.result for d in clause_deletions("#d = :d AND NOT(#a = :a OR #b = :b)")}
    assert unspaced[(1, 1)] == "#d = :d AND NOT(#a = :a)"


def test_function_calls_and_side_by_side_groups_are_not_groups() -> None:
    deletions = clause_deletions("attribute_exists(#a) AND size(#b) > :n")
    assert [d.path for d in deletions] == [(0,), (1,)]
    side_by_side = clause_deletions("(#a = :a) OR (#b = :b)")
    assert [d.path for d in side_by_side] == [(0,), (1,)]


def test_deleting_a_clause_prunes_only_the_names_and_values_it_orphaned() -> None:
    definition = machine(
        Save=task(
            {
                "UpdateExpression": "SET #status = :done",
                "ConditionExpression": "#token = :mine AND #status = :running",
                "ExpressionAttributeNames": {"#status": "status", "#token": "lockToken"},
                "ExpressionAttributeValues": {":done": {"S": "DONE"}, ":mine": {"S.$": "$.t"}, ":running": {"S": "R"}},
            },
            Next="Done",
        )
    )
    mutants = by_id(generate(definition).mutants)
    first = mutants["Save.ConditionExpression#0"].definition["States"]["Save"]["Parameters"]
    assert first["ConditionExpression"] == "#status = :running"
    assert first["ExpressionAttributeNames"] == {"#status": "status"}
    assert first["ExpressionAttributeValues"] == {":done": {"S": "DONE"}, ":running": {"S": "R"}}
    second = mutants["Save.ConditionExpression#1"].definition["States"]["Save"]["Parameters"]
    assert second["ConditionExpression"] == "#token = :mine"
    # #status stays: the UpdateExpression still uses it.
    assert second["ExpressionAttributeNames"] == {"#status": "status", "#token": "lockToken"}
    assert set(second["ExpressionAttributeValues"]) == {":done", ":mine"}


def test_deleting_the_only_clause_deletes_the_condition_and_emptied_maps() -> None:
    definition = machine(
        Put=task(
            {
                "TableName": "${IdempotencyTableName}",
                "ConditionExpression": "attribute_not_exists(#id)",
                "ExpressionAttributeNames": {"#id": "id"},
            },
            Next="Done",
        )
    )
    [mutant] = generate(definition).mutants
    assert mutant.id == "Put.ConditionExpression#0"
    assert mutant.definition["States"]["Put"]["Parameters"] == {"TableName": "${IdempotencyTableName}"}


def test_each_retry_and_catch_entry_is_deleted_and_an_emptied_array_goes() -> None:
    catch_conflict = {"ErrorEquals": ["DynamoDB.ConditionalCheckFailedException"], "Next": "Done"}
    catch_all = {"ErrorEquals": ["States.ALL"], "Next": "Done"}
    definition = machine(
        Work=task({}, Retry=[RETRY_THROTTLE, RETRY_ALL], Catch=[catch_conflict, catch_all], Next="Done"),
        Read=task({}, Retry=[RETRY_THROTTLE], Next="Done"),
    )
    mutants = by_id(generate(definition).mutants)
    assert list(mutants) == ["Work.Retry[0]", "Work.Retry[1]", "Work.Catch[0]", "Work.Catch[1]", "Read.Retry[0]"]
    assert mutants["Work.Retry[0]"].definition["States"]["Work"]["Retry"] == [RETRY_ALL]
    assert mutants["Work.Catch[1]"].definition["States"]["Work"]["Catch"] == [catch_conflict]
    assert mutants["Work.Catch[1]"].definition["States"]["Work"]["Next"] == "Done"
    assert "Retry" not in mutants["Read.Retry[0]"].definition["States"]["Read"]
    assert "DynamoDB.ConditionalCheckFailedException -> Done" in mutants["Work.Catch[0]"].description


def test_each_choice_rule_is_deleted_but_a_single_rule_is_left_alone() -> None:
    present = {"Variable": "$.a", "IsPresent": True, "Next": "Done"}
    empty = {"Variable": "$.a", "StringEquals": "", "Next": "Done"}
    definition = machine(
        Check={"Type": "Choice", "Choices": [present, empty], "Default": "Only"},
        Only={"Type": "Choice", "Choices": [present], "Default": "Done"},
    )
    generation = generate(definition)
    mutants = by_id(generation.mutants)
    assert list(mutants) == ["Check.Choices[0]", "Check.Choices[1]"]
    assert mutants["Check.Choices[0]"].definition["States"]["Check"]["Choices"] == [empty]
    assert mutants["Check.Choices[1]"].definition["States"]["Check"]["Default"] == "Only"
    assert [site.id for site in generation.not_mutable] == ["Only.Choices[0]"]


def test_and_or_operands_are_deleted_one_at_a_time() -> None:
    a = {"Variable": "$.a", "IsPresent": True}
    b = {"Variable": "$.b", "BooleanEquals": False}
    c = {"Variable": "$.c", "NumericLessThan": 3}
    d = {"Variable": "$.d", "StringEquals": "x"}
    rules = [
        {"And": [a, b, c], "Next": "Done"},
        {"Or": [a, {"And": [c, d]}], "Next": "Done"},
        {"Not": {"Or": [b, d]}, "Next": "Done"},
    ]
    definition = machine(Check={"Type": "Choice", "Choices": rules, "Default": "Done"})
    mutants = {m.id: m.definition["States"]["Check"]["Choices"] for m in generate(definition).mutants}
    assert mutants["Check.Choices[0].And[1]"][0] == {"And": [a, c], "Next": "Done"}
    # One operand left: it replaces the Or, and the rule keeps its Next.
    assert mutants["Check.Choices[1].Or[1]"][1] == {**a, "Next": "Done"}
    assert mutants["Check.Choices[1].Or[1].And[0]"][1] == {"Or": [a, d], "Next": "Done"}
    assert mutants["Check.Choices[2].Not.Or[0]"][2] == {"Not": d, "Next": "Done"}
    assert len(mutants) == 3 + 3 + 2 + 2 + 2  # rules, And of rule 0, Or and inner And of rule 1, Not.Or of rule 2


def test_states_inside_parallel_branches_and_maps_are_mutated() -> None:
    branch = {"StartAt": "Inner", "States": {"Inner": task({}, Retry=[RETRY_ALL], End=True)}}
    processor = {"StartAt": "Item", "States": {"Item": task({}, Retry=[RETRY_THROTTLE], End=True)}}
    definition = machine(
        Fan={"Type": "Parallel", "Branches": [branch], "Next": "Each"},
        Each={"Type": "Map", "ItemProcessor": processor, "Next": "Done"},
    )
    mutants = by_id(generate(definition).mutants)
    assert list(mutants) == ["Inner.Retry[0]", "Item.Retry[0]"]
    assert "Retry" not in mutants["Inner.Retry[0]"].definition["States"]["Fan"]["Branches"][0]["States"]["Inner"]
    assert "Retry" not in mutants["Item.Retry[0]"].definition["States"]["Each"]["ItemProcessor"]["States"]["Item"]


def test_ids_are_stable_and_unique_and_the_original_is_untouched() -> None:
    definition = machine(
        Save=task(
            {"ConditionExpression": "#a = :a AND (#b = :b OR #c = :c)", "ExpressionAttributeNames": {}},
            Retry=[RETRY_THROTTLE],
            Catch=[{"ErrorEquals": ["States.ALL"], "Next": "Done"}],
            Next="Check",
        ),
        Check={"Type": "Choice", "Choices": [{"Variable": "$.x", "IsNull": True, "Next": "Done"}] * 2},
    )
    before = copy.deepcopy(definition)
    first, second = generate(definition).mutants, generate(definition).mutants
    assert definition == before
    ids = [m.id for m in first]
    assert ids == [m.id for m in second]
    assert len(ids) == len(set(ids)) == 8
    first[0].definition["States"]["Save"]["Parameters"]["ConditionExpression"] = "changed"
    assert definition == before and second[0].definition != first[0].definition


def test_the_project_declares_what_the_campaign_mutates_and_runs(tmp_path: Path) -> None:
    config = load_config(Path.cwd())  # the tests run from the project's root, as make mutants does

    assert config.definition.suffix == ".json" and (config.repo / config.definition).is_file()
    assert config.tests and all((config.repo / t.split("::")[0]).exists() for t in config.tests)
    assert isinstance(json.loads((config.repo / config.equivalent).read_text()), dict)
    with pytest.raises(MutantsConfigError, match=r"no \[tool.idemflow.mutants\] table"):
        load_config(tmp_path)


def test_the_real_definition_yields_every_kind_and_each_mutant_changes_it() -> None:
    config = load_config(Path.cwd())
    text = (config.repo / config.definition).read_text()
    definition = json.loads(text)
    mutants = generate(definition).mutants
    for marker in (".ConditionExpression#", ".Catch[", ".Retry[", ".Choices["):
        assert any(marker in m.id for m in mutants), f"no {marker} mutant"
    placeholders = text.count("${")
    for mutant in mutants:
        assert mutant.definition != definition, mutant.id
        rendered = render_definition(mutant.definition)
        assert json.loads(rendered) == mutant.definition
        assert 0 < rendered.count("${") <= placeholders, mutant.id  # substitutions kept as they were
        assert mutant.definition["StartAt"] == definition["StartAt"]


def test_only_is_repeatable_and_selects_the_mutants_any_pattern_names(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from idemflow.mutants.__main__ import main

    monkeypatch.chdir(PROJECT_ROOT)
    assert main(["--list", "-k", "CheckChildFailure.Choices[0]", "-k", "RunSideEffectStateMachine.Retry[0]"]) == 0

    listed = [line.split(":")[0] for line in capsys.readouterr().out.splitlines() if not line.startswith("NOT")]
    assert listed == ["RunSideEffectStateMachine.Retry[0]", "CheckChildFailure.Choices[0]"]
