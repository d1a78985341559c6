"""Money's due work: settlements, refunds put to the processor, payout steps.

One loop looks in storage every `interval` seconds for what has come due and hands each piece
to the actor that owns it; the actor re-checks under its own serialization, so work that
something else finished first (the sandbox forcing a refund's outcome, a cancel) is a 409 and
is dropped. Because the work is found in storage, nothing due is lost to a restart, and in a
cluster each node reads only the shards it owns, so every piece is done by its owner alone.

Calls to the processor (a refund's outcome) are made here, outside any actor's turn: the payment
actor only applies the answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Awaitable, Sequence
from typing import Any

from mps.actors.company import Settle
from mps.actors.payment import SettleRefund
from mps.actors.periodic import Periodic
from mps.actors.shards import ShardElsewhere, ShardRouter
from mps.adapters.processor import Processor
from mps.domain.clock import Clock, iso
from mps.errors import ServiceError
from mps.persistence.database import Database
from mps.persistence.queries import ledger as ledger_queries
from mps.persistence.queries import refunds as refund_queries
from mps.persistence.statements import Row

__all__ = ["MoneyWork"]

logger = logging.getLogger(__name__)
BATCH = 500
# A processor that does not answer about a refund in this time is asked again on a later pass.
PROCESSOR_DEADLINE = 10.0


class MoneyWork(Periodic):
    def __init__(
        self,
        database: Database,
        shards: ShardRouter,
        clock: Clock,
        processors: dict[str, Processor | None],
        interval: float,
        batch: int = BATCH,
    ) -> None:
        super().__init__(interval)
        self._database = database
        self._shards = shards
        self._clock = clock
        self._processors = processors
        self._batch = batch
        self.settled = 0
        self.refunds_decided = 0
        # When the last pass ended, for /health (the settlement service's "last run").
        self.last_pass: float | None = None

    async def tick(self) -> bool:
        found = max(await self.settle_due(), await self.process_refunds())
        self.last_pass = asyncio.get_running_loop().time()
        # Straight on while passes fill up: a backlog (after downtime) drains at once.
        return found == self._batch

    def _owned(self) -> list[int] | None:
        return sorted(self._shards.owned) if self._shards.clustered else None

    async def settle_due(self) -> int:
        """Settle up to one batch of due credits; returns how many were found."""
        now = iso(self._clock())
        rows = await ledger_queries.due_settlements(self._database, now, self._batch, self._owned())
        by_company: dict[str, list[tuple[str, str, str, int]]] = defaultdict(list)
        for row in rows:
            if self._shards.owns(row["company_id"]):
                by_company[row["company_id"]].append(
                    (row["mode"], row["currency"], row["payment_id"], int(row["amount_minor"]))
                )
        results = await self._each(
            list(by_company),
            [self._shards.ask_company(c, Settle(tuple(due))) for c, due in by_company.items()],
        )
        self.settled += sum(r for r in results if isinstance(r, int))
        return len(rows)

    async def process_refunds(self) -> int:
        """Ask the processor about up to one batch of due refunds and apply its answers."""
        now = iso(self._clock())
        rows = await refund_queries.due(self._database, now, self._batch, self._owned())
        mine = [r for r in rows if self._shards.owns(r["company_id"])]
        results = await self._each([r["id"] for r in mine], [self._decide_refund(r) for r in mine])
        self.refunds_decided += sum(1 for r in results if r is True)
        return len(rows)

    async def _decide_refund(self, row: Row) -> bool:
        processor = self._processors.get(row["mode"])
        if processor is None:
            return False  # no processor for live refunds here: they wait for one
        async with asyncio.timeout(PROCESSOR_DEADLINE):
            answer = await processor.refund(
                row["id"], row["payment_id"], int(row["amount_minor"]), row["currency"]
            )
        if answer.completed is None:
            return False
        command = SettleRefund(row["id"], answer.completed, answer.reason)
        await self._shards.ask_payment(row["company_id"], row["payment_id"], command)
        return True

    async def _each(self, names: Sequence[str], work: Sequence[Awaitable[Any]]) -> list[Any]:
        """Run `work` together; log what failed for a reason other than someone else's win."""
        results = await asyncio.gather(*work, return_exceptions=True)
        for name, result in zip(names, results, strict=True):
            if isinstance(result, ServiceError | ShardElsewhere):
                continue  # another transition won, or the shard moved: its owner will do it
            if isinstance(result, BaseException):
                logger.error("money work for %s failed", name, exc_info=result)
        return list(results)
