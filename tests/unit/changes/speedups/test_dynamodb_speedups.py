"""DynamoDB speedups (``dynamodb_speedups.py``): ``condition-cache``, ``item-size``, ``update-expression-cache``,
``validator-copy``, ``update-validation-cache``, ``tree-walk``; each left out and put back. For each, the work
moto 5.2.5 repeats without it, and the same answers with it (success, stored item, error code and message), compared
request by request."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from idemflow.engine import registry
from idemflow.engine.services.dynamodb import speedups as dynamodb_speedups
from tests.unit.changes.speedups.compare import (
    TABLE,
    both_ways,
    counting,
    outcome,
    without_speedups,
)

pytestmark = [pytest.mark.unit, pytest.mark.usefixtures("restore_registry")]


# ---------------------------------------------------------------------------------------------
# condition-cache
# ---------------------------------------------------------------------------------------------
# Powertools' put condition, as a function using its idempotency sends it (its values change on every call).
POWERTOOLS_CONDITION = (
    "attribute_not_exists(#id) OR #expiry < :now OR "
    "(#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)"
)
POWERTOOLS_NAMES = {"#id": "id", "#expiry": "expiration", "#status": "status", "#in_progress_expiry": "ipe"}


def powertools_put(client: Any, key: str, now: int) -> Any:
    return client.put_item(
        TableName=TABLE,
        Item={"id": {"S": key}, "expiration": {"N": str(now + 60)}, "status": {"S": "INPROGRESS"}},
        ConditionExpression=POWERTOOLS_CONDITION,
        ExpressionAttributeNames=POWERTOOLS_NAMES,
        ExpressionAttributeValues={
            ":now": {"N": str(now)},
            ":now_in_millis": {"N": str(now * 1000)},
            ":inprogress": {"S": "INPROGRESS"},
        },
    )


def test_unpatched_moto_5_2_5_parses_a_condition_on_every_request(
    moto_only: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.dynamodb.comparisons import ConditionExpressionParser

    lexed = counting(monkeypatch, ConditionExpressionParser, "_lex_condition_expression")

    for i in range(5):
        powertools_put(ddb, f"k{i}", 1_700_000_000 + i)

    assert len(lexed) == 2 * 5  # the handler parses it to check the names used, the table to evaluate it


def test_patched_parses_a_condition_once_whatever_its_values(
    fast: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.dynamodb.comparisons import ConditionExpressionParser

    lexed = counting(monkeypatch, ConditionExpressionParser, "_lex_condition_expression")

    for i in range(5):
        powertools_put(ddb, f"k{i}", 1_700_000_000 + i)

    assert len(lexed) == 1
    assert dynamodb_speedups.cache_info()["condition_hits"] == 2 * 5 - 1


def test_patched_binds_each_requests_values_into_the_cached_condition(fast: None, ddb: Any) -> None:
    ddb.put_item(TableName=TABLE, Item={"id": {"S": "n"}, "n": {"N": "5"}})

    def put_if_below(limit: int) -> Any:
        return outcome(
            lambda: ddb.put_item(
                TableName=TABLE,
                Item={"id": {"S": "n"}, "n": {"N": str(limit)}},
                ConditionExpression="#n < :limit",
                ExpressionAttributeNames={"#n": "n"},
                ExpressionAttributeValues={":limit": {"N": str(limit)}},
            )
        )

    # The same expression three times: the condition holds or not depending on this request's value.
    assert put_if_below(3)[:2] == ("error", "ConditionalCheckFailedException")
    assert put_if_below(10)[0] == "ok"
    assert put_if_below(7)[:2] == ("error", "ConditionalCheckFailedException")  # n is 10 now
    assert dynamodb_speedups.cache_info() == {"conditions": 1, "condition_hits": 2 * 3 - 1, "condition_misses": 1}


CONDITION_CASES: list[dict[str, Any]] = [
    {"ConditionExpression": "attribute_not_exists(id)"},
    {"ConditionExpression": "attribute_exists(id)"},
    {
        "ConditionExpression": "#s = :a AND (size(#s) > :n OR begins_with(#s, :p))",
        "ExpressionAttributeNames": {"#s": "s"},
        "ExpressionAttributeValues": {":a": {"S": "abc"}, ":n": {"N": "1"}, ":p": {"S": "ab"}},
    },
    {
        "ConditionExpression": "#s IN (:a, :b) OR #m.#k BETWEEN :lo AND :hi",
        "ExpressionAttributeNames": {"#s": "s", "#m": "m", "#k": "k"},
        "ExpressionAttributeValues": {
            ":a": {"S": "x"},
            ":b": {"S": "abc"},
            ":lo": {"N": "1"},
            ":hi": {"N": "9"},
        },
    },
    {
        "ConditionExpression": "attribute_type(#s, :t)",
        "ExpressionAttributeNames": {"#s": "s"},
        "ExpressionAttributeValues": {":t": {"S": "S"}},
    },
    {
        "ConditionExpression": "NOT contains(#s, :c)",
        "ExpressionAttributeNames": {"#s": "s"},
        "ExpressionAttributeValues": {":c": {"S": "b"}},
    },
    # moto's errors: an unused value, a missing value, a missing name, a syntax error.
    {"ConditionExpression": "attribute_exists(id)", "ExpressionAttributeValues": {":unused": {"S": "x"}}},
    {
        "ConditionExpression": "#s = :missing",
        "ExpressionAttributeNames": {"#s": "s"},
        "ExpressionAttributeValues": {":a": {"S": "x"}},
    },
    {"ConditionExpression": "#missing = :a", "ExpressionAttributeValues": {":a": {"S": "x"}}},
    {"ConditionExpression": "s = = :a", "ExpressionAttributeValues": {":a": {"S": "x"}}},
]


def test_patched_conditions_answer_like_moto(fast: None) -> None:
    def requests(client: Any) -> list[Any]:
        client.put_item(TableName=TABLE, Item={"id": {"S": "i"}, "s": {"S": "abc"}, "m": {"M": {"k": {"N": "4"}}}})
        results = []
        for _ in range(2):  # the second round is served from the cache
            for case in CONDITION_CASES:
                results.append(
                    outcome(lambda case=case: client.put_item(TableName=TABLE, Item={"id": {"S": "new"}}, **case))
                )
                results.append(
                    outcome(
                        lambda case=case: client.update_item(
                            TableName=TABLE,
                            Key={"id": {"S": "i"}},
                            UpdateExpression="SET #touched = :one",
                            **{
                                **case,
                                "ExpressionAttributeNames": {
                                    **case.get("ExpressionAttributeNames", {}),
                                    "#touched": "t",
                                },
                                "ExpressionAttributeValues": {
                                    **case.get("ExpressionAttributeValues", {}),
                                    ":one": {"N": "1"},
                                },
                            },
                        )
                    )
                )
                client.delete_item(TableName=TABLE, Key={"id": {"S": "new"}})
        results.append(outcome(lambda: client.get_item(TableName=TABLE, Key={"id": {"S": "i"}})))
        return results

    moto_answers, fast_answers = both_ways(requests)

    assert fast_answers == moto_answers
    assert {a[0] for a in moto_answers} == {"ok", "error", "raised"}  # the cases do exercise each


# ---------------------------------------------------------------------------------------------
# item-size
# ---------------------------------------------------------------------------------------------
def measured_attributes(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    from moto.dynamodb.models.dynamo_type import DynamoType

    return counting(monkeypatch, DynamoType, "size")


WIDE_ITEM = {"id": {"S": "wide"}, **{f"a{i:03d}": {"S": "v" * 10} for i in range(200)}}


def test_unpatched_moto_5_2_5_measures_an_item_in_quadratic_time(
    moto_only: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = measured_attributes(monkeypatch)

    ddb.put_item(TableName=TABLE, Item=WIDE_ITEM)

    assert len(sizes) >= 201 * 200 // 2


def test_patched_measures_each_attribute_once(fast: None, ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = measured_attributes(monkeypatch)

    ddb.put_item(TableName=TABLE, Item=WIDE_ITEM)

    assert len(sizes) <= 2 * 201  # once to store, and moto's own checks before it
    assert ddb.get_item(TableName=TABLE, Key={"id": {"S": "wide"}})["Item"] == WIDE_ITEM


def test_patched_item_size_limit_is_moto_s(fast: None) -> None:
    def requests(client: Any) -> list[Any]:
        just_under = 405000 - len("id") - len("u") - len("big") - 1000
        return [
            outcome(lambda: client.put_item(TableName=TABLE, Item={"id": {"S": "u"}, "big": {"S": "x" * just_under}})),
            outcome(lambda: client.put_item(TableName=TABLE, Item={"id": {"S": "o"}, "big": {"S": "x" * 405001}})),
            # Over the limit only in total, over many attributes.
            outcome(
                lambda: client.put_item(
                    TableName=TABLE, Item={"id": {"S": "t"}, **{f"a{i}": {"S": "x" * 5000} for i in range(90)}}
                )
            ),
            outcome(lambda: client.scan(TableName=TABLE, Select="COUNT")),
        ]

    moto_answers, fast_answers = both_ways(requests)

    assert fast_answers == moto_answers
    assert [a[0] for a in moto_answers] == ["ok", "error", "error", "ok"]


# ---------------------------------------------------------------------------------------------
# update-expression-cache, validator-copy
# ---------------------------------------------------------------------------------------------
def save_result(client: Any, key: str, amount: int) -> Any:
    return client.update_item(
        TableName=TABLE,
        Key={"id": {"S": key}},
        UpdateExpression="SET #status = :status, #result = :result, #attempts = if_not_exists(#attempts, :zero) + :one",
        ExpressionAttributeNames={"#status": "status", "#result": "result", "#attempts": "attempts"},
        ExpressionAttributeValues={
            ":status": {"S": "COMPLETED"},
            ":result": {"M": {"amount": {"N": str(amount)}}},
            ":zero": {"N": "0"},
            ":one": {"N": "1"},
        },
        ReturnValues="ALL_NEW",
    )


def tokenized(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    from moto.dynamodb.parsing.tokens import ExpressionTokenizer

    return counting(monkeypatch, ExpressionTokenizer, "make_list")


def test_unpatched_moto_5_2_5_parses_an_update_expression_twice_per_request(
    moto_only: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = tokenized(monkeypatch)

    for amount in range(3):
        save_result(ddb, "u", amount)

    assert len(tokens) == 6


def test_patched_parses_an_update_expression_once(fast: None, ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = tokenized(monkeypatch)

    answers = [save_result(ddb, "u", amount)["Attributes"] for amount in range(3)]

    assert len(tokens) == 1
    # The cached tree is never changed by a request: each one applies its own values.
    assert [(a["result"]["M"]["amount"]["N"], a["attempts"]["N"]) for a in answers] == [
        ("0", "1"),
        ("1", "2"),
        ("2", "3"),
    ]


UPDATE_CASES: list[dict[str, Any]] = [
    {"UpdateExpression": "SET a = :v, b = :v", "ExpressionAttributeValues": {":v": {"N": "1"}}},
    {"UpdateExpression": "SET a = a + :v REMOVE b", "ExpressionAttributeValues": {":v": {"N": "2"}}},
    {
        "UpdateExpression": "SET #l = list_append(if_not_exists(#l, :e), :v)",
        "ExpressionAttributeNames": {"#l": "l"},
        "ExpressionAttributeValues": {":e": {"L": []}, ":v": {"L": [{"S": "x"}]}},
    },
    {"UpdateExpression": "ADD c :s DELETE d :s", "ExpressionAttributeValues": {":s": {"SS": ["p"]}}},
    {"UpdateExpression": "SET m.k = :v", "ExpressionAttributeValues": {":v": {"S": "deep"}}},
    # moto's errors: overlapping paths, an unknown placeholder, a syntax error, a key attribute.
    {"UpdateExpression": "SET a = :v, a = :v", "ExpressionAttributeValues": {":v": {"N": "1"}}},
    {"UpdateExpression": "SET a = :nope", "ExpressionAttributeValues": {":v": {"N": "1"}}},
    {"UpdateExpression": "SET = :v", "ExpressionAttributeValues": {":v": {"N": "1"}}},
    {"UpdateExpression": "SET id = :v", "ExpressionAttributeValues": {":v": {"S": "other"}}},
]


def test_patched_updates_answer_like_moto(fast: None) -> None:
    def requests(client: Any) -> list[Any]:
        client.put_item(
            TableName=TABLE, Item={"id": {"S": "i"}, "a": {"N": "1"}, "m": {"M": {}}, "d": {"SS": ["p", "q"]}}
        )
        answers = []
        for _ in range(2):
            for case in UPDATE_CASES:
                answers.append(
                    outcome(
                        lambda case=case: client.update_item(
                            TableName=TABLE, Key={"id": {"S": "i"}}, ReturnValues="ALL_NEW", **case
                        )
                    )
                )
        return answers

    moto_answers, fast_answers = both_ways(requests)

    assert fast_answers == moto_answers
    assert {a[0] for a in moto_answers} == {"ok", "error"}


def copy_module_calls(call: Callable[[], Any]) -> int:
    """Python-level calls into the copy module (deepcopy's recursion) while call() runs."""
    copy_file = str(Path(inspect.getfile(__import__("copy"))))
    calls = 0

    def profiler(frame: FrameType, event: str, _: Any) -> None:
        nonlocal calls
        if event == "call" and frame.f_code.co_filename == copy_file:
            calls += 1

    sys.setprofile(profiler)
    try:
        call()
    finally:
        sys.setprofile(None)
    return calls


def test_unpatched_moto_5_2_5_deep_copies_the_update_tree_in_python(moto_only: None, ddb: Any) -> None:
    save_result(ddb, "c", 1)

    assert copy_module_calls(lambda: save_result(ddb, "c", 2)) > 200


def test_patched_copies_the_update_tree_without_deepcopy(fast: None, ddb: Any) -> None:
    save_result(ddb, "c", 1)

    # What is left is moto's copy of the stored item (Item.__deepcopy__), for ReturnValues.
    assert copy_module_calls(lambda: save_result(ddb, "c", 2)) < 50


def test_copy_is_deep_and_keeps_parent_links() -> None:
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

    tree = UpdateExpressionParser.make("SET a = :v, b.c = if_not_exists(b.c, :w)")
    copied = dynamodb_speedups._copy(tree)

    from moto.dynamodb.parsing.ast_nodes import Node

    def nodes(node: Any) -> Iterator[Any]:
        yield node
        for child in node.children or []:
            if isinstance(child, Node):
                yield from nodes(child)

    originals, copies = list(nodes(tree)), list(nodes(copied))
    assert [type(n) for n in copies] == [type(n) for n in originals]
    assert not {id(n) for n in copies} & {id(n) for n in originals}
    for node in copies[1:]:
        if hasattr(node, "parent") and node.parent is not None:
            assert any(node.parent is c for c in copies)


# ---------------------------------------------------------------------------------------------
# apply() / remove()
# ---------------------------------------------------------------------------------------------
def test_each_speedup_is_left_out_and_put_back() -> None:
    from moto.core import responses
    from moto.dynamodb.comparisons import ConditionExpressionParser
    from moto.dynamodb.models.dynamo_type import Item
    from moto.dynamodb.parsing import validators
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser

    def current() -> tuple[Any, ...]:
        return (
            ConditionExpressionParser.parse,
            Item.__init__,
            validators.deepcopy,
            responses.method_names_from_class,
            DepthFirstTraverser.traverse_node_recursively,
        )

    registry.remove()
    originals = current()
    without_speedups()
    assert current() == originals

    registry.apply()
    registry.apply()
    applied = current()
    registry.remove()

    assert all(a is not o for a, o in zip(applied, originals, strict=True))
    assert current() == originals
    assert registry.left_out() is None


# ---------------------------------------------------------------------------------------------
# update-validation-cache
# ---------------------------------------------------------------------------------------------
def validator_passes(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Each pass an update expression's validator runs over its tree, in order: (pass, tree) per call."""
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser

    return counting(monkeypatch, DepthFirstTraverser, "traverse")


def names(passes: list[Any]) -> list[str]:
    return [type(processor).__name__ for processor, _ in passes]


def test_unpatched_moto_5_2_5_checks_an_update_trees_own_rules_on_every_request(
    moto_only: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    passes = validator_passes(monkeypatch)

    for amount in range(3):
        save_result(ddb, "v", amount)

    ran = names(passes)
    validations = ran.count("EmptyStringKeyValueValidator")  # the last pass: one per validation
    assert validations >= 3
    for own_rule in ("ActionCountValidator", "OverlappingPathsValidator", "UpdateHashRangeKeyValidator"):
        assert ran.count(own_rule) == validations


def test_patched_checks_an_update_trees_own_rules_once(fast: None, ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    passes = validator_passes(monkeypatch)

    answers = [save_result(ddb, "v", amount)["Attributes"] for amount in range(3)]

    ran = names(passes)
    assert ran.count("EmptyStringKeyValueValidator") >= 3  # every validation still runs the item's passes
    assert ran.count("ActionCountValidator") == ran.count("UpdateHashRangeKeyValidator") == 1
    assert [a["attempts"]["N"] for a in answers] == ["1", "2", "3"]


def test_patched_update_validations_answer_like_moto_whatever_the_names_and_table(fast: None) -> None:
    # The same expression text, valid with some names on one table, refused with other names (a key attribute,
    # an overlap) or on a table whose key is the attribute it sets: a remembered validation must not answer.
    def requests(client: Any) -> list[Any]:
        client.create_table(
            TableName="keyed-by-a",
            KeySchema=[{"AttributeName": "a", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "a", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.put_item(TableName="keyed-by-a", Item={"a": {"S": "i"}})
        values = {":v": {"S": "1"}, ":w": {"S": "2"}}
        cases = [
            (TABLE, "id", "SET #k = :v", {"#k": "a"}),
            (TABLE, "id", "SET #k = :v", {"#k": "id"}),  # a key attribute
            (TABLE, "id", "SET #k = :v", {"#k": "a"}),
            ("keyed-by-a", "a", "SET #k = :v", {"#k": "a"}),  # the same names: this table's key
            (TABLE, "id", "SET #k = :v, #l = :w", {"#k": "a", "#l": "b"}),
            (TABLE, "id", "SET #k = :v, #l = :w", {"#k": "a", "#l": "a"}),  # overlapping paths
            (TABLE, "id", "SET a = :v SET b = :w", None),  # two SET clauses
        ]
        answers = []
        for _ in range(2):
            for table, key, expression, names in cases:
                extra = {"ExpressionAttributeNames": names} if names else {}
                answers.append(
                    outcome(
                        lambda table=table, key=key, expression=expression, extra=extra: client.update_item(
                            TableName=table,
                            Key={key: {"S": "i"}},
                            UpdateExpression=expression,
                            ExpressionAttributeValues={k: v for k, v in values.items() if k in expression},
                            ReturnValues="ALL_NEW",
                            **extra,
                        )
                    )
                )
        return answers

    moto_answers, fast_answers = both_ways(requests)

    assert fast_answers == moto_answers
    assert [a[0] for a in moto_answers[:7]] == ["ok", "error", "ok", "error", "ok", "error", "error"]


# ---------------------------------------------------------------------------------------------
# tree-walk
# ---------------------------------------------------------------------------------------------
def processing_maps(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Each time a pass over an update expression's tree asks which node classes it processes."""
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser

    return counting(monkeypatch, DepthFirstTraverser, "nodes_to_be_processed")


def test_unpatched_moto_5_2_5_asks_a_passs_node_classes_for_every_node(
    moto_only: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = processing_maps(monkeypatch)

    save_result(ddb, "w", 1)

    assert len(asked) > 50  # every node of the tree, in each of the passes


def test_patched_walks_an_update_tree_without_asking_per_node(
    fast: None, ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = processing_maps(monkeypatch)

    answers = [save_result(ddb, "w", amount)["Attributes"] for amount in range(3)]

    assert asked == []
    assert [(a["result"]["M"]["amount"]["N"], a["attempts"]["N"]) for a in answers] == [
        ("0", "1"),
        ("1", "2"),
        ("2", "3"),
    ]


def test_patched_a_pass_with_its_own_node_classes_is_walked_by_moto(fast: None) -> None:
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser, UpdateExpressionPath
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

    seen: list[str] = []

    class OwnClasses(DepthFirstTraverser):  # type: ignore[misc]
        def _processing_map(self) -> dict[type, Callable[[Any], Any]]:
            return {UpdateExpressionPath: self.path}

        def nodes_to_be_processed(self) -> tuple[type, ...]:
            seen.append("asked")
            return (UpdateExpressionPath,)

        def path(self, node: Any) -> Any:
            seen.append("path")
            return node

    OwnClasses().traverse(UpdateExpressionParser.make("SET a = :v, b = :w"))

    assert "asked" in seen
    assert seen.count("path") == 2
