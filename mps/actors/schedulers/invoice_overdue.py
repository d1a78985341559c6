"""Invoices become OVERDUE once their due date has passed (decisions 8).

A loop looks in storage for SENT invoices past their due date and sends each one's actor a
`MarkInvoiceOverdue`; the actor checks again under its own serialization, so a mark-paid or
void that got there first wins. Found in storage, so invoices whose due date passed while the
service was down are marked on the first pass after start; in a cluster each node reads the
shards it owns.
"""

from __future__ import annotations

from mps.actors.invoice import MarkInvoiceOverdue
from mps.actors.schedulers.periodic import StoredPass
from mps.actors.shards import ShardRouter
from mps.domain.clock import Clock, iso
from mps.persistence.database import Database
from mps.persistence.queries import invoices as queries

__all__ = ["InvoiceOverdue"]

BATCH = 500


class InvoiceOverdue(StoredPass):
    def __init__(
        self, database: Database, shards: ShardRouter, clock: Clock, interval: float
    ) -> None:
        super().__init__(database, shards, clock, interval)
        self.marked = 0

    async def tick(self) -> bool:
        return await self.run_once() == BATCH

    async def run_once(self) -> int:
        rows = await queries.overdue(self._database, iso(self._clock()), BATCH, self.owned())
        # Paid or voided first, or the shard moved: nothing to do for that row here.
        marked = await self.each(
            rows,
            lambda r: self._shards.ask_invoice(r["company_id"], r["id"], MarkInvoiceOverdue()),
            "marking invoice %s overdue failed",
        )
        self.marked += len(marked)
        return len(rows)
