"""Cheaper DynamoDB requests in moto 5.2.5: speedups, not fixes (the same answers, less work).

Every execution makes DynamoDB requests (the state machine's, and a side-effect function's own), and each
of them paid for work that does not depend on the request:

* ``condition-cache``: condition expressions parsed on every request: Powertools' put condition
  alone is 30 tokens. Parses are cached per expression, names and *set of value placeholders*; the
  values themselves are bound into the cached tree per request, so a cache hit does not depend on values
  that change on every call (timestamps, lock tokens);
* ``item-size``: ``Item.__init__`` stores attributes one by one into a dict that re-measures every
  attribute it holds on each insert (O(n²)); the size is now summed once;
* ``update-expression-cache``: update expressions parsed twice per request (handler and backend), and
  never cached;
* ``validator-copy``: the update expression tree deep-copied with ``copy.deepcopy`` before validation: a
  pickle round trip makes the same independent copy, in C;
* ``update-validation-cache``: the update expression tree's own rules (action counts, overlapping paths, key
  attributes: three of the validator's ten passes) checked again on every request;
* ``tree-walk``: each pass over an update expression's tree asked, for every node, which of its node classes
  the node is, through a dict it built again and ``isinstance`` against abstract classes.

Each has a unit test that shows the repeated work without it and the unchanged behaviour with it.
"""

from __future__ import annotations

import copy
import functools
import json
import pickle
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

# -- condition-cache: parsed once per (expression, names, value placeholders) ------------------------
# ConditionExpressionParser substitutes the values while it lexes, so its tree depends on them, but its
# *shape* does not: nothing in the parser looks inside a value, only at where ":name" tokens stand.
# The cache parses once with every value replaced by a placeholder that names it, then, per request,
# copies the tree's Op/Func nodes and swaps each placeholder for the request's value (AttributeValue
# is built exactly as the parser builds it). Errors are not cached: a request that fails to parse
# fails in moto's own parser every time. The parser's side outputs (the names and values it found,
# which the handler checks for unused ones) are cached with the tree.

_PLACEHOLDER: Final = "__idemflow_value__"
MAX_CACHED_CONDITIONS: Final = 1024
_conditions: OrderedDict[tuple[str, str, tuple[str, ...] | None], tuple[Any, tuple[str, ...], tuple[str, ...]]] = (
    OrderedDict()
)
_condition_stats = {"condition_hits": 0, "condition_misses": 0}
_conditions_lock = threading.Lock()


def _bind(node: Any, values: dict[str, Any], memo: dict[int, Any]) -> Any:
    from moto.dynamodb import comparisons

    done = memo.get(id(node))
    if done is not None:
        return done
    bound: Any
    if isinstance(node, comparisons.AttributeValue):
        bound = comparisons.AttributeValue(values[node.value]) if node.type == _PLACEHOLDER else node
    elif isinstance(node, comparisons.Op | comparisons.Func):
        bound = copy.copy(node)
        for name, child in vars(node).items():
            if isinstance(child, tuple | list):
                setattr(bound, name, type(child)(_bind(c, values, memo) for c in child))
            else:
                setattr(bound, name, _bind(child, values, memo))
    else:  # AttributePath and plain values: never hold a request's values
        bound = node
    memo[id(node)] = bound
    return bound


def install_condition_cache(patch: Patch) -> None:
    from moto.dynamodb.comparisons import ConditionExpressionParser

    original = ConditionExpressionParser.parse

    @functools.wraps(original)
    def parse(self: ConditionExpressionParser) -> Any:
        expression = self.condition_expression
        names, values = self.expression_attribute_names, self.expression_attribute_values
        if not expression or not isinstance(names, dict | None) or not isinstance(values, dict | None):
            return original(self)
        key = (expression, json.dumps(names, sort_keys=True), None if values is None else tuple(sorted(values)))
        cached = _conditions.get(key)
        if cached is None:
            _condition_stats["condition_misses"] += 1
            if values is not None:
                self.expression_attribute_values = {name: {_PLACEHOLDER: name} for name in values}
            try:
                tree = original(self)
            finally:
                self.expression_attribute_values = values
            cached = (tree, tuple(self.expr_attr_names_found), tuple(self.expr_attr_values_found))
            with _conditions_lock:
                _conditions[key] = cached
                while len(_conditions) > MAX_CACHED_CONDITIONS:
                    _conditions.popitem(last=False)
        else:
            _condition_stats["condition_hits"] += 1
            self.expr_attr_names_found.extend(cached[1])
            self.expr_attr_values_found.extend(cached[2])
        return _bind(cached[0], values, {}) if values else cached[0]

    patch.set(ConditionExpressionParser, "parse", parse)
    patch.on_undo(_forget_conditions)


# -- item-size: summed once, not again on every attribute ---------------------------------------------
# LimitedSizeDict.__setitem__ sums the size of everything already in the item before each insert,
# so building an item of n attributes measures O(n²) attributes (each DynamoType.size() walks nested
# maps too). Building the dict and then comparing the one total with the same 405,000-byte limit
# raises ItemSizeTooLarge for exactly the same items: the sizes are non-negative, so the last partial
# sum is the largest. LimitedSizeDict keeps its check for later inserts (update expressions).


def install_item_size(patch: Patch) -> None:
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
    from moto.dynamodb.models.utilities import bytesize

    def __init__(self: Item, hash_key: DynamoType, range_key: DynamoType | None, attrs: dict[str, Any]) -> None:
        self.hash_key = hash_key
        self.range_key = range_key
        stored = LimitedSizeDict.__new__(LimitedSizeDict)
        total = 0
        for key, value in attrs.items():
            attribute = DynamoType(value)
            total += bytesize(key) + attribute.size()
            dict.__setitem__(stored, key, attribute)
        if total > 405000:  # moto's limit (LimitedSizeDict.__setitem__)
            raise ItemSizeTooLarge
        self.attrs = stored

    patch.set(Item, "__init__", __init__)


# -- update-expression-cache: parsed once per expression string --------------------------------------
# UpdateExpressionParser.make(expression) depends on the string only (names and values are resolved
# later, by the validator, on its own deep copy of the tree), and update_item calls it twice. The
# cached tree is never modified: the handler only reads it and the validator copies it first.

MAX_CACHED_UPDATE_EXPRESSIONS: Final = 1024


def install_update_expression_cache(patch: Patch) -> None:
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

    original = UpdateExpressionParser.__dict__["make"].__func__

    @functools.lru_cache(maxsize=MAX_CACHED_UPDATE_EXPRESSIONS)
    def parsed(expression: str) -> Any:
        return original(UpdateExpressionParser, expression)

    def make(cls: type[UpdateExpressionParser], expression: str) -> Any:
        if cls is not UpdateExpressionParser or not isinstance(expression, str):
            return original(cls, expression)
        return parsed(expression)

    patch.set(UpdateExpressionParser, "make", classmethod(make))


# -- validator-copy: the update expression tree copied by a pickle round trip -------------------------
# Validator.__init__ deep-copies the tree because its processors replace nodes in place. The tree is
# plain objects (nodes with parent links, strings, DynamoType values): pickle copies it the same way,
# parent links included, in C rather than in Python. Anything pickle refuses falls back to deepcopy.


def _copy(value: Any) -> Any:
    try:
        return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, TypeError, AttributeError):
        return copy.deepcopy(value)


def install_validator_copy(patch: Patch) -> None:
    from moto.dynamodb.parsing import validators

    patch.set(validators, "deepcopy", _copy)


# -- update-validation-cache: a tree's own rules checked once per (tree, names, table keys) -------------
# UpdateExpressionValidator runs ten passes over its copy of the tree. The first three (ActionCountValidator,
# OverlappingPathsValidator, UpdateHashRangeKeyValidator) read only the tree, the attribute names and the
# table's key attributes, and change nothing: each returns the node it is given and raises otherwise. Once a
# whole validation has passed for a tree (the update-expression-cache's: one per expression string), names and
# key attributes, a validator with the same three runs the other seven only, in their order. A validation
# that fails is never remembered: such a request runs every pass, and fails where moto fails.

MAX_VALIDATED_UPDATES: Final = 1024
_ITEM_FREE_PASSES: Final = ("ActionCountValidator", "OverlappingPathsValidator", "UpdateHashRangeKeyValidator")
_ValidationKey = tuple[int, tuple[tuple[str, str], ...], tuple[str, ...]]
_validated: OrderedDict[_ValidationKey, Any] = OrderedDict()
"""Each key's tree itself: held, so that its id is not another tree's while it is remembered."""
_validated_lock = threading.Lock()


def install_update_validation_cache(patch: Patch) -> None:
    from moto.dynamodb.parsing.validators import UpdateExpressionValidator

    init, validate = UpdateExpressionValidator.__init__, UpdateExpressionValidator.validate

    def __init__(self: Any, expression: Any, expression_attribute_names: Any, *args: Any, **kwargs: Any) -> None:
        init(self, expression, expression_attribute_names, *args, **kwargs)
        names = tuple(sorted((expression_attribute_names or {}).items()))
        key: _ValidationKey = (id(expression), names, tuple(self.table.table_key_attrs))
        self._idemflow_unvalidated = (key, expression)
        with _validated_lock:
            known = _validated.get(key) is expression
        if known and tuple(type(p).__name__ for p in self.processors[:3]) == _ITEM_FREE_PASSES:
            self.processors = self.processors[3:]
            self._idemflow_unvalidated = None

    def validated(self: Any) -> Any:
        node = validate(self)
        passed = getattr(self, "_idemflow_unvalidated", None)
        if passed is not None:
            key, expression = passed
            with _validated_lock:
                _validated[key] = expression
                _validated.move_to_end(key)
                while len(_validated) > MAX_VALIDATED_UPDATES:
                    _validated.popitem(last=False)
        return node

    patch.set(UpdateExpressionValidator, "__init__", __init__)
    patch.set(UpdateExpressionValidator, "validate", validated)
    patch.on_undo(_forget_validations)


# -- tree-walk: which processor a node class gets, found once per (pass, node class) -------------------
# DepthFirstTraverser.traverse_node_recursively asks, for every node of the tree and every pass, whether the node is
# a Node, then whether it is one of the classes the pass processes: nodes_to_be_processed() builds the pass's
# processing map (a new dict) for it, and the checks are isinstance against abstract classes (ABCMeta's
# __instancecheck__). process() builds the map again to find the first class that matches. Every moto pass's map
# has the same classes whatever the request (only its bound methods differ), so the answer depends on the pass's
# class and the node's class alone: found once for each pair, the node processed by the same first match, in the
# same order, with the same in-place replacement of the parent's child. A pass that defines its own
# nodes_to_be_processed, process or traverse_node_recursively is walked by moto's code.

_walks: dict[tuple[type, type], type | None] = {}
"""(pass class, node class) -> the first class of the pass's processing map the node is, or None."""
_node_classes: dict[type, bool] = {}
_own_walk: dict[type, bool] = {}


def install_tree_walk(patch: Patch) -> None:
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser, Node  # type: ignore[attr-defined]

    original = DepthFirstTraverser.traverse_node_recursively
    processing = (DepthFirstTraverser.nodes_to_be_processed, DepthFirstTraverser.process)

    def walks_as_moto(cls: type) -> bool:
        known = _own_walk.get(cls)
        if known is None:
            known = _own_walk[cls] = (
                cls.nodes_to_be_processed,  # type: ignore[attr-defined]
                cls.process,  # type: ignore[attr-defined]
                cls.traverse_node_recursively,  # type: ignore[attr-defined]
            ) != (*processing, traverse_node_recursively)
        return known

    def traverse_node_recursively(self: Any, node: Any, child_id: int = -1) -> Any:
        walker = type(self)
        if walks_as_moto(walker):
            return original(self, node, child_id)
        cls = type(node)
        is_node = _node_classes.get(cls)
        if is_node is None:
            is_node = _node_classes[cls] = isinstance(node, Node)
        if is_node:
            parent_node = node.parent
            if node.children is not None:
                for i, child_node in enumerate(node.children):
                    self.pre_processing_of_child(node, i)
                    self.traverse_node_recursively(child_node, i)
            key = (walker, cls)
            if key in _walks:
                processed_as = _walks[key]
            else:
                processed_as = _walks[key] = next((k for k in self._processing_map() if isinstance(node, k)), None)
            if processed_as is not None:
                node = self._processing_map()[processed_as](node)
                node.parent = parent_node
                if parent_node:
                    parent_node.children[child_id] = node
        return node

    patch.set(DepthFirstTraverser, "traverse_node_recursively", traverse_node_recursively)


def _forget_validations() -> None:
    with _validated_lock:
        _validated.clear()


def _forget_conditions() -> None:
    with _conditions_lock:
        _conditions.clear()
        _condition_stats.update(condition_hits=0, condition_misses=0)


def cache_info() -> dict[str, int]:
    """Size and hit counts of the condition cache (tests read them)."""
    return {"conditions": len(_conditions), **_condition_stats}
