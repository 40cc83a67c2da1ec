"""DynamoDB: the items of a table held in a compact form (``compact-items``, an engine change).

moto 5.2.5 holds each item as Python objects: an ``Item``, a ``LimitedSizeDict`` and one ``DynamoType`` per
attribute (and per element of a map or list), each with its own attribute dictionary. An item of the workflow's
idempotency table (a dozen short strings) weighs about 3 KB that way, and each item stays for as long as the table
does: a long-running engine grows by every record, ledger row and function record its executions write, and the
garbage collector walks all of those objects again on each full collection.

With the change, the items of a table without a sort key are held as one ``bytes`` each (a pickle of the item's
state, attribute values in their DynamoDB types), outside the collector's view, and rebuilt as moto's own ``Item``
when moto reads one. What moto does with an item is unchanged: a request of the backend (GetItem, PutItem,
UpdateItem, DeleteItem, the transactions and batches) reads items through the table's ``items`` as before, and
gets the same ``Item`` each time it asks within that request (UpdateItem changes its item in place); when the
request returns, the items it read are packed again, changes included. A read outside a request (a Query, a Scan,
the engine's own reads) gets a fresh copy of each item it reads. Tables with a sort key keep moto's own store.
"""

from __future__ import annotations

import copy
import functools
import pickle
import threading
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from idemflow.engine.services.dynamodb.atomic_writes import DYNAMODB_METHODS

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch


class _Request(threading.local):
    """The backend request a thread runs now: its depth (a request may call another) and the stores whose items
    it holds unpacked. atomic-writes' lock is held around it: one request at a time."""

    def __init__(self) -> None:
        self.depth = 0
        self.stores: dict[int, CompactItems] = {}


_request: Final = _Request()


def _pack(item: Any) -> Any:
    from moto.dynamodb.models.dynamo_type import Item

    if type(item) is not Item:
        return item  # a defaultdict's empty entry, or anything else: held as it is
    state = dict(vars(item))
    state["attrs"] = dict(item.attrs)
    return pickle.dumps(state, pickle.HIGHEST_PROTOCOL)


def _unpack(held: Any) -> Any:
    from moto.dynamodb.models.dynamo_type import Item, LimitedSizeDict

    if type(held) is not bytes:  # moto's store holds items (or a defaultdict's empty entry), never bytes
        return held
    state = pickle.loads(held)
    attrs = LimitedSizeDict.__new__(LimitedSizeDict)
    dict.update(attrs, state.pop("attrs"))  # as moto's Item.__deepcopy__: no size check on a stored item
    item = object.__new__(Item)
    vars(item).update(state, attrs=attrs)
    return item


class CompactItems(defaultdict[Any, Any]):
    """A table's ``items`` (hash key to item), each item packed, and those the running request reads unpacked
    until it returns."""

    def __init__(self, *_: Any) -> None:  # a copy or pickle passes the default factory: always dict
        super().__init__(dict)
        self.unpacked: dict[Any, Any] = {}

    # -- what moto's Table reads and writes -----------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        live = self.unpacked.get(key)
        if live is not None:
            return live
        try:
            held = dict.__getitem__(self, key)
        except KeyError:
            return self.__missing__(key)
        item = _unpack(held)
        if item is not held and _request.depth:
            self.unpacked[key] = item
            _request.stores[id(self)] = self
        return item

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if dict.__contains__(self, key) else default

    def __setitem__(self, key: Any, value: Any) -> None:
        if _request.depth:
            dict.__setitem__(self, key, value)  # packed when the request returns
            self.unpacked[key] = value
            _request.stores[id(self)] = self
        else:
            self.unpacked.pop(key, None)
            dict.__setitem__(self, key, _pack(value))

    def pop(self, key: Any, *default: Any) -> Any:
        live = self.unpacked.pop(key, None)
        if not dict.__contains__(self, key) and default:
            return default[0]
        held = dict.pop(self, key)
        return live if live is not None else _unpack(held)

    def __delitem__(self, key: Any) -> None:
        self.unpacked.pop(key, None)
        dict.__delitem__(self, key)

    def values(self) -> Any:  # type: ignore[override]
        return [self._read(key, held) for key, held in list(dict.items(self))]

    def items(self) -> Any:  # type: ignore[override]
        return [(key, self._read(key, held)) for key, held in list(dict.items(self))]

    def _read(self, key: Any, held: Any) -> Any:
        live = self.unpacked.get(key)
        return live if live is not None else _unpack(held)

    def __deepcopy__(self, memo: dict[int, Any]) -> CompactItems:
        copied = CompactItems()
        for key, held in dict.items(self):
            live = self.unpacked.get(key)
            dict.__setitem__(copied, key, _pack(copy.deepcopy(live, memo)) if live is not None else held)
        return copied

    # -- the end of a request -----------------------------------------------------------------------
    def pack(self) -> None:
        unpacked, self.unpacked = self.unpacked, {}
        for key, item in unpacked.items():
            if dict.__contains__(self, key):  # not deleted since
                dict.__setitem__(self, key, _pack(item))


def _in_request(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of the backend run as one request: the items it reads stay unpacked until it returns."""

    @functools.wraps(method)
    def request(*args: Any, **kwargs: Any) -> Any:
        _request.depth += 1
        try:
            return method(*args, **kwargs)
        finally:
            _request.depth -= 1
            if _request.depth == 0:
                stores = list(_request.stores.values())
                _request.stores.clear()
                for store in stores:
                    store.pack()

    return request


def install_compact_items(patch: Patch) -> None:
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table

    init = Table.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if self.range_key_attr is None and not self.items:
            self.items = CompactItems()

    patch.set(Table, "__init__", __init__)
    # Installed before atomic-writes, whose lock is then taken around each request and its packing.
    for name in DYNAMODB_METHODS:
        if name in DynamoDBBackend.__dict__:
            patch.set(DynamoDBBackend, name, _in_request(getattr(DynamoDBBackend, name)))
