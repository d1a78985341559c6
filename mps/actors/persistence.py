"""The persistence actor: one writer per database, committing in groups.

Every actor that changes state sends it a `Commit` and awaits the reply. The actor takes whatever
has queued up while the previous transaction was committing (up to `max_batch` units), applies it
as one transaction with a savepoint per unit, and only then answers each sender. A busy service
therefore pays one commit (one fsync) for many writes, and an answer always means "durable".

A unit that fails its own checks (StaleWrite, IntegrityConflict) is rolled back alone and its
sender gets that error; the rest of the group commits. If the transaction as a whole fails (the
database went away), every sender in the group gets `Unavailable`: nothing of it is committed,
unless the connection was lost during COMMIT itself, when nobody can tell; senders treat the
outcome as unknown (mps.actors.commits).

A commit made for a shard names the epoch its node took the shard under (`Commit.fence`). When
another node has taken one of the batch's shards since, the storage refuses the batch (`Fenced`);
the commits of the lost shards are answered `ShardMoved` (503, Retry-After) and the rest of the
batch is written again without them, and `on_fenced` tells the node to drop those shards.

A batch still running at the writer's deadline is answered `LateWrite` (503) at once, and goes on
being written: cutting it off would leave the connection in an unknown state. The answer carries
the write, so that its senders, marked stale, wait for it before they read storage again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mps.actors.pykka_internals import ActorStop as _ActorStop
from mps.actors.pykka_internals import Envelope
from mps.actors.runtime import ActorDeadError, AsyncioActor
from mps.errors import ShardMoved, Unavailable
from mps.faults import is_infrastructure_fault
from mps.persistence.database import Database, Fenced, UnitOutcome
from mps.persistence.outbox import inserts_events
from mps.persistence.statements import Statement

__all__ = ["WRITE_DEADLINE", "Commit", "LateWrite", "PersistenceActor"]

# How long a writer waits for its group commit before it is answered 503.
WRITE_DEADLINE = 15.0

logger = logging.getLogger(__name__)


class LateWrite(Unavailable):
    """The writer missed its deadline for the batch that held this unit; the batch is still
    being written, and may yet commit. `landing` is done once that write has ended, however it
    ended: until then storage may still change under the unit's sender, whose reload must wait
    for it (mps.actors.commits.undo_on_failure)."""

    def __init__(self, message: str, landing: asyncio.Future[Any]) -> None:
        super().__init__(message)
        self.landing = landing


@dataclass(frozen=True, slots=True)
class Commit:
    """Statements that commit together or not at all. Reply: the rows each statement returned."""

    statements: tuple[Statement, ...]
    # (shard, epoch) when written by the owner of a shard; None for writes no shard owns.
    fence: tuple[int, int] | None = None


class PersistenceActor(AsyncioActor):
    # The writer holds no state a failure could corrupt (a failed transaction is rolled back),
    # and every write in the process depends on it, so no error stops it: each is an answer.
    expected_errors = (Exception,)

    def __init__(
        self,
        database: Database,
        *,
        max_batch: int = 512,
        deadline: float = WRITE_DEADLINE,
        on_fenced: Callable[[frozenset[int]], None] | None = None,
        observe: Callable[[int, float], None] | None = None,
        on_events: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        self.database = database
        self.max_batch = max_batch
        self.deadline = deadline
        self.on_fenced = on_fenced
        # Told (units, seconds) of each group commit that succeeded (the metrics' histograms).
        self.observe = observe
        # Told after each group commit that inserted events (the outbox relay's wake-up).
        self.on_events = on_events
        self.commits = 0
        self.units = 0

    async def _message_loop(self) -> None:
        while not self.actor_stopped.is_set():
            first = await self.inbox.get_async()
            # A method of its own, so nothing of the batch (its units hold every row they
            # wrote) stays referenced while the writer waits for the next one.
            stopped = await self._take_batch(first)
            del first
            if stopped:
                return

    async def _take_batch(self, first: Envelope[Any]) -> bool:
        """Commit what has queued up behind `first`; True when a stop was among it."""
        batch = [first]
        while len(batch) < self.max_batch and not self.inbox.empty():
            batch.append(self.inbox.get())
        stop = next((e for e in batch if isinstance(e.message, _ActorStop)), None)
        commits = [e for e in batch if isinstance(e.message, Commit)]
        if commits:
            await self._commit(commits)
        for envelope in batch:
            if envelope is not stop and not isinstance(envelope.message, Commit):
                await self._handle(envelope)
        if stop is not None:
            await self._stop_async(stop)
            return True
        return False

    async def _commit(self, envelopes: list[Envelope[Any]]) -> None:
        envelopes = self._without_superseded(envelopes)
        while envelopes:
            try:
                await self._commit_fenced(envelopes)
                return
            except Fenced as exc:
                envelopes = self._refuse_fenced(envelopes, exc.lost)

    def _without_superseded(self, envelopes: list[Envelope[Any]]) -> list[Envelope[Any]]:
        """Answer the commits made under an older epoch of a shard than another in the batch
        (a shard lost and taken again): the newer epoch is the only one that can be current."""
        newest: dict[int, int] = {}
        for envelope in envelopes:
            fence = envelope.message.fence
            if fence is not None and fence[1] > newest.get(fence[0], -1):
                newest[fence[0]] = fence[1]
        return self._answer_moved_if(envelopes, lambda fence: fence[1] < newest[fence[0]])

    def _refuse_fenced(
        self, envelopes: list[Envelope[Any]], lost: frozenset[int]
    ) -> list[Envelope[Any]]:
        logger.warning("shards %s were taken over by another node; dropping them", sorted(lost))
        if self.on_fenced is not None:
            self.on_fenced(lost)
        return self._answer_moved_if(envelopes, lambda fence: fence[0] in lost)

    @staticmethod
    def _answer_moved_if(
        envelopes: list[Envelope[Any]], moved: Callable[[tuple[int, int]], bool]
    ) -> list[Envelope[Any]]:
        """Answer `ShardMoved` to the commits whose fence is `moved`; the others, to write."""
        kept = []
        for envelope in envelopes:
            fence = envelope.message.fence
            if fence is not None and moved(fence):
                if envelope.reply_to is not None:
                    envelope.reply_to.set_exception((ShardMoved, ShardMoved(), None))
            else:
                kept.append(envelope)
        return kept

    async def _commit_fenced(self, envelopes: list[Envelope[Any]]) -> None:
        started = time.perf_counter()
        self.busy = True
        try:
            outcomes = await self._write(envelopes)
        except Fenced:
            raise
        except Exception as exc:
            if is_infrastructure_fault(exc):
                # An outage, not a bug: one line per failed commit, not a traceback each.
                logger.warning("group commit of %d units failed: %r", len(envelopes), exc)
            else:
                logger.exception("group commit of %d units failed", len(envelopes))
            # Failed before COMMIT, nothing landed; failed during it, nobody can say: its
            # senders treat the outcome as unknown either way (mps.actors.commits).
            _answer_all(envelopes, Unavailable("the database failed during the write; retry"), exc)
            return
        except BaseException as exc:
            # Cancelled mid-transaction (the loop is shutting down). These envelopes are out of
            # the inbox, so nothing else will answer them; whether the commit landed is unknown.
            cancelled = ActorDeadError("the writer was cancelled during a group commit")
            _answer_all(envelopes, cancelled, exc)
            raise
        finally:
            self.busy = False
        self.commits += 1
        self.units += len(envelopes)
        for envelope, outcome in zip(envelopes, outcomes, strict=True):
            if envelope.reply_to is None:
                if isinstance(outcome, BaseException):
                    logger.warning("a told write was refused: %s", outcome)
                continue
            if isinstance(outcome, BaseException):
                envelope.reply_to.set_exception((type(outcome), outcome, None))
            else:
                envelope.reply_to.set(outcome)
        if self.observe is not None:
            self.observe(len(envelopes), time.perf_counter() - started)
        if self.on_events is not None and inserts_events([e.message.statements for e in envelopes]):
            self.on_events()

    async def _write(self, envelopes: list[Envelope[Any]]) -> list[UnitOutcome]:
        """The batch's outcomes. Past `deadline` its writers are answered 503 at once (whether
        it landed is unknown to them); the write itself is not interrupted, since a transaction
        cut off mid-way leaves the connection in an unknown state, and the next batch waits
        for it to end."""
        fences = {
            e.message.fence[0]: e.message.fence[1] for e in envelopes if e.message.fence is not None
        }
        write = asyncio.ensure_future(
            self.database.write([e.message.statements for e in envelopes], fences)
        )
        try:
            return await asyncio.wait_for(asyncio.shield(write), self.deadline)
        except TimeoutError:
            logger.error(
                "a group commit of %d units is taking over %ss", len(envelopes), self.deadline
            )
            _answer_all(
                envelopes, LateWrite("the database did not confirm the write in time", write)
            )
            return await write
        except BaseException:
            write.cancel()
            raise

    async def receive(self, message: Any) -> Any:
        msg = f"persistence actor does not understand {type(message).__name__}"
        raise TypeError(msg)


def _answer_all(
    envelopes: list[Envelope[Any]], error: Exception, cause: BaseException | None = None
) -> None:
    """Answer `error` (raised from `cause`, when given) to every sender of the batch that
    awaits a reply."""
    if cause is not None:
        error.__cause__ = cause
    for envelope in envelopes:
        if envelope.reply_to is not None:
            envelope.reply_to.set_exception((type(error), error, None))
