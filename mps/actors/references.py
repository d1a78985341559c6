"""Committing a new payment under a reference nobody holds.

A payment's reference (`PAY-` and 10 Crockford base32 characters, about 10^15 of them) is drawn
at random, because it names the payment's public checkout page and must not be guessable. Two
payments may therefore draw the same one; storage keeps references unique, so the second unit
fails with `ReferenceTaken`. That is no fault of the request: the unit is planned again under a
fresh reference and committed again, a bounded number of times. Any other failure of the unit
(an Idempotency-Key stored first, a stale snapshot, a lost database) is the caller's, untouched.

Used by the company actor (creating a payment) and the payment actor (a multi-use link's child
at checkout), in their detached commits: a retry changes nothing either actor holds.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from mps.actors.context import ActorContext
from mps.domain.payments import Payment
from mps.persistence.payment_store import ReferenceTaken
from mps.persistence.statements import Statement

__all__ = ["REFERENCE_ATTEMPTS", "References", "commit_new_payment"]

# With 32^10 references a second collision in a row means the generator is broken: stop, and
# let the caller see the error (a 500) rather than loop.
REFERENCE_ATTEMPTS = 3

# Draws a fresh payment reference (mps.domain.ids.payment_reference; tests pass their own).
References = Callable[[], str]


class NewPaymentReply(Protocol):
    """A reply naming the payment its unit creates."""

    @property
    def payment(self) -> Payment: ...


T = TypeVar("T", bound=NewPaymentReply)
Planned = tuple[T, Sequence[Statement]]

logger = logging.getLogger(__name__)


async def commit_new_payment(
    context: ActorContext,
    planned: Planned[T],
    plan: Callable[[str], Planned[T]],
    references: References,
    *,
    commit: Callable[[Sequence[Statement]], Awaitable[Any]] | None = None,
) -> T:
    """Commit `planned` (the reply and the unit that creates a payment, planned under a reference
    the caller drew); while its reference turns out to be taken, commit `plan(fresh reference)`
    instead. Returns the reply of the unit that committed; raises `ReferenceTaken` after
    `REFERENCE_ATTEMPTS` taken references, and whatever else a unit raises at once.

    `plan` builds the same payment (its id, times and checked rules fixed) under another
    reference, so every attempt stands for the same request.
    """

    async def write(statements: Sequence[Statement]) -> Any:
        return await context.commit(*statements)

    commit = commit or write
    reply, statements = planned
    for attempt in range(1, REFERENCE_ATTEMPTS):
        try:
            await commit(statements)
        except ReferenceTaken:
            # The reference itself is not logged: it opens the payment's checkout page.
            logger.warning(
                "a new payment's reference was taken (attempt %d of %d); drawing another",
                attempt,
                REFERENCE_ATTEMPTS,
            )
        else:
            return _recorded(context, reply)
        reply, statements = plan(references())
    # The last attempt: a taken reference now goes to the caller.
    await commit(statements)
    return _recorded(context, reply)


def _recorded(context: ActorContext, reply: T) -> T:
    # Committed: a read of the new payment on this node need not go to storage (mps.actors.recent).
    context.recent.record(reply.payment)
    return reply
