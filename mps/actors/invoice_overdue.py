"""Invoices become OVERDUE once their due date has passed (decisions 8).

A loop looks in storage for SENT invoices past their due date and sends each one's actor a
`MarkInvoiceOverdue`; the actor checks again under its own serialization, so a mark-paid or
void that got there first wins. Found in storage, so invoices whose due date passed while the
service was down are marked on the first pass after start; in a cluster each node reads the
shards it owns.
"""

from __future__ import annotations

import asyncio
import logging

from mps.actors.invoice import MarkInvoiceOverdue
from mps.actors.periodic import Periodic
from mps.actors.shards import ShardElsewhere, ShardRouter
from mps.domain.clock import Clock, iso
from mps.errors import ServiceError
from mps.persistence.database import Database
from mps.persistence.queries import invoices as queries

__all__ = ["InvoiceOverdue"]

logger = logging.getLogger(__name__)
BATCH = 500


class InvoiceOverdue(Periodic):
    def __init__(
        self, database: Database, shards: ShardRouter, clock: Clock, interval: float
    ) -> None:
        super().__init__(interval)
        self._database = database
        self._shards = shards
        self._clock = clock
        self.marked = 0

    async def tick(self) -> bool:
        return await self.run_once() == BATCH

    async def run_once(self) -> int:
        owned = sorted(self._shards.owned) if self._shards.clustered else None
        rows = await queries.overdue(self._database, iso(self._clock()), BATCH, owned)
        mine = [r for r in rows if self._shards.owns(r["company_id"])]
        results = await asyncio.gather(
            *(
                self._shards.ask_invoice(r["company_id"], r["id"], MarkInvoiceOverdue())
                for r in mine
            ),
            return_exceptions=True,
        )
        for row, result in zip(mine, results, strict=True):
            if isinstance(result, ServiceError | ShardElsewhere):
                continue  # paid or voided first, or the shard moved: nothing to do here
            if isinstance(result, BaseException):
                logger.error("marking invoice %s overdue failed", row["id"], exc_info=result)
            else:
                self.marked += 1
        return len(rows)
