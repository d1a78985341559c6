"""The payment actor: one per payment, applying its transitions one at a time.

Because a payment's checkout, cancel, expiry and reversal all arrive here as messages, a race
between them has exactly one winner: the first to be handled changes the state, the others find
it no longer PENDING and answer 409. Each transition commits the payment, the customer it names
and its events in one unit before the actor adopts the new state and replies. A multi-use link's
checkout creates a child payment, whose random reference is drawn again should another payment
hold it already (mps.actors.references).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any

from mps.actors.context import ActorContext
from mps.actors.idempotency import IdempotencyRecord
from mps.actors.references import References, commit_new_payment
from mps.actors.runtime import AsyncioActor, Detached
from mps.adapters.processor import CardInput, Processor
from mps.auth.keyring import Keyring
from mps.domain import payments as rules
from mps.domain.ids import new_id, payment_reference
from mps.domain.payments import Payment, Transition
from mps.errors import NotFound, PaymentDeclined, Unavailable
from mps.persistence.payment_store import (
    customer_statements,
    event_statements,
    load_payment,
    payment_insert,
    payment_update,
)
from mps.persistence.statements import Statement

PROCESSOR_DEADLINE = 10.0

__all__ = [
    "PROCESSOR_DEADLINE",
    "Cancel",
    "Checkout",
    "CheckoutDeclined",
    "Expire",
    "Outcome",
    "PaymentActor",
    "Reverse",
    "with_customer",
]


@dataclass(frozen=True)
class Outcome:
    """What a command did: the payment after it (the child, for a multi-use link's checkout)
    and the events it emitted, as stored."""

    payment: Payment
    events: list[dict[str, Any]]


@dataclass(frozen=True)
class Cancel:
    mode: str
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class Expire:
    """Expire the payment. `due_only`: only if its expiresAt has passed (the scheduler's case);
    the sandbox forces it."""

    mode: str | None = None
    due_only: bool = True
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class Reverse:
    mode: str
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class Checkout:
    card: CardInput
    email: str | None
    phone: str | None
    mode: str | None = None
    idempotency: IdempotencyRecord | None = None


class CheckoutDeclined(PaymentDeclined):
    """402: the card was declined. The attempt and its payment.failed event are committed."""

    def __init__(self, outcome: Outcome, code: str) -> None:
        reason = "insufficient funds" if code == "insufficient_funds" else "declined"
        super().__init__(f"The card was {reason}", code=code)
        self.outcome = outcome


def with_customer(payment: Payment, keyring: Keyring) -> Payment:
    if not (payment.customer_email or payment.customer_phone):
        return payment
    customer_id = keyring.customer_id(
        payment.company_id, payment.mode, payment.customer_email, payment.customer_phone
    )
    return replace(payment, customer_id=customer_id)


class PaymentActor(AsyncioActor):
    def __init__(
        self,
        payment_id: str,
        company_id: str,
        context: ActorContext,
        keyring: Keyring,
        processors: dict[str, Processor | None],
        public_url: str,
        *,
        references: References = payment_reference,
        processor_deadline: float = PROCESSOR_DEADLINE,
    ) -> None:
        super().__init__()
        self.processor_deadline = processor_deadline
        self.payment_id = payment_id
        self.company_id = company_id
        self.context = context
        self.keyring = keyring
        self.processors = processors
        self.public_url = public_url
        self.references = references
        self.payment: Payment | None = None

    def __str__(self) -> str:
        return f"PaymentActor({self.payment_id})"

    async def on_activate(self) -> None:
        self.payment = await load_payment(self.context.database, self.company_id, self.payment_id)

    def _require(self, mode: str | None) -> Payment:
        # Another mode's payment is as invisible as another company's.
        if self.payment is None or (mode is not None and self.payment.mode != mode):
            raise NotFound("No such payment")
        return self.payment

    async def receive(self, message: Any) -> Any:
        match message:
            case Cancel(mode=mode, idempotency=idem):
                payment = self._require(mode)
                return await self._apply(rules.cancel(payment, self.context.clock()), idem)
            case Reverse(mode=mode, idempotency=idem):
                payment = self._require(mode)
                return await self._apply(rules.reverse(payment, self.context.clock()), idem)
            case Expire():
                return await self._expire(message)
            case Checkout():
                return await self._checkout(message)
        msg = f"PaymentActor does not understand {type(message).__name__}"
        raise TypeError(msg)

    async def _expire(self, command: Expire) -> Outcome | None:
        payment = self._require(command.mode)
        now = self.context.clock()
        if command.due_only and not payment.is_due_to_expire(now):
            return None
        return await self._apply(rules.expire(payment, now), command.idempotency)

    async def _checkout(self, command: Checkout) -> Outcome | Detached:
        payment = self._require(command.mode)
        now = self.context.clock()
        if payment.is_due_to_expire(now):
            # Expiry may not have been applied yet (it runs every second); it wins the race.
            await self._apply(rules.expire(payment, now), None)
            payment = self._require(None)
        rules.check_payable(payment, now)
        processor = self.processors.get(payment.mode)
        if processor is None:
            msg = "Live card processing is not configured"
            raise Unavailable(msg, code="processor_unavailable")
        try:
            # The only awaited call in a payment's turn that is not its own commit: bounded, so
            # a processor that hangs cannot hold the payment (and its shopper) indefinitely.
            async with asyncio.timeout(self.processor_deadline):
                result = await processor.authorize(
                    command.card, payment.amount_minor, payment.currency
                )
        except TimeoutError as exc:
            msg = "The card processor did not answer in time; try again"
            raise Unavailable(msg, code="processor_timeout") from exc
        now = self.context.clock()
        if not result.approved:
            outcome = await self._apply(rules.checkout_declined(payment, now), None)
            raise CheckoutDeclined(outcome, result.decline_code or "card_declined")
        child_id = new_id("pay")

        def plan(child_reference: str) -> tuple[Payment, Outcome, list[Statement]]:
            transition = rules.checkout_succeeded(
                payment,
                now,
                brand=result.brand,
                last4=result.last4,
                email=command.email,
                phone=command.phone,
                child_id=child_id,
                child_reference=child_reference,
            )
            return self._plan(payment, transition, command.idempotency)

        after, outcome, statements = plan(self.references())
        if after == payment:
            # Only a child was made (a multi-use link): nothing this actor holds changes, so
            # the next shopper need not wait for this commit, and a burst on one link shares
            # group commits. Should the child's reference be taken, the same child is planned
            # again under another (from the snapshot of this turn, not whatever is current).
            return Detached(
                commit_new_payment(
                    self.context, (outcome, statements), lambda r: plan(r)[1:], self.references
                )
            )
        await self.context.commit(*statements)
        self.payment = after
        return outcome

    async def _apply(self, transition: Transition, idem: IdempotencyRecord | None) -> Outcome:
        """Commit the transition, then adopt its state and reply."""
        after, outcome, statements = self._plan(self._require(None), transition, idem)
        await self.context.commit(*statements)
        self.payment = after
        return outcome

    def _plan(
        self, before: Payment, transition: Transition, idem: IdempotencyRecord | None
    ) -> tuple[Payment, Outcome, list[Statement]]:
        """The payment after the transition from `before`, the reply, and the unit that commits
        both."""
        after = with_customer(transition.payment, self.keyring)
        statements: list[Statement] = [payment_update(before, after)] if after != before else []
        if after.customer_id and after.customer_id != before.customer_id:
            statements += customer_statements(after)
        result = after
        if transition.child is not None:
            result = with_customer(transition.child, self.keyring)
            statements += [payment_insert(result), *customer_statements(result)]
        # Events were built before customers were linked; they show the linked snapshots.
        linked = {after.id: after, result.id: result}
        events = [
            rules.Event(e.type, linked.get(e.payment.id, e.payment)) for e in transition.events
        ]
        event_writes, bodies = event_statements(events, self.public_url)
        statements += event_writes
        outcome = Outcome(result, bodies)
        if idem is not None:
            statements += idem.statements(outcome)
        return after, outcome, statements
