"""What the payment, card and invoice actors share: one object each, in one mode, whose units
commit through a `UnitChain` (mps.actors.commits), to the writer or, for the payment and the card
(`BookingActor`), to their company's books when money moves; and the approval gate asked outside
a turn.

A unit of unknown outcome marks the actor stale; from then on every message is refused with
`Reload`, so the next one goes to a fresh incarnation that reads what storage holds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from mps.actors.commits import UnitChain, follow_up
from mps.actors.context import ActorContext
from mps.actors.runtime import ActorRef, AsyncioActor, Detached, Reload
from mps.domain.approvals import ApprovalRequest
from mps.domain.company import ModeSettings
from mps.domain.ledger import Books, Movement
from mps.errors import NotFound
from mps.persistence.statements import Statement

if TYPE_CHECKING:
    # Only named: the company's package imports the payment actor, which is built on this.
    from mps.actors.company.approvals import RequestApproval

__all__ = ["AskCompany", "BookingActor", "ChainedActor", "in_mode", "through_gate"]

# Asks the object's company actor (mps.actors.company): how money moves, and its approval gates.
AskCompany = Callable[[Any], Awaitable[Any]]


class _InMode(Protocol):
    @property
    def mode(self) -> str: ...


Held = TypeVar("Held", bound=_InMode)


def in_mode(held: Held | None, mode: str | None, missing: str) -> Held:
    """The object an actor holds, when there is one and it is in `mode` (any mode for None);
    404 `missing` otherwise: another mode's object is as invisible as another company's."""
    if held is None or (mode is not None and held.mode != mode):
        raise NotFound(missing)
    return held


async def through_gate(
    company: AskCompany, ref: ActorRef[Any], gate: RequestApproval, command: Any
) -> Any:
    """Detached work: the company's approval gate for `command` (a dataclass with a
    `requested_by`); the PENDING request it made, or, when none is needed, what the follow-up
    turn running `command` answers (with no requester, so it passes no gate again)."""
    approval: ApprovalRequest | None = await company(gate)
    if approval is not None:
        return approval
    return await follow_up(ref, replace(command, requested_by=None))


def _nothing() -> None:
    pass


class ChainedActor(AsyncioActor):
    """An actor whose turns hand their units to its `UnitChain`, one after another."""

    def __init__(self, context: ActorContext) -> None:
        super().__init__()
        self.context = context
        # A commit's outcome is unknown (the writer missed its deadline), or one was refused
        # under later reservations: what this actor holds may differ from storage.
        self._stale = False
        # The units its turns handed over, committed one after another (mps.actors.commits).
        self._units = UnitChain(stale=self._mark_stale)

    def _refuse_when_stale(self) -> None:
        """Called first in `receive`: a stale actor decides nothing more."""
        if self._stale:
            msg = "a commit of unknown outcome"
            raise Reload(msg)

    def _mark_stale(self) -> None:
        # The next message goes to a fresh incarnation.
        self._stale = True

    def _require(self, mode: str | None) -> _InMode:
        """The object this actor holds, in `mode` (`in_mode`)."""
        raise NotImplementedError

    def _write(
        self,
        statements: Sequence[Statement],
        outcome: Any,
        undo: Callable[[], None] = _nothing,
        *,
        committed: Callable[[], None] = _nothing,
    ) -> Detached:
        """Hand `statements` to the writer after the actor's earlier units: `outcome` once
        committed (`committed` told first), `undo` should they fail."""

        async def send() -> Any:
            await self.context.commit(*statements)
            committed()
            return outcome

        return Detached(self._units.submit(send, undo=undo))


class BookingActor(ChainedActor):
    """A `ChainedActor` whose object holds money in its company's books: a unit that moves
    money commits there, with the movements the company decides in its own turn."""

    def __init__(self, context: ActorContext, company: AskCompany) -> None:
        super().__init__(context)
        self.company = company

    def _book(
        self,
        decide: Callable[[Books, ModeSettings], list[Movement]],
        statements: Sequence[Statement] | Callable[[list[Movement]], Sequence[Statement]],
        *,
        undo: Callable[[], None],
        adopt: Callable[[list[Movement]], Any] = lambda movements: movements,
    ) -> Detached:
        """Hand `statements` to the company's books, with the movements `decide` picks, after
        the units before it; `undo` takes back what the turn reserved should it fail, and
        `adopt` (given the movements, once committed) makes the reply.

        The company decides the movements in its own turn, when the unit reaches it: this
        actor never waits for that turn, nor for the commit. A refusal there (the balance
        cannot take them) is a refused unit like any other: the reservation is undone and the
        caller gets the 409."""

        async def send() -> Any:
            return adopt(await self._book_now(decide, statements))

        return Detached(self._units.submit(send, undo=undo))

    async def _book_now(
        self,
        decide: Callable[[Books, ModeSettings], list[Movement]],
        statements: Sequence[Statement] | Callable[[list[Movement]], Sequence[Statement]],
    ) -> list[Movement]:
        """Detached work: commit `statements` through the company actor, with the movements
        `decide` picks."""
        # Here, not at the top: the company's package imports the payment actor, built on this.
        from mps.actors.company.ledger import Book

        mode = self._require(None).mode
        unit = statements if callable(statements) else (lambda _movements: statements)
        movements: list[Movement] = await self.company(Book(mode, decide, unit))
        return movements
