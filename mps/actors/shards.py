"""Shards: the unit of ownership of companies between the nodes of a cluster.

A company belongs to shard `crc32(company_id) % shard_count`, fixed for the life of the cluster.
All of a company's actors (the company actor and its payments' actors) live in its shard, so moving
a shard to another node moves whole companies and never splits one. A single process owns every
shard; the cluster mode changes only which shards `ShardRouter.owned` holds.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable
from typing import Any

from mps.actors.company import CompanyActor
from mps.actors.directory import ActorDirectory
from mps.actors.payment import PaymentActor
from mps.errors import Unavailable

__all__ = ["Shard", "ShardRouter", "shard_of"]


def shard_of(company_id: str, shard_count: int) -> int:
    return zlib.crc32(company_id.encode()) % shard_count


PaymentKey = tuple[str, str]  # (company id, payment id)


class Shard:
    def __init__(
        self,
        index: int,
        companies: ActorDirectory[str, CompanyActor],
        payments: ActorDirectory[PaymentKey, PaymentActor],
    ) -> None:
        self.index = index
        self.companies = companies
        self.payments = payments

    async def close(self) -> None:
        # Companies ask payments, so payments stop last.
        await self.companies.close()
        await self.payments.close()


class ShardRouter:
    def __init__(
        self,
        shard_count: int,
        make_shard: Callable[[int], Shard],
        owned: set[int] | None = None,
    ) -> None:
        self.shard_count = shard_count
        self._make_shard = make_shard
        indexes = owned if owned is not None else set(range(shard_count))
        self.owned: dict[int, Shard] = {i: make_shard(i) for i in indexes}
        self._sweepers: list[asyncio.Task[None]] = []

    def shard(self, company_id: str) -> Shard:
        index = shard_of(company_id, self.shard_count)
        shard = self.owned.get(index)
        if shard is None:
            # Until the cluster mode forwards commands to the owning node, a shard we do not own
            # is an outage for its companies, not something to guess around.
            msg = "this node does not own the company's shard"
            raise Unavailable(msg)
        return shard

    def owns(self, company_id: str) -> bool:
        return shard_of(company_id, self.shard_count) in self.owned

    async def ask_company(self, company_id: str, message: Any) -> Any:
        return await self.shard(company_id).companies.ask(company_id, message)

    async def tell_company(self, company_id: str, message: Any) -> None:
        await self.shard(company_id).companies.tell(company_id, message)

    async def ask_payment(self, company_id: str, payment_id: str, message: Any) -> Any:
        return await self.shard(company_id).payments.ask((company_id, payment_id), message)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        for shard in self.owned.values():
            self._sweepers.append(loop.create_task(shard.companies.run_sweeper()))
            self._sweepers.append(loop.create_task(shard.payments.run_sweeper()))

    async def close(self) -> None:
        for task in self._sweepers:
            task.cancel()
        await asyncio.gather(*self._sweepers, return_exceptions=True)
        await asyncio.gather(*(shard.close() for shard in self.owned.values()))
