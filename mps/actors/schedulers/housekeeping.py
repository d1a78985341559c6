"""Housekeeping: rows whose purpose has passed are deleted, so tables stay bounded.

- idempotency keys past their 24 h (decisions 16);
- sign-in attempts a day old: a code lives 10 minutes and a login an hour, so nothing can use them;
- events past their 30 days of retention (decisions 10);
- API-key request log entries past 30 days, the events' retention (the contract names none);
- webhook deliveries and their attempts past 30 days, with their events;
- sessions that expired or were revoked more than a day ago: their tokens are refused already
  (a token whose session has no row is refused too), so the rows serve nothing; the day of
  margin, as for sign-in attempts, keeps a session that only just ended inspectable.

Deletes go through the persistence actor like every other write, in bounded batches: each
statement deletes at most `batch` rows and is its own commit, and the next batch is sent only
after the loop had a turn, so a large backlog (the first pass after a long outage) becomes many
small transactions that other writers' commits interleave with, never one that holds the single
writer for long. A table is done when a batch deletes fewer than `batch` rows.

A pass runs at start and then every `interval` seconds, on the node for which `when` holds: in a
cluster, the owner of shard 0, so one node does it (should two overlap during a hand-over, a row
both select is deleted by one, and the other simply deletes fewer).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import NamedTuple

from mps.actors.context import ActorContext
from mps.actors.schedulers.periodic import Periodic
from mps.domain.clock import iso
from mps.persistence import retention
from mps.persistence.retention import Retention

__all__ = ["BATCH", "Housekeeping", "Swept"]

LOGIN_RETENTION = timedelta(days=1)
EVENT_RETENTION = timedelta(days=30)
KEY_LOG_RETENTION = timedelta(days=30)
SESSION_RETENTION = timedelta(days=1)
BATCH = 1000


class Swept(NamedTuple):
    """Rows one pass deleted, per table."""

    idempotency_keys: int
    logins: int
    events: int
    key_logs: int
    sessions: int
    deliveries: int
    attempts: int


class Housekeeping(Periodic):
    def __init__(
        self,
        context: ActorContext,
        interval: float,
        *,
        batch: int = BATCH,
        when: Callable[[], bool] = lambda: True,
    ) -> None:
        super().__init__(interval)
        self._context = context
        self.batch = batch
        self._when = when

    async def tick(self) -> bool:
        if self._when():
            await self.run_once()
        return False

    async def run_once(self) -> Swept:
        """Delete everything past its retention now, table by table, batch by batch."""
        now = self._context.clock()
        return Swept(
            idempotency_keys=await self._sweep(retention.IDEMPOTENCY_KEYS, iso(now)),
            logins=await self._sweep(retention.LOGINS, iso(now - LOGIN_RETENTION)),
            events=await self._sweep(retention.EVENTS, iso(now - EVENT_RETENTION)),
            key_logs=await self._sweep(retention.API_KEY_LOGS, iso(now - KEY_LOG_RETENTION)),
            sessions=await self._sweep(retention.SESSIONS, iso(now - SESSION_RETENTION)),
            deliveries=await self._sweep(retention.WEBHOOK_DELIVERIES, iso(now - EVENT_RETENTION)),
            attempts=await self._sweep(retention.WEBHOOK_ATTEMPTS, iso(now - EVENT_RETENTION)),
        )

    async def _sweep(self, rule: Retention, cutoff: str) -> int:
        deleted = 0
        while True:
            [rows] = await self._context.commit(rule.delete_batch(cutoff, self.batch))
            deleted += len(rows)
            if len(rows) < self.batch:
                return deleted
            # Let the requests that queued up meanwhile run (and send their commits) first.
            await asyncio.sleep(0)
