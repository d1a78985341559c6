"""Reconciliation (decisions 5, 14): on a schedule, the ledger against the payments, refunds and
payouts that moved its money, the balance snapshots against the postings they sum, and the
ledger's own zero sum.

Each node checks the companies of the shards it owns, so in a cluster every company is checked
by exactly one node and the pass scales out with the shards. A mismatch is logged as an error
and shown on /health (`reconciliation` degraded, `ledger` down when the postings do not sum to
zero); both report when the last pass ran, so a pass that stopped running is visible too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from mps.actors.schedulers.periodic import ShardPass
from mps.actors.shards import ShardRouter
from mps.persistence.database import Database
from mps.persistence.queries import ledger as ledger_queries
from mps.persistence.queries.reconciliation import Mismatch, mismatches

__all__ = ["Reconciliation", "ReconciliationResult"]

logger = logging.getLogger(__name__)
# How long /health waits for the first pass after a start before saying it is still running.
FIRST_PASS_WAIT = 2.0


@dataclass(frozen=True)
class ReconciliationResult:
    at: float  # loop time of the pass
    mismatches: list[Mismatch] = field(default_factory=list)
    # The sum of every posting of the whole ledger: zero, or money was made or lost.
    zero_sum: int = 0
    unbalanced: list[str] = field(default_factory=list)


class Reconciliation(ShardPass):
    def __init__(self, database: Database, shards: ShardRouter, interval: float) -> None:
        super().__init__(shards, interval)
        # Whole-table scans: on SQLite a connection of their own, so requests' reads never
        # queue behind a pass (seconds at a million payments).
        self._database = database.scans()
        self.last: ReconciliationResult | None = None
        self._passed = asyncio.Event()

    async def tick(self) -> bool:
        self.last = await self.run_once()
        self._passed.set()
        return False

    async def latest(self, wait: float | None = None) -> ReconciliationResult | None:
        """The last pass's result. Before the first has finished, it is waited for up to
        `wait` seconds (None if it is still running then); a reconciliation that is not
        running on its schedule makes a pass of its own. Nothing is reported unchecked."""
        if self.last is None and not self.running:
            self.last = await self.run_once()
        if self.last is None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(FIRST_PASS_WAIT if wait is None else wait):
                    await self._passed.wait()
        return self.last

    async def run_once(self) -> ReconciliationResult:
        owned = self.owned()
        found = await mismatches(self._database, owned)
        total = await ledger_queries.zero_sum(self._database)
        unbalanced = await ledger_queries.unbalanced(self._database) if total != 0 else []
        for mismatch in found:
            logger.error("reconciliation mismatch: %s", mismatch)
        if total != 0:
            logger.error(
                "the ledger's postings sum to %d, not zero; unbalanced transactions: %s",
                total,
                ", ".join(unbalanced) or "none found (a posting without its transaction?)",
            )
        return ReconciliationResult(asyncio.get_running_loop().time(), found, total, unbalanced)
