"""What every state-owning actor is given: reads, the writer, and the clock."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pykka import ActorRef

from mps.actors.persistence import Commit, PersistenceActor
from mps.actors.runtime import ask
from mps.domain.clock import Clock
from mps.errors import Unavailable
from mps.persistence.database import Database
from mps.persistence.statements import Row, Statement

__all__ = ["WRITE_DEADLINE", "ActorContext"]

WRITE_DEADLINE = 15.0


@dataclass(frozen=True)
class ActorContext:
    database: Database
    persistence: ActorRef[PersistenceActor]
    clock: Clock

    async def commit(self, *statements: Statement) -> list[list[Row]]:
        """Write the statements as one unit; returns once they are durable. 503 when the writer
        has not answered within `WRITE_DEADLINE`: whether the unit landed is then unknown, so
        its caller must not adopt the new state (the next incarnation reloads what is stored)."""
        try:
            async with asyncio.timeout(WRITE_DEADLINE):
                result: list[list[Row]] = await ask(self.persistence, Commit(tuple(statements)))
        except TimeoutError as exc:
            msg = "the database did not confirm the write in time"
            raise Unavailable(msg) from exc
        return result
