"""Housekeeping: rows whose purpose has passed are deleted, so tables stay bounded.

- idempotency keys past their 24 h (decisions 16);
- sign-in attempts a day old: a code lives 10 minutes and a login an hour, so nothing can use them;
- events past their 30 days of retention (decisions 10).

Deletes go through the persistence actor like every other write. A pass runs at start and then
every `interval` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

from mps.actors.context import ActorContext
from mps.domain.clock import iso
from mps.persistence.statements import Statement

__all__ = ["Housekeeping"]

logger = logging.getLogger(__name__)
LOGIN_RETENTION = timedelta(days=1)
EVENT_RETENTION = timedelta(days=30)


class Housekeeping:
    def __init__(self, context: ActorContext, interval: float) -> None:
        self._context = context
        self._interval = interval
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            try:
                await self.run_once()
            except Exception:
                logger.exception("housekeeping pass failed; retrying later")
            await asyncio.sleep(self._interval)

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
