"""A commit that fails, handled one way by every actor.

An actor decides in its turn and changes its memory at once (a reservation in the books, a
payout's new state, an invoice number taken), so the next message is decided against it; the
commit lands afterwards. When the commit fails, what the actor changed is undone, and what the
failure says about storage decides whether the actor may go on trusting its memory:

    refused   the unit rolled back whole, or was never written: ShardMoved (refused before
              writing), StaleWrite and its kin (a guard the unit carries: KeyAlreadyStored, an
              approved request run twice, a row changed meanwhile), a constraint another row
              holds (IntegrityConflict: a number taken), and a contract error a guard raised.
              Memory is as it was before the turn; the caller gets the refusal (a same-key
              retry is then answered from what is stored).
    unknown   Unavailable (the writer missed its deadline, the database went away mid-commit),
              a cancellation, or anything unexpected. Memory is as it was before the turn too,
              but storage may hold the unit after all, so the actor is marked stale: it
              reloads what storage holds before it decides again. When the write is still
              running (`LateWrite`: the writer answered at its deadline), the actor is also
              held until it has ended (mps.actors.runtime.hold_until): a reload before then
              would read storage without the unit and decide the next change on a guess.

Every actor that commits after deciding goes through `undo_on_failure`, so a refusal can never
be taken for a fault (a retried Idempotency-Key degrading the whole company), nor a fault for
a refusal (memory trusted while storage may differ).

The payment, card and invoice actors hand their units over through a `UnitChain`, which commits
one actor's units in the order its turns decided them and undoes them there; work detached from
a turn that needs a later turn of the same actor (a command let through an approval gate asked
outside the turn) sends it with `follow_up`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, TypeVar

from mps.actors.persistence import WRITE_DEADLINE, LateWrite
from mps.actors.runtime import ActorDeadError, ActorRef, ask, hold_until
from mps.errors import ServiceError, ShardMoved, StaleWrite, Unavailable
from mps.persistence.database import IntegrityConflict

__all__ = ["FOLLOW_UP_PATIENCE", "UnitChain", "follow_up", "outcome_unknown", "undo_on_failure"]

T = TypeVar("T")


def outcome_unknown(error: BaseException) -> bool:
    """Whether a commit that raised `error` may have landed all the same."""
    if isinstance(error, ShardMoved | StaleWrite | IntegrityConflict):
        return False
    if isinstance(error, Unavailable):
        return True
    # A contract error from a commit is a guard's answer (the unit rolled back whole); anything
    # else, cancellation included, leaves the outcome open.
    return not isinstance(error, ServiceError)


def _nothing() -> None:
    pass


@contextlib.contextmanager
def undo_on_failure(
    *, undo: Callable[[], None] = _nothing, stale: Callable[[], None] = _nothing
) -> Iterator[None]:
    """Around the await of a commit: on any failure, `undo` what the turn changed in memory,
    then, when the outcome is unknown, call `stale`, and hold the actor until a write still
    running has ended; the failure propagates either way."""
    try:
        yield
    except BaseException as error:
        undo()
        if outcome_unknown(error):
            stale()
            if (late := _late_write(error)) is not None:
                hold_until(late.landing)
        raise


def _late_write(error: BaseException) -> LateWrite | None:
    """The `LateWrite` behind `error`, should another error have been raised from it."""
    seen: set[int] = set()
    found: BaseException | None = error
    while found is not None and id(found) not in seen:
        if isinstance(found, LateWrite):
            return found
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return None


class UnitChain:
    """The units one actor's turns have handed over and not yet seen end, in turn order.

    A turn changes the actor's memory at once (its reservation) and returns `Detached` of
    `submit(...)`: the actor takes its next message while the unit commits, and that message is
    decided against the reservation. Each unit is sent once the one before it has ended, so one
    actor's units commit in the order its turns decided them, whether they go to the writer
    directly or through the company's books; units of other actors share group commits with
    them meanwhile.

    A unit that fails is undone through `undo_on_failure`. A unit decided on top of it (handed
    over before it ended) was decided against a reservation that no longer holds, and memory
    cannot be unwound past it one unit at a time: the actor is marked stale (it reloads before
    it decides again), and that unit is never sent, its caller told to try again.

    Concurrency context: the owning actor's event loop; `submit` is called in its turns only.
    """

    __slots__ = ("_stale", "_tail")

    def __init__(self, *, stale: Callable[[], None]) -> None:
        self._stale = stale
        # Whether the last unit handed over committed, once it has ended; None when none is out.
        self._tail: asyncio.Future[bool] | None = None

    def submit(
        self, send: Callable[[], Awaitable[T]], *, undo: Callable[[], None] = _nothing
    ) -> Coroutine[Any, Any, T]:
        """The detached work that commits a unit once the previous one has ended. `send`
        commits it (and adopts what it returns, such as recording a snapshot as committed);
        `undo` takes back what the turn reserved, should it fail."""
        previous = self._tail
        ended: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._tail = ended
        return self._run(previous, ended, send, undo)

    async def drained(self) -> None:
        """Return once every unit handed over so far has ended (for work that reads storage
        and must find there what this actor reserved)."""
        tail = self._tail
        if tail is not None:
            await asyncio.shield(tail)

    async def _run(
        self,
        previous: asyncio.Future[bool] | None,
        ended: asyncio.Future[bool],
        send: Callable[[], Awaitable[T]],
        undo: Callable[[], None],
    ) -> T:
        committed = False
        try:
            if previous is not None and not await asyncio.shield(previous):
                # Decided on a reservation that did not commit; the actor reloads (marked stale
                # when that unit failed) and decides the request again on a retry.
                msg = "An earlier change of this object was not committed; try again"
                raise Unavailable(msg, retry_after=1)
            with undo_on_failure(undo=undo, stale=self._stale):
                result = await send()
            committed = True
            return result
        finally:
            if not committed and self._tail is not ended:
                self._stale()
            if self._tail is ended:
                self._tail = None
            ended.set_result(committed)


# How long detached work waits for the answer of a follow-up turn of its own actor: the turn
# itself is quick, its unit waits at most for the one before it and then for its own commit,
# each bounded by the writer's deadline.
FOLLOW_UP_PATIENCE = 2 * WRITE_DEADLINE


async def follow_up(ref: ActorRef[Any], message: Any, *, within: float = FOLLOW_UP_PATIENCE) -> Any:
    """From an actor's detached work, send its actor `message` as a follow-up turn (a command
    let through a gate asked outside the turn, a command that waited outside the mailbox) and
    return that turn's answer.

    The wait is bounded: an actor stopping while the follow-up is still queued behind its stop
    waits for its detached work (this one) before it answers what is queued, so an unbounded
    wait would never end. A follow-up not answered in time, or refused by a stopped actor, is
    503 with Retry-After; what the caller asked for may still complete: retry with its
    Idempotency-Key."""
    try:
        return await asyncio.wait_for(ask(ref, message), within)
    except (ActorDeadError, TimeoutError) as exc:
        msg = "The change is being settled; try again"
        raise Unavailable(msg, retry_after=1) from exc
