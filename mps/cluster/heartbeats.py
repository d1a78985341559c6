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

from mps.cluster.membership import Heartbeat
from mps.cluster.parts import NodePart
from mps.cluster.queues import HEARTBEAT_KEY, PROBE, shard_queue
from mps.cluster.versions import Versions

# The node's log, whichever part of it writes.
logger = logging.getLogger("mps.cluster.node")


class Heartbeats(NodePart):
    """ClusterNode's part that tells the others what it holds, probes unclaimed shards, and
    hands surplus shards over; and says when a peer is lost or back."""

    round_trip: float | None
    # When this node last heard its own heartbeat back: while it does, the broker carries
    # heartbeats, so a peer not heard from is the peer's silence, not this node's.
    heard_self_at: float | None
    _exchange: aio_pika.abc.AbstractExchange | None
    _sent_at: float | None

    if TYPE_CHECKING:

        def _fail_orphans(self, now: float) -> None: ...

        async def _hand_over(self, index: int, *, again: bool) -> None: ...

        def warn_unspoken(self, node: str, peer: str | None, versions: Versions) -> None: ...

    async def _beat(self) -> None:
        while True:
            try:
                await self._send_heartbeat()
                now = time.monotonic()
                self._report_departures(now)
                await self._probe(self.membership.unclaimed(now, frozenset(self.router.owned)))
                self._fail_orphans(now)
            except Exception:
                logger.debug("heartbeat failed", exc_info=True)
            await asyncio.sleep(self.timings.heartbeat)

    async def _send_heartbeat(self) -> None:
        if self._exchange is None or not self.connected:
            return
        beat = Heartbeat(
            self.node_id,
            frozenset(self.router.owned),
            self.draining,
            peer=self.peer_address,
            protocol=self.protocol,
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
            self.heard_self_at = now
            return
        before = self.membership.saw(beat)
        if self.protocol.agree(beat.protocol) is None:
            self.warn_unspoken(beat.node, beat.peer, beat.protocol)
        if before is not None and before.draining:
            # It left cleanly (a restart, an upgrade) and is back: nothing was lost.
            logger.info("peer node %s at %s rejoined the cluster", beat.node, beat.peer)
        elif before is not None:
            logger.warning(
                "peer node %s at %s is back after %.1f s without a heartbeat",
                beat.node,
                beat.peer or "(no peer listener)",
                now - before.seen_at,
            )

    def hears_itself(self, now: float) -> bool:
        """Whether this node's own heartbeats come back through the broker (within the time
        after which a node is taken for gone)."""
        heard = self.heard_self_at
        return self.connected and heard is not None and now - heard <= self.timings.node_timeout

    def _report_departures(self, now: float) -> None:
        for gone in self.membership.departures(now):
            silent = now - gone.seen_at
            if gone.draining:
                # It said it was handing its shards over: a clean shutdown ends this way.
                logger.info("peer node %s left the cluster (it drained)", gone.node)
            elif not self.hears_itself(now):
                # This node's own heartbeats are not coming back either: the silence may be
                # this node's link to the broker, not the peer.
                logger.info(
                    "peer node %s not heard from for %.1f s while this node does not hear "
                    "itself either",
                    gone.node,
                    silent,
                )
            else:
                # What is known is its silence and what it last claimed: its shards move only
                # if the broker takes it for gone too, which a shorter stall does not make it.
                logger.warning(
                    "lost peer node %s at %s: no heartbeat for %.1f s; it last claimed %d "
                    "shards, which the nodes left take if the broker drops it too",
                    gone.node,
                    gone.peer or "(no peer listener)",
                    silent,
                    len(gone.owned),
                )

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
