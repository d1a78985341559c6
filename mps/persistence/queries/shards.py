"""Scoping a scheduler's read to the shards this node owns (mps.actors.shards)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mps.persistence.database import Database
from mps.persistence.statements import Row

__all__ = ["DueScan", "due_in_shards", "owned_companies"]


def owned_companies(column: str, shards: Sequence[int] | None) -> str | None:
    """An `AND` condition keeping the rows whose company (`column`) is in `shards`: "" for every
    company (`shards` None: one process owns them all), None when `shards` is empty (there is
    nothing to read)."""
    if shards is None:
        return ""
    if not shards:
        return None
    # Integers of our own making, so written into the SQL: one text for both backends.
    owned = ", ".join(str(int(s)) for s in shards)
    return f"AND {column} IN (SELECT id FROM companies WHERE shard IN ({owned}))"


async def due_in_shards(
    db: Database, sql: str, column: str, shards: Sequence[int] | None, now: str, limit: int
) -> list[Row]:
    """The rows of a scheduler's scan for due work: `sql`, with `{scope}` where the condition
    on the companies' `column` goes (`owned_companies`), `$1` the time and `$2` the limit.
    None when `shards` is empty."""
    scope = owned_companies(column, shards)
    if scope is None:
        return []
    return await db.fetch(sql.format(scope=scope), now, limit)


@dataclass(frozen=True)
class DueScan:
    """A scheduler's read of what is due, called as `(db, now, limit, shards)`: up to `limit`
    rows of `sql` (`due_in_shards`: `$1` the time, `$2` the limit, `{scope}` the condition on
    the companies' `column`), of every company when `shards` is None. `shards` has no
    default: a scheduler that forgot it would scan other nodes' shards without a word."""

    sql: str
    column: str = "company_id"

    async def __call__(
        self, db: Database, now: str, limit: int, shards: Sequence[int] | None
    ) -> list[Row]:
        return await due_in_shards(db, self.sql, self.column, shards, now, limit)
