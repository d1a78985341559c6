"""Shard ownership: consuming every shard queue, taking a shard when its message arrives, and
handing it over cleanly. Part of ClusterNode (mps.cluster.node), whose docstring tells the whole
story.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import aio_pika
import aio_pika.abc
import aio_pika.exceptions

from mps.cluster.asks import Service
from mps.cluster.parts import NodePart
from mps.cluster.queues import HTTP

# The node's log, whichever part of it writes.
logger = logging.getLogger("mps.cluster.node")

TakeShard = Callable[[int], Awaitable[int]]


class Ownership(NodePart):
    """ClusterNode's part that takes shards as the broker makes it their active consumer, runs
    their messages, and hands them over."""

    services: dict[str, Service]
    # How often this node took a shard, handed one over, and took one from a lost node.
    taken: int
    handed_over: int
    taken_from_lost: int
    _take_epoch: TakeShard
    _queues: dict[int, aio_pika.abc.AbstractQueue]
    _consumers: dict[int, str]
    _taking: dict[int, asyncio.Future[None]]
    _held: dict[int, list[aio_pika.abc.AbstractIncomingMessage]]
    # Passed requests running, by shard: a hand-over waits for them.
    _running: dict[int, set[asyncio.Task[Any]]]

    if TYPE_CHECKING:

        async def _answer(
            self, message: aio_pika.abc.AbstractIncomingMessage, service: Service
        ) -> None: ...

        async def _run_passed(self, message: aio_pika.abc.AbstractIncomingMessage) -> None: ...

        async def _probe(self, shards: set[int] | frozenset[int]) -> None: ...

        def _later_call(self, delay: float, work: Callable[[], Awaitable[None]]) -> None: ...

    async def _consume(self, index: int) -> None:
        queue = self._queues[index]

        async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            await self._on_shard_message(index, message)

        self._consumers[index] = await queue.consume(on_message)

    async def _cancel_consumer(self, index: int) -> None:
        tag = self._consumers.pop(index, None)
        if tag is not None:
            with contextlib.suppress(Exception):
                await self._queues[index].cancel(tag)

    async def _on_shard_message(
        self, index: int, message: aio_pika.abc.AbstractIncomingMessage
    ) -> None:
        held = self._held.get(index)
        if held is not None:
            # Being handed over: the next owner runs it.
            held.append(message)
            return
        if message.consumer_tag != self._consumers.get(index):
            # Delivered to a consumer cancelled since (its task ran after the cancel): the
            # broker has made someone else active, so the message is theirs.
            await message.nack(requeue=True)
            return
        if not self.router.owns_shard(index):
            try:
                await self._take(index)
            except Exception:
                logger.exception("taking shard %d failed; its message goes back", index)
                await asyncio.sleep(1)
                await message.nack(requeue=True)
                return
        await message.ack()
        service = self.services.get(message.type or "")
        if service is not None:
            await self._answer(message, service)
            return
        if message.type != HTTP:
            return
        running = self._running.setdefault(index, set())
        task = asyncio.current_task()
        assert task is not None
        running.add(task)
        try:
            await self._run_passed(message)
        finally:
            running.discard(task)

    async def _take(self, index: int) -> None:
        taking = self._taking.get(index)
        if taking is None:
            taking = self._taking[index] = asyncio.ensure_future(self._take_now(index))
            taking.add_done_callback(lambda _f: self._taking.pop(index, None))
        await asyncio.shield(taking)

    async def _take_now(self, index: int) -> None:
        self.router.begin_change(index)
        try:
            epoch = await self._take_epoch(index)
            if not self.connected:
                # Lost the broker meanwhile: someone else may be the active consumer by now.
                return
            self.router.adopt(index, epoch)
            self.taken += 1
            former = self.membership.former_owner(index, time.monotonic())
            if former is None:
                logger.info("node %s took shard %d (epoch %d)", self.node_id, index, epoch)
            else:
                self.taken_from_lost += 1
                logger.warning(
                    "node %s took shard %d (epoch %d) of lost peer node %s at %s",
                    self.node_id,
                    index,
                    epoch,
                    former.node,
                    former.peer or "(no peer listener)",
                )
        finally:
            self.router.end_change(index)

    async def _hand_over(self, index: int, *, again: bool) -> None:
        """Give shard `index` to the next consumer in line, cleanly; with `again`, queue up as a
        standby for it afterwards."""
        if index in self._held or not self.router.owns_shard(index):
            return
        # New messages of the shard are held from now on. The requests passed here earlier
        # finish first, while local asks still go through: they ask this shard's actors, so
        # holding asks before they end would make each wait for the other.
        self._held[index] = []
        try:
            running = self._running.get(index)
            if running:
                await asyncio.wait(running, timeout=self.timings.drain_within)
            self.router.begin_change(index)
            await self.router.hand_over(index, drain_within=self.timings.drain_within)
            await self._cancel_consumer(index)
        finally:
            for message in self._held.pop(index, []):
                with contextlib.suppress(Exception):
                    await message.nack(requeue=True)
            self.router.end_change(index)
        self.handed_over += 1
        logger.info("node %s handed shard %d over", self.node_id, index)
        # Whoever is next in line learns it at once rather than at the next probe round.
        await self._probe({index})
        if again:
            self._later_call(self.timings.standby_after, lambda: self._stand_by(index))

    async def _stand_by(self, index: int) -> None:
        if not self.draining and self.connected and index not in self._consumers:
            await self._consume(index)
