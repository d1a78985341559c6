"""Money's due work: settlements, refunds put to the processor, payout steps.

One loop looks in storage every `interval` seconds for what has come due and hands each piece
to the actor that owns it; the actor re-checks under its own serialization, so work that
something else finished first (the sandbox forcing a refund's outcome, a cancel) is a 409 and
is dropped. Because the work is found in storage, nothing due is lost to a restart, and in a
cluster each node reads only the shards it owns, so every piece is done by its owner alone.

Calls to the processor (a refund's outcome) and to the bank (a payout's steps) are made here,
outside any actor's turn: the actors only apply the answers.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta

from mps.actors.company import AdvancePayout, RunPayoutSchedule, Settle
from mps.actors.company.payouts import BANK_ACCOUNT_NUMBER_PURPOSE
from mps.actors.payment import SettleRefund
from mps.actors.schedulers.periodic import StoredPass
from mps.actors.shards import ShardRouter
from mps.adapters.bank import Bank
from mps.adapters.processor import Processor
from mps.auth.keyring import Keyring
from mps.domain.clock import Clock, iso
from mps.persistence.database import Database
from mps.persistence.queries import ledger as ledger_queries
from mps.persistence.queries import payouts as payout_queries
from mps.persistence.queries import refunds as refund_queries
from mps.persistence.statements import Row

__all__ = ["MoneyWork"]

BATCH = 500
# A processor or bank that does not answer in this time is asked again on a later pass.
PROCESSOR_DEADLINE = 10.0

# A read of what is due: (database, now, limit, shards) -> rows.
_DueQuery = Callable[[Database, str, int, Sequence[int] | None], Awaitable[list[Row]]]


class MoneyWork(StoredPass):
    def __init__(
        self,
        database: Database,
        shards: ShardRouter,
        clock: Clock,
        processors: dict[str, Processor | None],
        banks: dict[str, Bank | None],
        keyring: Keyring,
        interval: float,
        batch: int = BATCH,
    ) -> None:
        super().__init__(database, shards, clock, interval)
        self._processors = processors
        self._banks = banks
        self._keyring = keyring
        self._batch = batch
        self.settled = 0
        self.refunds_decided = 0
        self.payout_steps = 0
        # When the last pass ended, for /health (the settlement service's "last run").
        self.last_pass: float | None = None

    async def tick(self) -> bool:
        found = max(
            await self.settle_due(),
            await self.process_refunds(),
            await self.advance_payouts(),
            await self.run_schedules(),
        )
        self.last_pass = asyncio.get_running_loop().time()
        # Straight on while passes fill up: a backlog (after downtime) drains at once.
        return found == self._batch

    async def probe(self) -> dict[str, str]:
        """The `settlement` service of /health: settlements, refunds and payout steps due for
        more than a minute (read from storage), and how long ago the last pass ran."""
        loop = asyncio.get_running_loop()
        minute_ago = iso(self._clock() - timedelta(minutes=1))
        owned = self.owned()
        late = (
            len(await ledger_queries.due_settlements(self._database, minute_ago, 100, owned))
            + len(await refund_queries.due(self._database, minute_ago, 100, owned))
            + len(await payout_queries.due(self._database, minute_ago, 100, owned))
        )
        since = None if self.last_pass is None else loop.time() - self.last_pass
        ran = "no pass finished yet" if since is None else f"last pass {since:.1f}s ago"
        stalled = since is not None and since > max(30.0, 10 * self.interval)
        if late or stalled:
            return {"status": "degraded", "detail": f"{late} pieces of work overdue; {ran}"}
        return {"status": "up", "detail": f"nothing overdue; {ran}"}

    async def _due(self, query: _DueQuery) -> list[Row]:
        """Up to one batch of the rows `query` finds due now, of the shards this node owns."""
        return await query(self._database, iso(self._clock()), self._batch, self.owned())

    async def settle_due(self) -> int:
        """Settle up to one batch of due credits; returns how many were found."""
        rows = await self._due(ledger_queries.due_settlements)
        # One Settle per company, carrying all of its due credits.
        by_company: dict[str, list[tuple[str, str, str, int]]] = defaultdict(list)
        for row in rows:
            by_company[row["company_id"]].append(
                (row["mode"], row["currency"], row["payment_id"], int(row["amount_minor"]))
            )
        results = await self.each(
            [{"company_id": c, "due": tuple(due)} for c, due in by_company.items()],
            lambda c: self._shards.ask_company(c["company_id"], Settle(c["due"])),
            _FAILED,
            name=_company,
        )
        self.settled += sum(r for r in results if isinstance(r, int))
        return len(rows)

    async def process_refunds(self) -> int:
        """Ask the processor about up to one batch of due refunds and apply its answers."""
        rows = await self._due(refund_queries.due)
        results = await self.each(rows, self._decide_refund, _FAILED)
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

    async def advance_payouts(self) -> int:
        """Take the bank's next step of up to one batch of open payouts that are due."""
        rows = await self._due(payout_queries.due)
        results = await self.each(rows, self._step, _FAILED)
        self.payout_steps += sum(1 for r in results if r is True)
        return len(rows)

    async def run_schedules(self) -> int:
        """Start the automatic payouts whose schedule has come due."""
        rows = await self._due(payout_queries.due_schedules)
        await self.each(
            rows,
            lambda r: self._shards.ask_company(
                r["company_id"], RunPayoutSchedule(r["mode"], r["next_run_at"])
            ),
            _FAILED,
            name=_company,
        )
        return len(rows)

    async def _step(self, row: Row) -> bool:
        """PENDING -> IN_TRANSIT first, committed by the company actor (from then on the payout
        can no longer be cancelled), and only then is the bank asked: a payout the bank has
        taken can never also be cancelled and its funds paid out twice. The bank's `send` is
        idempotent on the payout, so an IN_TRANSIT payout is sent again at its arrival time
        (a crash or a timeout between the two steps loses nothing), then asked whether it
        arrived."""
        bank = self._banks.get(row["mode"])
        if bank is None:
            return False  # no bank for live payouts here: they wait, cancellable
        if row["status"] == "PENDING":
            await self._shards.ask_company(row["company_id"], AdvancePayout(row["id"], "transit"))
            return True
        number = self._keyring.unseal(row["account_number"], BANK_ACCOUNT_NUMBER_PURPOSE).decode()
        async with asyncio.timeout(PROCESSOR_DEADLINE):
            answer = await bank.send(row["id"], int(row["amount_minor"]), row["currency"], number)
            if answer.accepted:
                answer = await bank.arrival(row["id"], number)
        step = "paid" if answer.accepted else "failed"
        await self._shards.ask_company(
            row["company_id"], AdvancePayout(row["id"], step, answer.reason)
        )
        return True


_FAILED = "money work for %s failed"
# A query of the work due at a time: (database, now, limit, shards) -> rows.


def _company(row: Row) -> str:
    return str(row["company_id"])
