"""Outbox reads for operations: how far event dispatch is behind.

Not a tenant's data: it answers one timestamp across every company, for the metrics scrape.
"""

from __future__ import annotations

from mps.persistence.database import Database

__all__ = ["oldest_undispatched"]


async def oldest_undispatched(db: Database) -> str | None:
    """`created_at` of the oldest event not yet dispatched, or None when none waits. The first
    row of the `events_outbox` index (created_at, id), which holds only undispatched events."""
    value = await db.fetchval(
        "SELECT created_at FROM events WHERE dispatched_at IS NULL ORDER BY created_at LIMIT 1"
    )
    return None if value is None else str(value)
