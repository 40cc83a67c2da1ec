"""DynamoDB: the items of a table held in a compact form (``compact-items``, an engine change).

moto 5.2.5 holds each item as Python objects: an ``Item``, a ``LimitedSizeDict`` and one ``DynamoType`` per
attribute (and per element of a map or list), each with its own attribute dictionary. An item of the workflow's
idempotency table (a dozen short strings) weighs about 3 KB that way, and each item stays for as long as the table
does: a long-running engine grows by every record, ledger row and function record its executions write, and the
garbage collector walks all of those objects again on each full collection.

With the change, the items of a table without a sort key are held as one ``bytes`` each, outside the collector's
view, and rebuilt as moto's own ``Item`` when moto reads one. The bytes are the item's keys and attributes as plain
values (each attribute its name, DynamoDB type and value; maps and lists nested the same way) in ``marshal``'s
format, deflated with a dictionary of the table's own: the first item of each shape among the first items the table
packs (``DICTIONARY_ITEMS``), held plain until then. Items of one table share most of their text (attribute names,
ARNs, timestamps' prefixes, the JSON keys of a stored result), and each item is packed alone: the dictionary is
what they share. An item that ``marshal`` cannot hold as it is (a value of another type, an attribute value held
twice) is held as a pickle.

What moto does with an item is unchanged: a request of the backend (GetItem, PutItem, UpdateItem, DeleteItem, the
transactions and batches) reads items through the table's ``items`` as before, and gets the same ``Item`` each time
it asks within that request (UpdateItem changes its item in place); when the request returns, the items it read are
packed again, changes included. A read outside a request (a Query, a Scan, the engine's own reads) gets a fresh
copy of each item it reads. Tables with a sort key keep moto's own store.
"""

from __future__ import annotations

import copy
import functools
import marshal
import pickle
import threading
import zlib
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


_PICKLED: Final = 0x80
"""The first byte of an item held as a pickle (pickle's PROTO opcode)."""
_PLAIN: Final = 0x00
"""The first byte of an item held as its flat form in ``marshal``'s format."""
_DEFLATED: Final = 0x01
"""The first byte of an item held as that, deflated with its store's dictionary."""

DICTIONARY_BYTES: Final = 4096
"""At most this many bytes in a table's dictionary."""
DICTIONARY_ITEMS: Final = 256
"""A table's dictionary: the flat form of the first item of each shape (its attributes' names) among the first
items the table packs, this many, or fewer once they fill ``DICTIONARY_BYTES``. Enough for the shapes a table's
writers take in turn (the workflow's record is written in progress, then completed, a few requests later: with
executions running side by side, their first writes come first)."""

_WINDOW_BITS: Final = 13
"""Raw deflate (no header) with an 8 KB window: the dictionary and an item of up to 4 KB in reach."""
_MARSHAL_VERSION: Final = 4
_SCALARS: Final = frozenset({str, bytes, bool, int, float, type(None)})
_learning: Final = threading.Lock()


class _Unplain(Exception):
    """An item's value that ``marshal`` would not give back as it is: the item is held as a pickle."""


@functools.cache
def _moto_types() -> tuple[Any, Any, Any]:
    from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict

    return DynamoType, Item, LimitedSizeDict


def _plain_value(value: Any, seen: list[int]) -> tuple[Any, Any]:
    """A ``DynamoType`` as a plain tuple (type, value), maps and lists nested the same way; the ids of the objects
    it holds that a request could change in place added to ``seen``."""
    if type(value) is not _moto_types()[0]:  # moto 5.2.5's DynamoType holds its type and value only
        raise _Unplain
    seen.append(id(value))
    kind, inner = value.type, value.value
    if type(kind) is not str:
        raise _Unplain
    if type(inner) in _SCALARS:
        return kind, inner
    if kind == "L" and type(inner) is list:
        return kind, [_plain_value(element, seen) for element in inner]
    if kind == "M" and type(inner) is dict:
        return kind, {_name(name): _plain_value(element, seen) for name, element in inner.items()}
    if type(inner) is list and all(type(element) in _SCALARS for element in inner):  # sets: SS, NS, BS
        seen.append(id(inner))
        return kind, inner
    raise _Unplain


def _name(name: Any) -> str:
    if type(name) is not str:
        raise _Unplain
    return name


def _dynamo_value(plain: tuple[str, Any]) -> Any:
    kind, inner = plain
    if kind == "L" and type(inner) is list:
        inner = [_dynamo_value(element) for element in inner]
    elif kind == "M" and type(inner) is dict:
        inner = {name: _dynamo_value(element) for name, element in inner.items()}
    value = object.__new__(_moto_types()[0])
    value.type = kind
    value.value = inner
    return value


def _flat(item: Any) -> tuple[Any, ...]:
    """The item's keys and attributes as plain values: (hash key, range key, name, value, name, value...), each
    value a plain (type, value). moto 5.2.5's ``Item`` holds its keys and attributes only."""
    dynamo_type, _, limited_size_dict = _moto_types()
    attrs = item.attrs
    if type(attrs) is not limited_size_dict:
        raise _Unplain
    seen: list[int] = []
    hash_key, range_key = item.hash_key, item.range_key
    flat: list[Any] = [
        None if hash_key is None else _plain_value(hash_key, seen),
        None if range_key is None else _plain_value(range_key, seen),
    ]
    append = flat.append
    for name, value in dict.items(attrs):
        if type(name) is not str:
            raise _Unplain
        append(name)
        if type(value) is dynamo_type and type(value.value) in _SCALARS and type(value.type) is str:
            seen.append(id(value))
            append((value.type, value.value))
        else:
            append(_plain_value(value, seen))
    if len(set(seen)) != len(seen):  # a value held twice: a change in place would change both, as in moto
        raise _Unplain
    return tuple(flat)


def _from_flat(data: bytes) -> Any:
    dynamo_type, item_class, limited_size_dict = _moto_types()
    flat = marshal.loads(data)
    attrs = limited_size_dict.__new__(limited_size_dict)
    new = object.__new__
    for index in range(2, len(flat), 2):  # as moto's Item.__deepcopy__: no size check on a stored item
        plain = flat[index + 1]
        kind, inner = plain
        if type(inner) is list or type(inner) is dict:
            value = _dynamo_value(plain)
        else:
            value = new(dynamo_type)
            value.type = kind
            value.value = inner
        dict.__setitem__(attrs, flat[index], value)
    item = new(item_class)
    hash_key, range_key = flat[0], flat[1]
    item.hash_key = None if hash_key is None else _dynamo_value(hash_key)
    item.range_key = None if range_key is None else _dynamo_value(range_key)
    item.attrs = attrs
    return item


def _held_key(key: Any) -> Any:
    """A hash key as the store holds it: a string (type S) as its ``str``; any other in a 1-tuple (a tuple and a
    ``str`` are never equal, and two tuples compare their keys as moto's dict does)."""
    if type(key) is _moto_types()[0] and key.type == "S" and type(key.value) is str:
        return key.value
    return (key,)


def _key(held_key: Any) -> Any:
    """The hash key moto holds for ``held_key``: a ``DynamoType`` equal to the one the item was written with."""
    if type(held_key) is tuple:
        return held_key[0]
    key = object.__new__(_moto_types()[0])
    key.type = "S"
    key.value = held_key
    return key


def _unpickle(held: bytes) -> Any:
    from moto.dynamodb.models.dynamo_type import Item, LimitedSizeDict

    state = pickle.loads(held)
    attrs = LimitedSizeDict.__new__(LimitedSizeDict)
    dict.update(attrs, state.pop("attrs"))  # as moto's Item.__deepcopy__: no size check on a stored item
    item = object.__new__(Item)
    vars(item).update(state, attrs=attrs)
    return item


class CompactItems(defaultdict[Any, Any]):
    """A table's ``items`` (hash key to item), each item packed, and those the running request reads unpacked
    until it returns. A string key is held as its ``str`` (:func:`_held_key`), not as moto's ``DynamoType``; moto
    reads and writes with its ``DynamoType`` keys as before."""

    def __init__(self, *_: Any) -> None:  # a copy or pickle passes the default factory: always dict
        super().__init__(dict)
        self.unpacked: dict[Any, Any] = {}
        self.dictionary = b""
        """Made of the first items packed (``DICTIONARY_ITEMS``); never changed after."""
        self._samples: dict[tuple[str, ...], bytes] = {}
        self._seen = 0

    # -- an item packed, and unpacked -----------------------------------------------------------------
    def _pack(self, item: Any) -> Any:
        if type(item) is not _moto_types()[1]:
            return item  # a defaultdict's empty entry, or anything else: held as it is
        try:
            flat = _flat(item)
            data = marshal.dumps(flat, _MARSHAL_VERSION)
        except (_Unplain, ValueError):  # ValueError: marshal's, for an object it cannot write
            state = dict(vars(item))
            state["attrs"] = dict(item.attrs)
            return pickle.dumps(state, pickle.HIGHEST_PROTOCOL)
        dictionary = self.dictionary
        if not dictionary:
            self._learn(flat[2::2], data)
            return bytes((_PLAIN,)) + data
        deflate = zlib.compressobj(1, zlib.DEFLATED, -_WINDOW_BITS, 6, zlib.Z_DEFAULT_STRATEGY, dictionary)
        deflated = deflate.compress(data) + deflate.flush()
        if len(deflated) >= len(data):
            return bytes((_PLAIN,)) + data
        return bytes((_DEFLATED,)) + deflated

    def _learn(self, shape: tuple[str, ...], data: bytes) -> None:
        """Keep the item's flat form ``data`` for the dictionary if it is the first of its ``shape``; make the
        dictionary once enough items are seen. Items of one table take a few shapes (a record in progress, then
        completed; another writer's items), and concurrent requests write the same shape first."""
        with _learning:
            if self.dictionary:
                return
            self._seen += 1
            self._samples.setdefault(shape, data)
            joined = b"".join(self._samples.values())
            if self._seen >= DICTIONARY_ITEMS or len(joined) >= DICTIONARY_BYTES:
                self.dictionary = joined[:DICTIONARY_BYTES]
                self._samples = {}

    def _unpack(self, held: Any) -> Any:
        if type(held) is not bytes:  # moto's store holds items (or a defaultdict's empty entry), never bytes
            return held
        form = held[0]
        if form == _DEFLATED:
            inflate = zlib.decompressobj(-_WINDOW_BITS, self.dictionary)
            return _from_flat(inflate.decompress(held[1:]) + inflate.flush())
        if form == _PLAIN:
            return _from_flat(held[1:])
        assert form == _PICKLED
        return _unpickle(held)

    # -- what moto's Table reads and writes -----------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        held_key = _held_key(key)
        live = self.unpacked.get(held_key)
        if live is not None:
            return live
        try:
            held = dict.__getitem__(self, held_key)
        except KeyError:
            return self.__missing__(key)
        item = self._unpack(held)
        if item is not held and _request.depth:
            self.unpacked[held_key] = item
            _request.stores[id(self)] = self
        return item

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, _held_key(key))

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if dict.__contains__(self, _held_key(key)) else default

    def __setitem__(self, key: Any, value: Any) -> None:
        held_key = _held_key(key)
        if _request.depth:
            dict.__setitem__(self, held_key, value)  # packed when the request returns
            self.unpacked[held_key] = value
            _request.stores[id(self)] = self
        else:
            self.unpacked.pop(held_key, None)
            dict.__setitem__(self, held_key, self._pack(value))

    def pop(self, key: Any, *default: Any) -> Any:
        held_key = _held_key(key)
        live = self.unpacked.pop(held_key, None)
        if not dict.__contains__(self, held_key):
            if default:
                return default[0]
            raise KeyError(key)
        held = dict.pop(self, held_key)
        return live if live is not None else self._unpack(held)

    def __delitem__(self, key: Any) -> None:
        held_key = _held_key(key)
        if not dict.__contains__(self, held_key):
            raise KeyError(key)
        self.unpacked.pop(held_key, None)
        dict.__delitem__(self, held_key)

    def keys(self) -> Any:  # type: ignore[override]
        return [_key(held_key) for held_key in list(dict.keys(self))]

    def __iter__(self) -> Any:
        return iter(self.keys())

    def values(self) -> Any:  # type: ignore[override]
        return [self._read(held_key, held) for held_key, held in list(dict.items(self))]

    def items(self) -> Any:  # type: ignore[override]
        return [(_key(held_key), self._read(held_key, held)) for held_key, held in list(dict.items(self))]

    def _read(self, held_key: Any, held: Any) -> Any:
        live = self.unpacked.get(held_key)
        return live if live is not None else self._unpack(held)

    def __deepcopy__(self, memo: dict[int, Any]) -> CompactItems:
        copied = CompactItems()
        copied.dictionary, copied._samples, copied._seen = self.dictionary, dict(self._samples), self._seen
        for key, held in dict.items(self):
            live = self.unpacked.get(key)
            dict.__setitem__(copied, key, copied._pack(copy.deepcopy(live, memo)) if live is not None else held)
        return copied

    # -- the end of a request -----------------------------------------------------------------------
    def pack(self) -> None:
        unpacked, self.unpacked = self.unpacked, {}
        for key, item in unpacked.items():
            if dict.__contains__(self, key):  # not deleted since
                dict.__setitem__(self, key, self._pack(item))


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
