"""The schedulers' base: a background loop owned by the composition root, a pass now and then
one every `interval`, and for the passes that work through rows found in storage, the one way to
keep to this node's shards and to hand each row to its owner.

`Periodic` is the loop. Subclasses implement `tick`. A failing pass is logged and retried at the
next interval; a pass that returns True is followed by another at once (a backlog to drain).

`ShardPass` adds shard ownership: schedulers run on their shard's owner only. In a cluster each
node reads only the shards it owns (`owned`, `scope`) and hands each row it found to the actor
that owns it (`each`); after a failover the new owner finds in storage what was due. Rows of a
shard that moved between the read and the ask are the new owner's (`ShardElsewhere`), and a row
whose actor refused (`ServiceError`: a checkout, cancel or vote got there first) needs nothing
more, so neither is an error. `StoredPass` is a `ShardPass` that reads the database as of the
clock's now, as most of them do.

Concurrency context: `tick` runs on the event loop in the loop's task; `close` cancels it, and a
pass cut short by the cancel is simply done again by the next start (the work is in storage).
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from mps.actors.background import BackgroundLoop
from mps.actors.shards import ShardElsewhere, ShardRouter
from mps.domain.clock import Clock
from mps.errors import ServiceError
from mps.persistence.database import Database
from mps.persistence.queries.shards import owned_companies

__all__ = ["EXPECTED", "Periodic", "ShardPass", "StoredPass"]

logger = logging.getLogger(__name__)
T = TypeVar("T")
# What a row's actor may answer that needs nothing more: another transition won, or the shard
# moved and its new owner does the work.
EXPECTED: tuple[type[BaseException], ...] = (ServiceError, ShardElsewhere)


class Periodic(BackgroundLoop):
    def __init__(self, interval: float) -> None:
        self.interval = interval

    @abc.abstractmethod
    async def tick(self) -> bool:
        """One pass; True when another should follow at once."""

    async def _run(self) -> None:
        while True:
            again = False
            try:
                again = await self.tick()
            except Exception:
                logger.exception("%s pass failed; retrying", type(self).__name__)
            if not again:
                await asyncio.sleep(self.interval)


class ShardPass(Periodic):
    """A `Periodic` whose passes read rows of the companies this node owns and hand each to its
    owner's actor."""

    def __init__(self, shards: ShardRouter, interval: float) -> None:
        super().__init__(interval)
        self._shards = shards

    def owned(self) -> list[int] | None:
        """The shards to read: None for all of them (one process owns every shard)."""
        return sorted(self._shards.owned) if self._shards.clustered else None

    def scope(self, column: str) -> str | None:
        """The SQL condition keeping `column`'s companies to the owned shards ("" for all of
        them; None when this node owns none, so there is nothing to read)."""
        return owned_companies(column, self.owned())

    async def each(
        self,
        rows: Sequence[Any],
        work: Callable[[Any], Awaitable[T]],
        failed: str,
        *,
        name: Callable[[Any], str] = lambda row: str(row["id"]),
        expected: tuple[type[BaseException], ...] = EXPECTED,
        level: int = logging.ERROR,
    ) -> list[T]:
        """Run `work` together for each of `rows` this node still owns (ownership may have moved
        since the read); return the results that did not fail. A failure other than an
        `expected` one is logged at `level` with `failed % name(row)`; none is raised, so one
        bad row never holds up the others, and the next pass tries it again."""
        mine = [row for row in rows if self._shards.owns(row["company_id"])]
        results = await asyncio.gather(*(work(row) for row in mine), return_exceptions=True)
        done: list[T] = []
        for row, result in zip(mine, results, strict=True):
            if isinstance(result, expected):
                continue
            if isinstance(result, BaseException):
                # Under the scheduler's own module's name, where its operators look.
                log = logging.getLogger(type(self).__module__)
                log.log(level, failed, name(row), exc_info=result)
            else:
                done.append(result)
        return done


class StoredPass(ShardPass):
    """A `ShardPass` whose passes read `database` for what is due by `clock`."""

    def __init__(
        self, database: Database, shards: ShardRouter, clock: Clock, interval: float
    ) -> None:
        super().__init__(shards, interval)
        self._database = database
        self._clock = clock
