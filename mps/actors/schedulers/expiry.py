"""Payment expiry: PENDING payments past their expiresAt become EXPIRED within seconds.

A loop looks for overdue payments every `interval` seconds (1 s by default) and sends each one's
actor an `Expire`; the actor re-checks under its own serialization, so a checkout or cancel that
got there first simply wins. A pass that found a full batch is followed by another at once, so
a backlog does not drift past the 5 s promise. Because the loop reads storage, payments whose
expiry passed while the service was down are expired on the first passes after start.

Each pass also wakes the actors of payments holding a checkout attempt IN_FLIGHT for longer than
any authorization takes (`SETTLE_AFTER`): a fault left its answer unbooked and no shopper came
back, and the actor's activation settles it (mps.actors.attempts).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from mps.actors.payment import PROCESSOR_DEADLINE, Expire, SettleAttempts
from mps.actors.schedulers.periodic import StoredPass
from mps.actors.shards import ShardRouter
from mps.domain.clock import Clock, iso
from mps.persistence.attempt_store import unsettled_payments
from mps.persistence.database import Database
from mps.persistence.queries import payments as payment_queries

__all__ = ["PaymentExpiry"]

BATCH = 500
# An attempt IN_FLIGHT this long is no authorization still being asked for (those end within
# the processor's deadline) but one a fault left behind.
SETTLE_AFTER = timedelta(seconds=3 * PROCESSOR_DEADLINE)


class PaymentExpiry(StoredPass):
    def __init__(
        self,
        database: Database,
        shards: ShardRouter,
        clock: Clock,
        interval: float,
        batch: int = BATCH,
    ) -> None:
        super().__init__(database, shards, clock, interval)
        self._batch = batch
        self.expired = 0

    async def tick(self) -> bool:
        before = self.expired
        await self.settle_stuck_attempts()
        found = await self.run_once()
        # Straight on only while passes fill up and make progress: a batch of rows that keep
        # failing must not turn this into a busy loop.
        return found == self._batch and self.expired > before

    async def settle_stuck_attempts(self) -> int:
        """Wake the actors of (up to a batch of) payments with an attempt stuck IN_FLIGHT;
        returns how many were found."""
        cutoff = iso(self._clock() - SETTLE_AFTER)
        rows = await unsettled_payments(self._database, cutoff, self._batch)
        await self.each(
            rows,
            lambda r: self._shards.ask_payment(r["company_id"], r["payment_id"], SettleAttempts()),
            "settling %s's checkout attempts failed",
            name=lambda r: str(r["payment_id"]),
            # Waking is all this asks; any failure is only worth a warning, and the next pass
            # wakes the actor again.
            expected=(),
            level=logging.WARNING,
        )
        return len(rows)

    async def run_once(self) -> int:
        """Expire up to one batch of what is overdue now; returns how many overdue payments it
        found (a checkout or cancel may have won some of them in the meantime)."""
        rows = await payment_queries.overdue(
            self._database, iso(self._clock()), self._batch, self.owned()
        )
        done = await self.each(
            rows,
            lambda r: self._shards.ask_payment(r["company_id"], r["id"], Expire()),
            "expiring %s failed",
        )
        self.expired += sum(1 for result in done if result is not None)
        return len(rows)
