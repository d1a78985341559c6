"""Housekeeping: rows whose purpose has passed are deleted, so tables stay bounded.

- idempotency keys past their 24 h (decisions 16);
- sign-in attempts a day old: a code lives 10 minutes and a login an hour, so nothing can use them;
- events past their 30 days of retention (decisions 10).

Deletes go through the persistence actor like every other write. A pass runs at start and then
every `interval` seconds.
"""

from __future__ import annotations

from datetime import timedelta

from mps.actors.context import ActorContext
from mps.actors.periodic import Periodic
from mps.domain.clock import iso
from mps.persistence.statements import Statement

__all__ = ["Housekeeping"]

LOGIN_RETENTION = timedelta(days=1)
EVENT_RETENTION = timedelta(days=30)


class Housekeeping(Periodic):
    def __init__(self, context: ActorContext, interval: float) -> None:
        super().__init__(interval)
        self._context = context

    async def tick(self) -> bool:
        await self.run_once()
        return False

    async def run_once(self) -> tuple[int, int, int]:
        """Delete what has expired; returns (idempotency keys, logins, events) deleted."""
        now = self._context.clock()
        rows = await self._context.commit(
            Statement(
                "DELETE FROM idempotency_keys WHERE expires_at <= $1 RETURNING idem_key",
                (iso(now),),
            ),
            Statement(
                "DELETE FROM logins WHERE created_at <= $1 RETURNING id",
                (iso(now - LOGIN_RETENTION),),
            ),
            Statement(
                "DELETE FROM events WHERE created_at <= $1 RETURNING id",
                (iso(now - EVENT_RETENTION),),
            ),
        )
        return len(rows[0]), len(rows[1]), len(rows[2])
