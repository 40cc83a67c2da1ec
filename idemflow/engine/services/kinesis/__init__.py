"""Kinesis: the streams (``service``) and a shard read and written by one thread at a time (``shards``)."""
