"""The outbox relay: committed events to the broker, in order, marked once the broker has them.

Woken by the persistence actor whenever a commit inserted events, and every `poll` seconds in
case a wake-up was missed (or another process wrote them). Each pass takes the oldest undispatched
events (in a cluster, of the shards this node owns), publishes them in messages of PER_MESSAGE
with confirmation (`settled`), and only then marks them dispatched, in one commit. A crash
between the two publishes them again after restart: delivery is at least once, and the fan-out
makes each delivery once however often its event arrives.

Every `sweep_every` seconds the relay also asks for the deliveries whose next attempt is long
overdue (of the same shards) to be published again: a message lost between a commit and its
publish would otherwise leave its delivery open for ever.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from mps.actors.background import BackgroundLoop, woken_or_after
from mps.actors.context import ActorContext
from mps.actors.shards import ShardRouter
from mps.adapters.broker import Broker
from mps.domain.clock import iso
from mps.persistence import webhook_store as store
from mps.persistence.queries import events as event_queries
from mps.webhooks.topology import Committed, EventBatch, Topology

__all__ = ["OutboxRelay"]

logger = logging.getLogger(__name__)

# Events per broker message: enough that the broker's work per event is small, few enough that
# one message's fan-out is a short piece of work for the node that takes it.
PER_MESSAGE = 50


class OutboxRelay(BackgroundLoop):
    def __init__(
        self,
        context: ActorContext,
        broker: Broker,
        topology: Topology,
        shards: ShardRouter,
        *,
        batch: int = 500,
        poll: float = 1.0,
        sweep: Callable[[list[int] | None], Awaitable[int]] | None = None,
        sweep_every: float = 60.0,
    ) -> None:
        self._context = context
        self._broker = broker
        self._topology = topology
        self._shards = shards
        self._batch = batch
        self._poll = poll
        self._wakeup = asyncio.Event()
        self._sweep = sweep
        self._sweep_every = sweep_every
        self._swept_at = time.monotonic()

    def wake(self) -> None:
        """A commit inserted events. Safe to call from any code on the loop, at any rate."""
        self._wakeup.set()

    async def _run(self) -> None:
        while True:
            await woken_or_after(self._wakeup, self._poll)
            try:
                while await self.run_once() == self._batch:
                    pass
                if (
                    self._sweep is not None
                    and time.monotonic() - self._swept_at > self._sweep_every
                ):
                    self._swept_at = time.monotonic()
                    await self._sweep(self._owned())
            except Exception:
                logger.exception("outbox relay pass failed; retrying")
                await asyncio.sleep(self._poll)

    def _owned(self) -> list[int] | None:
        """The shards whose work is this node's: every one of them outside a cluster (None)."""
        return sorted(self._shards.owned) if self._shards.clustered else None

    async def run_once(self) -> int:
        """Publish one batch of undispatched events; how many it found."""
        rows = await event_queries.undispatched(self._context.database, self._owned(), self._batch)
        if not rows:
            return 0
        chunks = [rows[i : i + PER_MESSAGE] for i in range(0, len(rows), PER_MESSAGE)]
        await asyncio.gather(
            *(
                self._broker.publish(
                    self._topology.events,
                    EventBatch(
                        tuple(Committed(r["id"], r["company_id"], r["mode"]) for r in chunk)
                    ).encode(),
                    settled=True,
                )
                for chunk in chunks
            )
        )
        now = iso(self._context.clock())
        await self._context.commit(store.events_dispatched([r["id"] for r in rows], now))
        return len(rows)
