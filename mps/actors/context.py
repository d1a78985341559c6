"""What every state-owning actor is given: reads, the writer, and the clock."""

from __future__ import annotations

from dataclasses import dataclass, field

from pykka import ActorRef

from mps.actors.persistence import Commit, PersistenceActor
from mps.actors.recent import RecentPayments, ShardView
from mps.actors.runtime import ask
from mps.domain.clock import Clock
from mps.persistence.database import Database
from mps.persistence.statements import Row, Statement

__all__ = ["ActorContext"]


@dataclass(frozen=True)
class ActorContext:
    database: Database
    persistence: ActorRef[PersistenceActor]
    clock: Clock
    # (shard, epoch) for the actors of a shard this node took in a cluster: every commit names
    # it, so a commit made after another node took the shard is refused (mps.actors.persistence).
    fence: tuple[int, int] | None = None
    # Where the shard's actors record the payments they committed (mps.actors.recent); an actor
    # outside any shard records nothing.
    recent: ShardView = field(default_factory=lambda: RecentPayments(0).view())

    async def commit(self, *statements: Statement) -> list[list[Row]]:
        """Write the statements as one unit; returns once they are durable. 503 when the writer
        could not confirm it within its deadline: whether the unit landed is then unknown, so
        the caller must not adopt the new state (the next incarnation reloads what is stored)."""
        result: list[list[Row]] = await ask(self.persistence, Commit(tuple(statements), self.fence))
        return result
