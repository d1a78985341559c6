"""The shards this node owns and the actors living in them.

A company belongs to a fixed shard (`mps.domain.shards`); all of its actors live there, so moving a
shard moves whole companies. A single process owns every shard from the start. In a cluster the
node takes a shard when the broker makes it the shard's owner (`mps.cluster`), under an epoch
that every commit of the shard's actors names, and gives it up when it hands it over or loses it.

Asking an actor of a shard this node does not own raises `ShardElsewhere`: the HTTP layer then
passes the whole request to the owner. While a shard is being taken or handed over, asks for it
wait until that is done, then go to the owner, whoever it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Callable
from typing import Any

from mps.actors.card import CardActor
from mps.actors.company import CompanyActor
from mps.actors.directory import ActorDirectory
from mps.actors.invoice import InvoiceActor
from mps.actors.payment import PaymentActor
from mps.actors.recent import RecentPayments, ShardView
from mps.actors.runtime import ActorDeadError
from mps.domain.payments import Payment
from mps.domain.shards import shard_of
from mps.errors import ShardMoved

__all__ = [
    "CardKey",
    "InvoiceKey",
    "PaymentKey",
    "Shard",
    "ShardElsewhere",
    "ShardRouter",
    "asked_an_actor",
    "shard_of",
]

logger = logging.getLogger(__name__)

PaymentKey = tuple[str, str]  # (company id, payment id)
InvoiceKey = tuple[str, str]  # (company id, invoice id)
CardKey = tuple[str, str]  # (company id, card id)


# Set in a request's task once it entered a shard here to ask an actor: from then on the request
# may have had effects, so a later `ShardElsewhere` must neither pass it whole to another node
# (it would run twice) nor report it as not run (mps.http.passing). Asks from tasks the request
# spawns are not seen; a handler asks its actors from its own task.
_ASKED: contextvars.ContextVar[bool] = contextvars.ContextVar("asked_an_actor", default=False)


def asked_an_actor() -> bool:
    """Whether the running request's task has asked an actor of a shard this node owns."""
    return _ASKED.get()


class ShardElsewhere(Exception):
    """The company's shard is owned by another node: the request must go there."""

    def __init__(self, shard: int) -> None:
        super().__init__(f"shard {shard} is owned by another node")
        self.shard = shard


class Shard:
    def __init__(
        self,
        index: int,
        companies: ActorDirectory[str, CompanyActor],
        payments: ActorDirectory[PaymentKey, PaymentActor],
        invoices: ActorDirectory[InvoiceKey, InvoiceActor],
        cards: ActorDirectory[CardKey, CardActor],
        epoch: int | None = None,
        recent: ShardView | None = None,
    ) -> None:
        self.index = index
        self.companies = companies
        self.payments = payments
        self.invoices = invoices
        self.cards = cards
        # The epoch this node took the shard under; None when it owns every shard alone.
        self.epoch = epoch
        # What its actors committed lately, which reads may answer from while it is owned here.
        self.recent = recent if recent is not None else RecentPayments(0).view()
        self.in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._sweepers: list[asyncio.Task[None]] = []

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._sweepers = [
            loop.create_task(self.companies.run_sweeper()),
            loop.create_task(self.payments.run_sweeper()),
            loop.create_task(self.invoices.run_sweeper()),
            loop.create_task(self.cards.run_sweeper()),
        ]

    def enter(self) -> None:
        self.in_flight += 1
        self._idle.clear()

    def leave(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self._idle.set()

    async def drained(self) -> None:
        """Return once no ask is in flight in this shard."""
        await self._idle.wait()

    async def close(self) -> None:
        for task in self._sweepers:
            task.cancel()
        await asyncio.gather(*self._sweepers, return_exceptions=True)
        # Payments ask their company (money moves through its ledger), so companies stop last.
        await self.payments.close()
        await self.cards.close()
        await self.invoices.close()
        await self.companies.close()


MakeShard = Callable[[int, int | None], Shard]


class ShardRouter:
    """The shards this node owns. `clustered=False` owns all of them for good, with no epochs."""

    def __init__(self, shard_count: int, make_shard: MakeShard, *, clustered: bool = False) -> None:
        self.shard_count = shard_count
        self.clustered = clustered
        self._make_shard = make_shard
        self.owned: dict[int, Shard] = {}
        # Shards being taken or handed over: asks for them wait for the change to finish.
        self._changing: dict[int, asyncio.Future[None]] = {}
        self._closing: set[asyncio.Task[None]] = set()
        if not clustered:
            self.owned = {i: make_shard(i, None) for i in range(shard_count)}

    def index(self, company_id: str) -> int:
        return shard_of(company_id, self.shard_count)

    def owns(self, company_id: str) -> bool:
        return self.index(company_id) in self.owned

    def owns_shard(self, index: int) -> bool:
        return index in self.owned

    async def require(self, company_id: str) -> None:
        """Raise `ShardElsewhere` unless this node owns the company's shard, once any change of
        its owner under way here has finished."""
        await self._settled(company_id)

    async def _settled(self, company_id: str) -> Shard:
        """The company's shard once any change of its owner here has finished; `ShardElsewhere`
        when another node owns it."""
        index = self.index(company_id)
        while (change := self._changing.get(index)) is not None:
            await asyncio.shield(change)
        shard = self.owned.get(index)
        if shard is None:
            raise ShardElsewhere(index)
        return shard

    async def _enter(self, company_id: str) -> Shard:
        shard = await self._settled(company_id)
        _ASKED.set(True)
        shard.enter()
        return shard

    def recent_payment(self, company_id: str, mode: str, payment_id: str) -> Payment | None:
        """The payment's latest committed snapshot, when this node owns the company's shard
        (and is not taking or handing it over) and its actors wrote or loaded the payment lately;
        None otherwise, and storage answers. Only the owner commits a shard's payments, so what
        it recorded is what storage holds."""
        index = self.index(company_id)
        shard = self.owned.get(index)
        if shard is None or index in self._changing:
            return None
        return shard.recent.get(company_id, mode, payment_id)

    async def ask_company(self, company_id: str, message: Any) -> Any:
        shard = await self._enter(company_id)
        try:
            return await shard.companies.ask(company_id, message)
        except ActorDeadError as exc:
            # The shard was dropped under this ask (taken over): nothing answered it.
            raise ShardMoved from exc
        finally:
            shard.leave()

    async def tell_company(self, company_id: str, message: Any) -> None:
        shard = await self._enter(company_id)
        try:
            await shard.companies.tell(company_id, message)
        finally:
            shard.leave()

    async def ask_payment(self, company_id: str, payment_id: str, message: Any) -> Any:
        return await self._ask_in(company_id, lambda shard: shard.payments, payment_id, message)

    async def ask_card(self, company_id: str, card_id: str, message: Any) -> Any:
        return await self._ask_in(company_id, lambda shard: shard.cards, card_id, message)

    async def ask_invoice(self, company_id: str, invoice_id: str, message: Any) -> Any:
        return await self._ask_in(company_id, lambda shard: shard.invoices, invoice_id, message)

    async def _ask_in(
        self,
        company_id: str,
        directory: Callable[[Shard], ActorDirectory[tuple[str, str], Any]],
        key: str,
        message: Any,
    ) -> Any:
        shard = await self._enter(company_id)
        try:
            return await directory(shard).ask((company_id, key), message)
        except ActorDeadError as exc:
            raise ShardMoved from exc
        finally:
            shard.leave()

    # Ownership changes, made by the cluster node (mps.cluster.node).

    def begin_change(self, index: int) -> None:
        """Asks for the shard wait from now until `end_change`."""
        if index not in self._changing:
            self._changing[index] = asyncio.get_running_loop().create_future()

    def end_change(self, index: int) -> None:
        change = self._changing.pop(index, None)
        if change is not None and not change.done():
            change.set_result(None)

    def adopt(self, index: int, epoch: int) -> Shard:
        """Own shard `index` under `epoch` from now on."""
        shard = self._make_shard(index, epoch)
        shard.start()
        self.owned[index] = shard
        return shard

    async def hand_over(self, index: int, *, drain_within: float) -> None:
        """Stop owning shard `index` cleanly: wait (at most `drain_within` seconds) for the asks
        in flight, then stop its actors, so whatever they wrote is committed before the next
        owner takes over. Call between `begin_change` and `end_change`."""
        shard = self.owned.get(index)
        if shard is None:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(drain_within):
                await shard.drained()
        del self.owned[index]
        await shard.close()

    def drop(self, index: int) -> None:
        """Stop owning shard `index` at once (another node has it already). Its actors stop in
        the background; whatever they still try to commit is refused by the epoch check."""
        shard = self.owned.pop(index, None)
        if shard is None:
            return
        task = asyncio.get_running_loop().create_task(shard.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def drop_all(self) -> None:
        for index in list(self.owned):
            self.drop(index)

    def start(self) -> None:
        for shard in self.owned.values():
            shard.start()

    async def close(self) -> None:
        for change in list(self._changing):
            self.end_change(change)
        await asyncio.gather(*(shard.close() for shard in self.owned.values()))
        self.owned.clear()
        await asyncio.gather(*self._closing, return_exceptions=True)
