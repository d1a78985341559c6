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
import contextlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from mps.actors.company.messages import Book, RequestApproval
from mps.actors.context import ActorContext
from mps.actors.idempotency import IdempotencyRecord
from mps.actors.references import References, commit_new_payment
from mps.actors.runtime import AsyncioActor, Detached, Reload
from mps.adapters.processor import CardInput, Processor
from mps.auth.keyring import Keyring
from mps.domain import payments as rules
from mps.domain import refunds as refund_rules
from mps.domain.approvals import ApprovalRequest
from mps.domain.audit import SYSTEM, AuditContext
from mps.domain.company import ModeSettings
from mps.domain.ids import new_id, payment_reference
from mps.domain.ledger import Books, Movement
from mps.domain.payments import Payment, Transition
from mps.domain.refunds import Refund, RefundTransition
from mps.errors import Conflict, NotFound, PaymentDeclined, ShardMoved, Unavailable
from mps.persistence.analytics_store import rollup_statements
from mps.persistence.approval_store import NotApproved
from mps.persistence.payment_store import (
    customer_statements,
    event_statements,
    load_payment,
    payment_insert,
    payment_update,
)
from mps.persistence.refund_store import (
    pending_refunds,
    refund_events,
    refund_insert,
    refund_update,
)
from mps.persistence.statements import Statement

PROCESSOR_DEADLINE = 10.0
# How long after its creation a refund is put to the processor (mps.actors.money): long enough
# for the sandbox to force an outcome first, short enough for test mode's 2 s promise.
REFUND_DELAY = 1.0
# Asks the payment's company actor (mps.actors.company): how money moves.
AskCompany = Callable[[Any], Awaitable[Any]]

__all__ = [
    "PROCESSOR_DEADLINE",
    "Cancel",
    "Checkout",
    "CheckoutDeclined",
    "CreateRefund",
    "Expire",
    "Outcome",
    "PaymentActor",
    "RefundOutcome",
    "Reverse",
    "SettleRefund",
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


@dataclass(frozen=True)
class CreateRefund:
    """Reply: a RefundOutcome with the PENDING refund and its refund.created event; or, when
    the amount is above the refund.create policy's threshold (and `approved` is not set), the
    PENDING ApprovalRequest the company made instead."""

    mode: str
    amount_minor: int
    reason: str | None = None
    idempotency: IdempotencyRecord | None = None
    # Who asks, for an approval request; None (the sandbox, an approved request) asks none.
    requested_by: str | None = None
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class SettleRefund:
    """Reply: a RefundOutcome. The processor's answer (or the sandbox's): `completed` True
    completes the refund, False rejects it with `reason`. 409 unless it is PENDING."""

    refund_id: str
    completed: bool
    reason: str | None = None
    mode: str | None = None
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class RefundOutcome:
    refund: Refund
    events: list[dict[str, Any]]


class CheckoutDeclined(PaymentDeclined):
    """402: the card was declined. The attempt and its payment.failed event are committed."""

    def __init__(self, outcome: Outcome, code: str) -> None:
        message = (
            "The card has insufficient funds"
            if code == "insufficient_funds"
            else "The card was declined"
        )
        super().__init__(message, code=code)
        self.outcome = outcome


def _credit(paid: Payment) -> Callable[[Books, ModeSettings], list[Movement]]:
    """The ledger credit of a payment that became PAID, settling after the mode's delay."""

    def decide(books: Books, settings: ModeSettings) -> list[Movement]:
        return books.payment(
            paid.mode,
            paid.currency,
            paid.id,
            paid.amount_minor,
            paid.updated_at,
            settings.settlement_delay_sec,
        )

    return decide


def _with_split(refund: Refund, movements: list[Movement]) -> Refund:
    """The refund with the part of its reservation that came from pending."""
    [reservation] = movements
    return replace(refund, from_pending_minor=-reservation.change("pending"))


def with_customer(payment: Payment, keyring: Keyring) -> Payment:
    if not (payment.customer_email or payment.customer_phone):
        return payment
    customer_id = keyring.customer_id(
        payment.company_id, payment.mode, payment.customer_email, payment.customer_phone
    )
    return replace(payment, customer_id=customer_id)


class PaymentActor(AsyncioActor):
    # An approved refund run a second time is refused whole by its request's guard: nothing
    # was adopted, so it is an answer for the runner, not a reason to reload.
    expected_errors = (*AsyncioActor.expected_errors, NotApproved)

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

    async def on_activate(self) -> None:
        db = self.context.database
        self.payment = await load_payment(db, self.company_id, self.payment_id)
        # Only a payment that collected money can have refunds: a PENDING one (most of those
        # an activation meets) costs no second read.
        if self.payment is not None and self.payment.paid_at is not None:
            found = await pending_refunds(db, self.company_id, self.payment_id)
            self.refunds = {refund.id: refund for refund in found}

    def _require(self, mode: str | None) -> Payment:
        # Another mode's payment is as invisible as another company's.
        if self.payment is None or (mode is not None and self.payment.mode != mode):
            raise NotFound("No such payment")
        return self.payment

    async def receive(self, message: Any) -> Any:
        if self._stale:
            msg = "a commit of unknown outcome"
            raise Reload(msg)
        match message:
            case Cancel(mode=mode, idempotency=idem):
                payment = self._require(mode)
                return await self._apply(rules.cancel(payment, self.context.clock()), idem)
            case Reverse(mode=mode, idempotency=idem):
                return await self._reverse(self._require(mode), idem)
            case CreateRefund():
                return await self._create_refund(message)
            case SettleRefund():
                return await self._settle_refund(message)
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
        paid = outcome.payment
        credit = _credit(paid)
        if after == payment:
            # Only a child was made (a multi-use link): nothing this actor holds changes, so
            # the next shopper need not wait for this commit, and a burst on one link shares
            # group commits. Should the child's reference be taken, the same child is planned
            # again under another (from the snapshot of this turn, not whatever is current).
            return Detached(
                commit_new_payment(
                    self.context,
                    (outcome, statements),
                    lambda r: plan(r)[1:],
                    self.references,
                    commit=lambda unit: self._book(credit, unit),
                )
            )
        await self._book(credit, statements)
        self.payment = after
        self.context.recent.record(paid)
        return outcome

    async def _book(
        self,
        decide: Callable[[Books, ModeSettings], list[Movement]],
        statements: Sequence[Statement] | Callable[[list[Movement]], Sequence[Statement]],
    ) -> list[Movement]:
        """Commit `statements` through the company actor, with the movements `decide` picks."""
        payment = self._require(None)
        unit = statements if callable(statements) else (lambda _movements: statements)
        with self._unknown_outcome_reloads():
            movements: list[Movement] = await self.company(Book(payment.mode, decide, unit))
        return movements

    @contextlib.contextmanager
    def _unknown_outcome_reloads(self) -> Iterator[None]:
        try:
            yield
        except ShardMoved:
            raise  # refused before writing: nothing landed
        except Unavailable:
            self._stale = True
            self.context.recent.forget(self.payment_id)
            raise

    async def _reverse(self, payment: Payment, idem: IdempotencyRecord | None) -> Outcome:
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

        await self._book(chargeback, statements)
        self.payment = after
        return outcome

    async def _create_refund(self, command: CreateRefund) -> RefundOutcome | ApprovalRequest:
        payment = self._require(command.mode)
        now = self.context.clock()
        held = sum(r.amount_minor for r in self.refunds.values())
        # The refund's own checks first: a refund that could not run is not put to a vote.
        refund_rules.create(
            payment, held, refund_id="re_check", amount=command.amount_minor,
            reason=None, now=now, process_after=now,
        )  # fmt: skip
        if command.requested_by is not None:
            payload = {
                "paymentId": payment.id,
                "amountMinor": str(command.amount_minor),
                "reason": command.reason,
            }
            gate = RequestApproval(
                payment.mode, "refund.create", payment.currency, command.amount_minor, payload,
                command.requested_by, command.audit, command.idempotency,
            )  # fmt: skip
            approval: ApprovalRequest | None = await self.company(gate)
            if approval is not None:
                return approval
        refund = refund_rules.create(
            payment,
            held,
            refund_id=new_id("re"),
            amount=command.amount_minor,
            reason=command.reason,
            now=now,
            process_after=now + timedelta(seconds=self.refund_delay),
        )
        events, bodies = refund_events(refund, ("refund.created",))
        outcome = RefundOutcome(refund, bodies)

        def reserve(books: Books, _settings: ModeSettings) -> list[Movement]:
            return [
                books.refund_reservation(
                    refund.mode, refund.currency, refund.id, refund.amount_minor, refund.created_at
                )
            ]

        def unit(movements: list[Movement]) -> list[Statement]:
            stored = _with_split(refund, movements)
            statements = [refund_insert(stored), *events]
            if command.idempotency is not None:
                statements += command.idempotency.statements(outcome)
            return statements

        movements = await self._book(reserve, unit)
        self.refunds[refund.id] = _with_split(refund, movements)
        return outcome

    async def _settle_refund(self, command: SettleRefund) -> RefundOutcome:
        payment = self._require(command.mode)
        refund = self.refunds.get(command.refund_id)
        if refund is None:
            raise Conflict("The refund is not PENDING", code="invalid_state")
        now = self.context.clock()
        transition: RefundTransition
        if command.completed:
            transition = refund_rules.complete(payment, refund, now)
        else:
            transition = refund_rules.reject(payment, refund, now, command.reason or "rejected")
        after, done = transition.payment, transition.refund
        statements: list[Statement] = [refund_update(refund, done)]
        if after != payment:
            statements += [payment_update(payment, after), *rollup_statements(payment, after)]
        event_writes, bodies = refund_events(done, transition.refund_events)
        payment_writes, payment_bodies = event_statements(
            transition.payment_events, self.public_url
        )
        statements += [*event_writes, *payment_writes]
        outcome = RefundOutcome(done, [*bodies, *payment_bodies])
        if command.idempotency is not None:
            statements += command.idempotency.statements(outcome)
        stamp = done.updated_at

        def move(books: Books, _settings: ModeSettings) -> list[Movement]:
            if command.completed:
                return [books.refund(done.mode, done.currency, done.id, done.amount_minor, stamp)]
            if payment.status == "REVERSED":
                # The chargeback took what this refund did not hold; now that the shopper gets
                # this part back through the chargeback, it leaves the balance too.
                return [
                    books.chargeback_reserved(
                        done.mode, done.currency, payment.id, done.amount_minor, stamp
                    )
                ]
            return [
                books.refund_release(
                    done.mode,
                    done.currency,
                    done.id,
                    refund.from_pending_minor,
                    done.amount_minor,
                    stamp,
                )
            ]

        await self._book(move, statements)
        del self.refunds[refund.id]
        self.payment = after
        return outcome

    async def _apply(self, transition: Transition, idem: IdempotencyRecord | None) -> Outcome:
        """Commit the transition, then adopt its state and reply."""
        after, outcome, statements = self._plan(self._require(None), transition, idem)
        with self._unknown_outcome_reloads():
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
        event_writes, bodies = event_statements(events, self.public_url)
        statements += event_writes
        outcome = Outcome(result, bodies)
        if idem is not None:
            statements += idem.statements(outcome)
        return after, outcome, statements
