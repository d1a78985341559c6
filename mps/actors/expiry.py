"""Payment expiry: PENDING payments past their expiresAt become EXPIRED within seconds.

A loop looks for overdue payments every `interval` seconds (1 s by default) and sends each one's
actor an `Expire`; the actor re-checks under its own serialization, so a checkout or cancel that
got there first simply wins. A pass that found a full batch is followed by another at once, so
a backlog does not drift past the 5 s promise. Because the loop reads storage, payments whose
expiry passed while the service was down are expired on the first passes after start.
"""

from __future__ import annotations

import asyncio
import logging

from mps.actors.payment import Expire
from mps.actors.periodic import Periodic
from mps.actors.shards import ShardRouter
from mps.domain.clock import Clock, iso
from mps.errors import ServiceError
from mps.persistence.database import Database
from mps.persistence.queries import payments as payment_queries

__all__ = ["PaymentExpiry"]

logger = logging.getLogger(__name__)
BATCH = 500


class PaymentExpiry(Periodic):
    def __init__(
        self,
        database: Database,
        shards: ShardRouter,
        clock: Clock,
        interval: float,
        batch: int = BATCH,
    ) -> None:
        super().__init__(interval)
        self._database = database
        self._shards = shards
        self._clock = clock
        self._batch = batch
        self.expired = 0

    async def tick(self) -> bool:
        before = self.expired
        found = await self.run_once()
        # Straight on only while passes fill up and make progress: a batch of rows that keep
        # failing must not turn this into a busy loop.
        return found == self._batch and self.expired > before

    async def run_once(self) -> int:
        """Expire up to one batch of what is overdue now; returns how many overdue payments it
        found (a checkout or cancel may have won some of them in the meantime)."""
        # In a cluster only the owned shards' payments: each is expired by its owner alone,
        # and after a failover the new owner finds what was due in storage.
        owned = sorted(self._shards.owned) if self._shards.clustered else None
        rows = await payment_queries.overdue(self._database, iso(self._clock()), self._batch, owned)
        mine = [r for r in rows if self._shards.owns(r["company_id"])]
        results = await asyncio.gather(
            *(self._shards.ask_payment(r["company_id"], r["id"], Expire()) for r in mine),
            return_exceptions=True,
        )
        for row, result in zip(mine, results, strict=True):
            if isinstance(result, ServiceError):
                continue  # someone else's transition won; nothing to do
            if isinstance(result, BaseException):
                logger.error("expiring %s failed", row["id"], exc_info=result)
            elif result is not None:
                self.expired += 1
        return len(rows)
