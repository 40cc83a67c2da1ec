"""DynamoDB: atomic conditional writes (``atomic-writes``).

``atomic-writes`` (fix): moto's Table.put_item reads the current item, evaluates the ConditionExpression
and then stores the new item, with nothing in between to stop another thread (moto's server and the
interpreter both run requests on threads): two concurrent ``attribute_not_exists`` puts can both see "no
item" and both succeed. One process-wide re-entrant lock around every backend method that reads or
writes items makes each of them atomic (re-entrant: transact_write_items calls get_item/put_item/...
itself). A single lock rather than one per table: transactions span tables, and moto's
transact_write_items deep-copies every table it touches and puts the copies back when one of its
conditions fails, which without the lock also wipes out any write made to those tables meanwhile. The
cost (DynamoDB calls serialised) is small next to the GIL these calls share anyway. Caveat: a table
stream with a Lambda event source mapping invokes the function inside put_item, i.e. under the lock
(same thread: fine, it is re-entrant).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

# -- atomic-writes ------------------------------------------------------------------------------------

DYNAMODB_LOCK: Final = threading.RLock()
DYNAMODB_METHODS: Final[tuple[str, ...]] = (
    "put_item",
    "update_item",
    "delete_item",
    "get_item",
    "transact_write_items",
    "batch_write_item",
    "execute_statement",
    "execute_transaction",
    "batch_execute_statement",
)


def install_atomic_writes(patch: Patch) -> None:
    from moto.dynamodb.models import DynamoDBBackend

    patch.serialize(DynamoDBBackend, DYNAMODB_METHODS, DYNAMODB_LOCK)
