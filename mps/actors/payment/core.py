"""What every turn of the payment actor shares (mps.actors.payment.actor).

`PaymentCore` holds the actor's state (the committed snapshot, its PENDING refunds, its checkout
attempts in flight), plans a transition's unit (`_plan`), and commits it either directly
(`_apply`) or, when money moves, through the company's books (`_book`, mps.actors.company.ledger).
The checkout and refund turns (mps.actors.payment.checkout, mps.actors.payment.refunds) are built
on it; all of them run in the one payment actor, one message at a time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from mps.actors.attempts import Attempt
from mps.actors.commits import undo_on_failure
from mps.actors.company.ledger import Book
from mps.actors.context import ActorContext
from mps.actors.idempotency import IdempotencyRecord
from mps.actors.payment.messages import Outcome, with_customer
from mps.actors.references import References
from mps.actors.runtime import ActorDeadError, AsyncioActor
from mps.adapters.processor import Processor
from mps.auth.keyring import Keyring
from mps.domain import payments as rules
from mps.domain.company import ModeSettings
from mps.domain.ids import payment_reference
from mps.domain.ledger import Books, Movement
from mps.domain.payments import Payment, Transition
from mps.domain.refunds import Refund
from mps.errors import NotFound
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
# Asks the payment's company actor (mps.actors.company): how money moves.
AskCompany = Callable[[Any], Awaitable[Any]]


class PaymentCore(AsyncioActor):
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
        super().__init__()
        self.processor_deadline = processor_deadline
        self.refund_delay = refund_delay
        self.company = company
        self.payment_id = payment_id
        self.company_id = company_id
        self.context = context
        self.keyring = keyring
        self.processors = processors
        self.public_url = public_url
        self.references = references
        self._payment: Payment | None = None
        # Its PENDING refunds: what they hold is not refundable again.
        self.refunds: dict[str, Refund] = {}
        # A commit's outcome is unknown (the writer missed its deadline): what this actor holds
        # may differ from storage, so the next message goes to a fresh incarnation.
        self._stale = False
        # Checkout attempts whose authorization is in flight, by id (mps.actors.attempts).
        self._attempts: dict[str, Attempt] = {}
        # An attempt may be IN_FLIGHT in storage with no call of this incarnation behind it:
        # the next message goes to a fresh incarnation, whose activation settles it.
        self._unsettled = False

    def __str__(self) -> str:
        return f"PaymentActor({self.payment_id})"

    @property
    def payment(self) -> Payment | None:
        """The committed snapshot (loaded, or adopted after its commit)."""
        return self._payment

    @payment.setter
    def payment(self, payment: Payment | None) -> None:
        # Whatever this actor holds is committed, so reads may answer from it (mps.actors.recent).
        self._payment = payment
        if payment is not None:
            self.context.recent.record(payment)

    def _require(self, mode: str | None) -> Payment:
        # Another mode's payment is as invisible as another company's.
        if self.payment is None or (mode is not None and self.payment.mode != mode):
            raise NotFound("No such payment")
        return self.payment

    def _tell_self(self, message: Any) -> None:
        with contextlib.suppress(ActorDeadError):
            self.actor_ref.tell(message)

    async def _apply(self, transition: Transition, idem: IdempotencyRecord | None) -> Outcome:
        """Commit the transition, then adopt its state and reply."""
        after, outcome, statements = self._plan(self._require(None), transition, idem)
        with undo_on_failure(stale=self._mark_stale):
            await self.context.commit(*statements)
        self.payment = after
        return outcome

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

    async def _book(
        self,
        decide: Callable[[Books, ModeSettings], list[Movement]],
        statements: Sequence[Statement] | Callable[[list[Movement]], Sequence[Statement]],
    ) -> list[Movement]:
        """Commit `statements` through the company actor, with the movements `decide` picks."""
        payment = self._require(None)
        unit = statements if callable(statements) else (lambda _movements: statements)
        with undo_on_failure(stale=self._mark_stale):
            movements: list[Movement] = await self.company(Book(payment.mode, decide, unit))
        return movements

    def _mark_stale(self) -> None:
        # A commit of unknown outcome: the next message goes to a fresh incarnation, and reads
        # stop answering from this one's memory.
        self._stale = True
        self.context.recent.forget(self.payment_id)
