"""Shards: the unit of ownership of companies between the nodes of a cluster.

A company belongs to shard `crc32(company_id) % SHARD_COUNT`, fixed for the life of the data (the
shard is stored with the company, so changing the count would need a migration). All of a
company's actors live in its shard, so moving a shard to another node moves whole companies and
never splits one.
"""

from __future__ import annotations

import zlib

__all__ = ["SHARD_COUNT", "shard_of"]

SHARD_COUNT = 64


def shard_of(key: str, shard_count: int = SHARD_COUNT) -> int:
    return zlib.crc32(key.encode()) % shard_count
