"""Kinesis: a shard's records read and written by one thread at a time (``kinesis-shards``, a fix).

moto keeps a shard's records in an ordered dict and reads them with a loop over it (GetRecords, and the
sequence numbers a shard iterator starts from), while its server and the engine's pipe pollers run requests
on threads of their own: a PutRecord landing during that loop ends the read with "OrderedDict mutated during
iteration" (a 500, and a stream door's poller stopped for good). A
write also numbers its record after the shard's last one (moto's own comment: "this function is not safe
for concurrency"): two puts at once may take the same number, the second record replacing the first. On
AWS a write and a read at once both succeed, and each record is kept under a sequence number of its own,
increasing within its shard (the Kinesis API reference, PutRecord: "Sequence numbers increase over time and
are specific to a shard within a stream").

One process-wide re-entrant lock around every backend method that reads or writes a stream's shards makes
each of them atomic, as ``atomic-writes`` does for DynamoDB: GetRecords, PutRecord(s), GetShardIterator,
ListShards, the resharding operations, and those that describe a stream (they read its shards).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

KINESIS_LOCK: Final = threading.RLock()
_KINESIS_METHODS: Final[tuple[str, ...]] = (
    "create_stream",
    "describe_stream",
    "describe_stream_summary",
    "delete_stream",
    "get_shard_iterator",
    "get_records",
    "put_record",
    "put_records",
    "split_shard",
    "merge_shards",
    "update_shard_count",
    "list_shards",
)


def install_kinesis_shards(patch: Patch) -> None:
    from moto.kinesis.models import KinesisBackend

    patch.serialize(KinesisBackend, _KINESIS_METHODS, KINESIS_LOCK)
