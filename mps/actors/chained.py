"""What the payment, card and invoice actors share: one object each, in one mode, whose units
commit through a `UnitChain` (mps.actors.commits), and the approval gate asked outside a turn.

A unit of unknown outcome marks the actor stale; from then on every message is refused with
`Reload`, so the next one goes to a fresh incarnation that reads what storage holds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from mps.actors.commits import UnitChain, follow_up
from mps.actors.runtime import ActorRef, AsyncioActor, Reload
from mps.domain.approvals import ApprovalRequest
from mps.errors import NotFound

if TYPE_CHECKING:
    # Only named: the company's package imports the payment actor, which is built on this.
    from mps.actors.company.approvals import RequestApproval

__all__ = ["AskCompany", "ChainedActor", "in_mode", "through_gate"]

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


class ChainedActor(AsyncioActor):
    """An actor whose turns hand their units to its `UnitChain`, one after another."""

    def __init__(self) -> None:
        super().__init__()
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
