"""Heartbeats, probes and balance: what a cluster node tells the others, how unowned shards get
taken without traffic, and how surplus shards move to nodes below their share. Part of
ClusterNode (mps.cluster.node), whose docstring tells the whole story.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

import aio_pika
import aio_pika.abc
import aio_pika.exceptions
import orjson

from mps.actors.shards import ShardRouter
from mps.cluster.membership import Heartbeat, Membership
from mps.cluster.queues import HEARTBEAT_KEY, PROBE, shard_queue
from mps.cluster.timings import ClusterTimings

# The node's log, whichever part of it writes.
logger = logging.getLogger("mps.cluster.node")


class Heartbeats:
    """ClusterNode's part that tells the others what it holds, probes unclaimed shards, and
    hands surplus shards over.

    A mixin: ClusterNode's `__init__` sets the attributes declared here, and the methods
    declared under TYPE_CHECKING come from its other parts."""

    node_id: str
    name: str
    router: ShardRouter
    timings: ClusterTimings
    membership: Membership
    peer_address: str | None
    draining: bool
    connected: bool
    round_trip: float | None
    _exchange: aio_pika.abc.AbstractExchange | None
    _publishing: aio_pika.abc.AbstractChannel | None
    _sent_at: float | None

    if TYPE_CHECKING:

        def _fail_orphans(self, now: float) -> None: ...

        async def _hand_over(self, index: int, *, again: bool) -> None: ...

    async def _beat(self) -> None:
        while True:
            try:
                await self._send_heartbeat()
                now = time.monotonic()
                await self._probe(self.membership.unclaimed(now, frozenset(self.router.owned)))
                self._fail_orphans(now)
            except Exception:
                logger.debug("heartbeat failed", exc_info=True)
            await asyncio.sleep(self.timings.heartbeat)

    async def _send_heartbeat(self) -> None:
        if self._exchange is None or not self.connected:
            return
        beat = Heartbeat(
            self.node_id, frozenset(self.router.owned), self.draining, peer=self.peer_address
        )
        started = time.monotonic()
        await self._exchange.publish(
            aio_pika.Message(orjson.dumps(beat.to_json()), expiration=10), routing_key=HEARTBEAT_KEY
        )
        self._sent_at = started

    async def _on_heartbeat(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        now = time.monotonic()
        try:
            beat = Heartbeat.from_json(orjson.loads(message.body), now)
        except (ValueError, KeyError):
            return
        if beat.node == self.node_id:
            # Our own heartbeat back: a broker round trip, for /health.
            if self._sent_at is not None:
                self.round_trip = now - self._sent_at
            return
        self.membership.saw(beat)

    async def _probe(self, shards: set[int] | frozenset[int]) -> None:
        if self._publishing is None or not self.connected:
            return
        for index in sorted(shards):
            if self.router.owns_shard(index):
                continue
            await self._publishing.default_exchange.publish(
                aio_pika.Message(b"", type=PROBE, expiration=10),
                routing_key=shard_queue(self.name, index),
            )

    async def _balance(self) -> None:
        while True:
            await asyncio.sleep(self.timings.balance_every)
            if self.draining or not self.connected:
                continue
            try:
                now = time.monotonic()
                share = self.membership.share(now)
                surplus = len(self.router.owned) - share
                # Only towards a node below its share: the broker gives a shard handed over to
                # the next consumer in line, and without someone short of shards in that line it
                # would only pass between full nodes.
                room = sum(
                    max(share - len(h.owned), 0)
                    for h in self.membership.others(now)
                    if not h.draining
                )
                # The highest-numbered first: every node picks alike, so two nodes handing over
                # at once do not pass the same shards back and forth.
                for index in sorted(self.router.owned, reverse=True)[: max(min(surplus, room), 0)]:
                    await self._hand_over(index, again=True)
            except Exception:
                logger.exception("balancing failed")
