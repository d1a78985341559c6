"""What every turn of the payment actor shares (mps.actors.payment.actor).

`PaymentCore` holds the actor's state (the payment as its turns left it, its PENDING refunds,
its checkout attempts in flight), plans a transition's unit (`_plan`), and hands it over either
to the writer (`_apply`) or, when money moves, to the company's books (`_book`,
mps.actors.company.ledger). No turn waits for either: it reserves the change in memory, hands
the unit to the actor's `UnitChain` (mps.actors.commits) as detached work, and takes its next
message, which is decided against the reservation; the caller's reply waits for the commit. The
chain sends one unit after another, so the payment's units commit in the order they were
decided, and a unit refused or of unknown outcome is undone there. The checkout and refund
turns (mps.actors.payment.checkout, mps.actors.payment.refunds) are built on it; all of them
run in the one payment actor, one message at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from mps.actors.attempts import Attempt
from mps.actors.chained import AskCompany, BookingActor, in_mode
from mps.actors.context import ActorContext
from mps.actors.idempotency import IdempotencyRecord
from mps.actors.payment.messages import Outcome, with_customer
from mps.actors.references import References
from mps.actors.runtime import ActorDeadError, Detached
from mps.adapters.processor import Processor
from mps.auth.keyring import Keyring
from mps.domain import payments as rules
from mps.domain.ids import payment_reference
from mps.domain.payments import Payment, Transition
from mps.domain.refunds import Refund
from mps.persistence.analytics_store import rollup_statements
from mps.persistence.payment_store import (
    customer_statements,
    event_statements,
    payment_insert,
    payment_update,
)
from mps.persistence.statements import Statement
from mps.representations.payments import payment_json

__all__ = ["PROCESSOR_DEADLINE", "REFUND_DELAY", "AskCompany", "PaymentCore"]


PROCESSOR_DEADLINE = 10.0
# How long after its creation a refund is put to the processor (mps.actors.money): long enough
# for the sandbox to force an outcome first, short enough for test mode's 2 s promise.
REFUND_DELAY = 1.0


class PaymentCore(BookingActor):
    def __init__(
        self,
        payment_id: str,
        company_id: str,
        context: ActorContext,
        keyring: Keyring,
        processors: dict[str, Processor | None],
        public_url: str,
        company: AskCompany,
        *,
        references: References = payment_reference,
        processor_deadline: float = PROCESSOR_DEADLINE,
        refund_delay: float = REFUND_DELAY,
    ) -> None:
        super().__init__(context, company)
        self.processor_deadline = processor_deadline
        self.refund_delay = refund_delay
        self.payment_id = payment_id
        self.company_id = company_id
        self.keyring = keyring
        self.processors = processors
        self.public_url = public_url
        self.references = references
        self.payment: Payment | None = None
        # Its PENDING refunds (those whose creation is in flight included): what they hold is
        # not refundable again.
        self.refunds: dict[str, Refund] = {}
        # What the company's books took from pending for a refund whose creation committed
        # after a settle had already taken it from `refunds` (its release gives that back).
        self._from_pending: dict[str, int] = {}
        # Checkout attempts whose authorization is in flight, by id (mps.actors.attempts).
        self._attempts: dict[str, Attempt] = {}
        # Recalls of attempts a fault left IN_FLIGHT, running beside the actor (None while
        # there are none, as for nearly every payment: an empty set is some 200 bytes).
        self._recalls: set[asyncio.Task[None]] | None = None
        # An attempt may be IN_FLIGHT in storage with no call of this incarnation behind it:
        # the next message goes to a fresh incarnation, whose activation settles it.
        self._unsettled = False

    def __str__(self) -> str:
        return f"PaymentActor({self.payment_id})"

    def _require(self, mode: str | None) -> Payment:
        return in_mode(self.payment, mode, "No such payment")

    def _tell_self(self, message: Any) -> None:
        with contextlib.suppress(ActorDeadError):
            self.actor_ref.tell(message)

    def _apply(self, transition: Transition, idem: IdempotencyRecord | None) -> Detached:
        """Reserve the transition's state now and commit it detached; the reply (its Outcome)
        once committed."""
        before = self._require(None)
        after, outcome, statements = self._plan(before, transition, idem)
        self.payment = after
        return self._write(
            statements,
            outcome,
            lambda: self._restore(before),
            committed=lambda: self._committed(after),
        )

    def _plan(
        self, before: Payment, transition: Transition, idem: IdempotencyRecord | None
    ) -> tuple[Payment, Outcome, list[Statement]]:
        """The payment after the transition from `before`, the reply, and the unit that commits
        both."""
        after = with_customer(transition.payment, self.keyring)
        declined = any(e.type == "payment.failed" for e in transition.events)
        statements: list[Statement] = []
        if after != before:
            statements += [
                payment_update(before, after),
                *rollup_statements(before, after, declined=declined),
            ]
        if after.customer_id and after.customer_id != before.customer_id:
            statements += customer_statements(after)
        result = after
        if transition.child is not None:
            result = with_customer(transition.child, self.keyring)
            statements += [
                payment_insert(result),
                *customer_statements(result),
                *rollup_statements(None, result),
            ]
        # Events were built before customers were linked; they show the linked snapshots.
        linked = {after.id: after, result.id: result}
        events = [
            rules.Event(e.type, linked.get(e.payment.id, e.payment)) for e in transition.events
        ]
        event_writes, bodies = event_statements(events, lambda p: payment_json(p, self.public_url))
        statements += event_writes
        outcome = Outcome(result, bodies)
        if idem is not None:
            statements += idem.statements(outcome)
        return after, outcome, statements

    def _committed(self, payment: Payment) -> None:
        # Committed: reads on this node may answer from it (mps.actors.recent). A reservation
        # is never recorded, so a read never sees what storage may yet refuse.
        self.context.recent.record(payment)

    def _restore(self, before: Payment) -> None:
        self.payment = before

    def _mark_stale(self) -> None:
        # Reads stop answering from this incarnation's memory too.
        super()._mark_stale()
        self.context.recent.forget(self.payment_id)
