"""The payment actor itself: its activation, its dispatch, expiry and chargebacks.

The turns it shares with the modules beside it are in `core`; checkout in `checkout`, refunds in
`refunds`. Every one of them runs in this actor, one message at a time, and none waits: each
reserves its change and hands the unit over (`core`). Activation only reads storage (the
payment; a paid one's PENDING refunds, a PENDING one's attempts a fault left IN_FLIGHT); asking
the processor what it answered to those attempts runs beside the actor (`checkout`), never in a
turn, and commands wait for that answer's booking outside the mailbox.
"""

from __future__ import annotations

from typing import Any

from mps.actors.attempts import Abandoned, Answered, Recalled, SettleAttempts
from mps.actors.idempotency import IdempotencyRecord
from mps.actors.payment.checkout import CheckoutTurns
from mps.actors.payment.messages import (
    Cancel,
    Checkout,
    CreateRefund,
    Expire,
    Outcome,
    Reverse,
    SettleRefund,
)
from mps.actors.payment.refunds import RefundTurns
from mps.actors.runtime import AsyncioActor, Detached, Reload
from mps.domain import payments as rules
from mps.domain.company import ModeSettings
from mps.domain.ledger import Books, Movement
from mps.domain.payments import Payment
from mps.persistence.approval_store import NotApproved
from mps.persistence.payment_store import load_payment
from mps.persistence.refund_store import pending_refunds

__all__ = ["PaymentActor"]


class PaymentActor(CheckoutTurns, RefundTurns):
    # An approved refund run a second time is refused whole by its request's guard: nothing
    # was adopted, so it is an answer for the runner, not a reason to reload.
    expected_errors = (*AsyncioActor.expected_errors, NotApproved)

    async def on_activate(self) -> None:
        db = self.context.database
        self.payment = await load_payment(db, self.company_id, self.payment_id)
        if self.payment is not None:
            self._committed(self.payment)
        # Only a payment that collected money can have refunds: a PENDING one (most of those
        # an activation meets) costs no second read.
        if self.payment is not None and self.payment.paid_at is not None:
            found = await pending_refunds(db, self.company_id, self.payment_id)
            self.refunds = {refund.id: refund for refund in found}
        # Only a PENDING payment can hold an attempt in flight: cancel and expiry wait for it.
        if self.payment is not None and self.payment.status == "PENDING":
            await self._recall_left_in_flight()

    async def receive(self, message: Any) -> Any:
        self._refuse_when_stale()
        if self._unsettled:
            msg = "a checkout attempt to settle from storage"
            raise Reload(msg)
        match message:
            case Answered():
                return self._answered(message)
            case Recalled():
                return self._recalled(message)
            case Abandoned():
                return self._abandoned(message)
            case SettleAttempts():
                return None  # activation took what storage held; the rest is in flight
        if self._recalling():
            # A command must meet the payment as the attempt a fault left leaves it: it comes
            # back once the recall is booked, without holding up the mailbox meanwhile.
            return self._after_recall(message)
        match message:
            case Cancel(mode=mode, idempotency=idem):
                payment = self._require(mode)
                self._refuse_while_authorizing("cancelled")
                return self._apply(rules.cancel(payment, self.context.clock()), idem)
            case Reverse(mode=mode, idempotency=idem):
                return self._reverse(self._require(mode), idem)
            case CreateRefund():
                return self._create_refund(message)
            case SettleRefund():
                return self._settle_refund(message)
            case Expire():
                return self._expire(message)
            case Checkout():
                return self._checkout(message)
        msg = f"PaymentActor does not understand {type(message).__name__}"
        raise TypeError(msg)

    def _expire(self, command: Expire) -> Detached | None:
        payment = self._require(command.mode)
        now = self.context.clock()
        if command.due_only and not payment.is_due_to_expire(now):
            return None
        if command.due_only and self._attempts:
            # The checkout in flight started first: its answer decides, and should it not
            # pay, the scheduler's next pass expires the payment.
            return None
        self._refuse_while_authorizing("expired")
        return self._apply(rules.expire(payment, now), command.idempotency)

    def _reverse(self, payment: Payment, idem: IdempotencyRecord | None) -> Detached:
        """A chargeback: the payment becomes REVERSED and what no refund holds or has taken
        leaves the balance."""
        now = self.context.clock()
        transition = rules.reverse(payment, now)
        held = sum(r.amount_minor for r in self.refunds.values())
        taken = payment.amount_minor - payment.amount_refunded_minor - held
        after, outcome, statements = self._plan(payment, transition, idem)

        def chargeback(books: Books, _settings: ModeSettings) -> list[Movement]:
            return (
                [
                    books.chargeback(
                        payment.mode, payment.currency, payment.id, taken, after.updated_at
                    )
                ]
                if taken > 0
                else []
            )

        self.payment = after

        def adopt(_movements: list[Movement]) -> Outcome:
            self._committed(after)
            return outcome

        return self._book(chargeback, statements, undo=lambda: self._restore(payment), adopt=adopt)
