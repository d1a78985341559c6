"""Scoping a scheduler's read to the shards this node owns (mps.actors.shards)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["owned_companies"]


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
