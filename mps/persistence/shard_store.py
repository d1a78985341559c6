"""Shard ownership as rows: the epoch a node takes with a shard, and the companies' shards.

Taking a shard is one upsert that bumps its epoch; the persistence layer checks the epochs a
group commit writes under (`Database.write(..., fences=)`), so a node that lost a shard cannot
commit for it however late it wakes up. The epoch only ever grows.
"""

from __future__ import annotations

from mps.domain.shards import shard_of
from mps.persistence.database import Database
from mps.persistence.statements import Statement

__all__ = ["backfill_company_shards", "epochs", "take"]

BACKFILL_BATCH = 500


def take(shard: int, node: str, now: str) -> Statement:
    """Make `node` the owner of `shard` under a new epoch; returns the row with that epoch."""
    return Statement(
        "INSERT INTO shard_epochs (shard, epoch, node, taken_at) VALUES ($1, 1, $2, $3) "
        "ON CONFLICT (shard) DO UPDATE SET epoch = shard_epochs.epoch + 1, "
        "node = excluded.node, taken_at = excluded.taken_at RETURNING epoch",
        (shard, node, now),
    )


async def epochs(db: Database) -> dict[int, tuple[int, str]]:
    """Every shard's current epoch and the node that took it, for health and tests."""
    rows = await db.fetch("SELECT shard, epoch, node FROM shard_epochs")
    return {r["shard"]: (r["epoch"], r["node"]) for r in rows}


async def backfill_company_shards(db: Database) -> int:
    """Fill in the shard of companies created before it was stored; returns how many. Runs at
    start on every node: idempotent, and a row two nodes both fill gets the same value."""
    filled = 0
    while True:
        rows = await db.fetch(
            "SELECT id FROM companies WHERE shard IS NULL ORDER BY id LIMIT $1", BACKFILL_BATCH
        )
        if not rows:
            return filled
        await db.write(
            [
                (
                    Statement(
                        "UPDATE companies SET shard = $1 WHERE id = $2 AND shard IS NULL",
                        (shard_of(r["id"]), r["id"]),
                    ),
                )
                for r in rows
            ]
        )
        filled += len(rows)
