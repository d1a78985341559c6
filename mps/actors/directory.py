"""Virtual actors: looked up by key, activated on demand, passivated when idle or crowded out.

A key's actor exists only while it is in use. The first message for a key activates it (the
actor's `on_activate` loads its snapshot from storage); an actor idle for `idle_after` seconds, or
the least recently used one when more than `capacity` are active, is passivated: it finishes the
messages already queued, then stops. Memory therefore stays bounded however many payments exist.

At most one incarnation per key runs at any moment: a key whose actor is still stopping is not
activated again until the old incarnation has finished, so two incarnations never interleave
writes. Concurrency context: the event loop thread only.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from mps.actors.runtime import ActorStoppedBeforeHandling, AsyncioActor, ask, stop
from mps.errors import Unavailable

__all__ = ["ActorDirectory"]

K = TypeVar("K", bound=Hashable)
A = TypeVar("A", bound=AsyncioActor)
logger = logging.getLogger(__name__)

# A message is re-sent only when the incarnation stopped before starting on it; more than a few
# such stops in a row means the actor cannot even activate, which is an outage, not a race.
_MAX_DELIVERIES = 3


class ActorDirectory(Generic[K, A]):
    def __init__(
        self,
        name: str,
        factory: Callable[[K], A],
        *,
        capacity: int,
        idle_after: float,
    ) -> None:
        self.name = name
        self._factory = factory
        self.capacity = capacity
        self.idle_after = idle_after
        self._live: OrderedDict[K, A] = OrderedDict()
        self._stopping: dict[K, asyncio.Task[None]] = {}
        self._closed = False
        self.activations = 0
        self.passivations = 0

    def __len__(self) -> int:
        return len(self._live)

    def stats(self) -> tuple[int, int]:
        """(active actors, messages waiting in their mailboxes), read without changing
        anything; for the metrics scrape, which walks the active actors once."""
        return len(self._live), sum(actor.inbox.qsize() for actor in self._live.values())

    def is_active(self, key: K) -> bool:
        actor = self._live.get(key)
        return actor is not None and actor.is_alive()

    async def ask(self, key: K, message: Any) -> Any:
        """Deliver `message` to the key's actor, activating it if needed; await the reply.

        Unbounded here: the caller bounds it (a request has one deadline for all of its asks,
        `mps.http.deadlines`; a commit is bounded by the writer's own). A timer per ask cost a
        tenth of a create's time."""
        for _ in range(_MAX_DELIVERIES):
            actor = await self._activate(key)
            try:
                return await ask(actor.actor_ref, message)
            except ActorStoppedBeforeHandling:
                continue
        msg = f"{self.name} actor for this resource could not be activated"
        raise Unavailable(msg)

    async def tell(self, key: K, message: Any) -> None:
        """Deliver `message` without waiting for a reply. Unlike `ask`, it is not re-sent when the
        incarnation stops before handling it: a told message queued behind a crash is dropped,
        so tell only what a fresh incarnation does not need (releasing an in-flight mark that a
        crash has already forgotten)."""
        actor = await self._activate(key)
        actor.actor_ref.tell(message)

    async def _activate(self, key: K) -> A:
        if self._closed:
            # Its shard was handed over or the node is stopping: no new incarnation here.
            msg = f"{self.name} is closed"
            raise Unavailable(msg, retry_after=1)
        while True:
            actor = self._live.get(key)
            if actor is not None:
                if actor.is_alive():
                    self._live.move_to_end(key)
                    return actor
                if not actor.task.done():
                    # Crashed, its commits still in flight: the new incarnation must load a
                    # snapshot that holds them.
                    with contextlib.suppress(Exception):
                        await asyncio.shield(actor.task)
                    continue
                self._forget(key, actor)
            stopping = self._stopping.get(key)
            if stopping is None:
                break
            # Wait for the old incarnation's last write before a new one loads the snapshot.
            with contextlib.suppress(Exception):
                await asyncio.shield(stopping)
        actor = self._factory(key)
        actor._start_actor_loop()
        self._live[key] = actor
        self.activations += 1
        actor.task.add_done_callback(lambda _task: self._forget(key, actor))
        self._evict_over_capacity(key)
        return actor

    def _forget(self, key: K, actor: A) -> None:
        if self._live.get(key) is actor:
            del self._live[key]

    def _evict_over_capacity(self, keep: K) -> None:
        excess = len(self._live) - self.capacity
        if excess <= 0:
            return
        # Least recently used first; an actor that cannot be passivated now is skipped, so the
        # directory may exceed its capacity briefly rather than strand that actor's waiters.
        # Taken from the front of the LRU order and no further than needed: a full directory
        # must not cost a scan of every active actor per activation.
        evictable = itertools.islice(
            (key for key, actor in self._live.items() if key != keep and actor.can_passivate()),
            excess,
        )
        for key in list(evictable):
            self.passivate(key)

    def passivate(self, key: K) -> None:
        """Stop the key's actor after its queued messages; the next message reactivates it."""
        actor = self._live.pop(key, None)
        if actor is None or not actor.is_alive():
            return
        self.passivations += 1
        task = asyncio.get_running_loop().create_task(self._stop(key, actor))
        self._stopping[key] = task

    async def _stop(self, key: K, actor: A) -> None:
        try:
            await stop(actor.actor_ref)
            await asyncio.shield(actor.task)
        finally:
            if self._stopping.get(key) is asyncio.current_task():
                del self._stopping[key]

    def passivate_idle(self, now: float) -> int:
        """Passivate every actor idle since before `now - idle_after`; returns how many."""
        idle = [
            key
            for key, actor in self._live.items()
            if not actor.busy
            and actor.inbox.empty()
            and actor.can_passivate()
            and now - actor.last_active >= self.idle_after
        ]
        for key in idle:
            self.passivate(key)
        return len(idle)

    async def run_sweeper(self, interval: float | None = None) -> None:
        """Passivate idle actors periodically; runs until cancelled."""
        period = interval if interval is not None else max(self.idle_after / 2, 0.05)
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(period)
            self.passivate_idle(loop.time())

    async def close(self) -> None:
        """Passivate everything and wait until every actor has stopped; activate nothing more."""
        self._closed = True
        for key in list(self._live):
            self.passivate(key)
        if self._stopping:
            await asyncio.gather(*self._stopping.values(), return_exceptions=True)
