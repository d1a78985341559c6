"""The payment actor: one per payment, applying its transitions one at a time.

Because a payment's checkout, cancel, expiry and reversal all arrive here as messages, a race
between them has exactly one winner: the first to be handled changes the state, the others find
it no longer PENDING and answer 409. Each transition commits the payment, the customer it names
and its events in one unit before the actor adopts the new state and replies. A multi-use link's
checkout creates a child payment, whose random reference is drawn again should another payment
hold it already (mps.actors.references).

A checkout asks the card processor outside the actor's turn (mps.actors.attempts): the turn
reserves the attempt, detached work commits it IN_FLIGHT and asks the processor under the
attempt's idempotency key, and the answer comes back as a message whose turn books it. While an
authorization is in flight, cancel and a forced expiry are refused 409, the scheduler's expiry
waits, and a single-use payment's second checkout joins the same attempt or is refused 409; a
multi-use link's other shoppers start attempts of their own. An attempt left IN_FLIGHT by a
fault is settled from the processor's memory when the actor next activates, so an approval is
booked exactly once and a retry never charges the card again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from mps.actors.attempts import Abandoned, Answered, Attempt, SettleAttempts, Settles, retry_key
from mps.actors.commits import undo_on_failure
from mps.actors.company.messages import Book, RequestApproval
from mps.actors.context import ActorContext
from mps.actors.idempotency import IdempotencyRecord
from mps.actors.references import References, commit_new_payment
from mps.actors.runtime import ActorDeadError, AsyncioActor, Detached, Reload, ask
from mps.adapters.processor import Authorization, CardInput, Processor
from mps.auth.keyring import Keyring
from mps.domain import payments as rules
from mps.domain import refunds as refund_rules
from mps.domain.approvals import ApprovalRequest
from mps.domain.audit import SYSTEM, AuditContext
from mps.domain.clock import iso
from mps.domain.company import ModeSettings
from mps.domain.ids import new_id, payment_reference
from mps.domain.ledger import Books, Movement
from mps.domain.payments import Payment, Transition
from mps.domain.refunds import Refund, RefundTransition
from mps.errors import Conflict, NotFound, PaymentDeclined, Unavailable
from mps.persistence.analytics_store import rollup_statements
from mps.persistence.approval_store import NotApproved
from mps.persistence.attempt_store import (
    AttemptTaken,
    attempt_by_retry_key,
    attempt_insert,
    attempt_settle,
    unsettled_attempts,
)
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
from mps.representations.money import refund_json
from mps.representations.payments import payment_json

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
    "SettleAttempts",
    "SettleRefund",
    "with_customer",
]

logger = logging.getLogger(__name__)


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
    """Reply: the Outcome (the payment PAID, or a multi-use link's new child), or
    CheckoutDeclined. `key`: the shopper's Idempotency-Key, which names the attempt a retry is
    (mps.actors.attempts)."""

    card: CardInput
    email: str | None
    phone: str | None
    mode: str | None = None
    idempotency: IdempotencyRecord | None = None
    key: str | None = None


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

    async def on_activate(self) -> None:
        db = self.context.database
        self.payment = await load_payment(db, self.company_id, self.payment_id)
        # Only a payment that collected money can have refunds: a PENDING one (most of those
        # an activation meets) costs no second read.
        if self.payment is not None and self.payment.paid_at is not None:
            found = await pending_refunds(db, self.company_id, self.payment_id)
            self.refunds = {refund.id: refund for refund in found}
        # Only a PENDING payment can hold an attempt in flight: cancel and expiry wait for it.
        if self.payment is not None and self.payment.status == "PENDING":
            await self._settle_left_in_flight()

    def _require(self, mode: str | None) -> Payment:
        # Another mode's payment is as invisible as another company's.
        if self.payment is None or (mode is not None and self.payment.mode != mode):
            raise NotFound("No such payment")
        return self.payment

    async def receive(self, message: Any) -> Any:
        if self._stale:
            msg = "a commit of unknown outcome"
            raise Reload(msg)
        if self._unsettled:
            msg = "a checkout attempt to settle from storage"
            raise Reload(msg)
        match message:
            case Cancel(mode=mode, idempotency=idem):
                payment = self._require(mode)
                self._refuse_while_authorizing("cancelled")
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
            case Answered():
                return await self._answered(message)
            case Abandoned():
                return self._abandoned(message)
            case SettleAttempts():
                return None  # activation settled what storage held; the rest is in flight
        msg = f"PaymentActor does not understand {type(message).__name__}"
        raise TypeError(msg)

    async def _expire(self, command: Expire) -> Outcome | None:
        payment = self._require(command.mode)
        now = self.context.clock()
        if command.due_only and not payment.is_due_to_expire(now):
            return None
        if command.due_only and self._attempts:
            # The checkout in flight started first: its answer decides, and should it not
            # pay, the scheduler's next pass expires the payment.
            return None
        self._refuse_while_authorizing("expired")
        return await self._apply(rules.expire(payment, now), command.idempotency)

    def _refuse_while_authorizing(self, becoming: str) -> None:
        if self._attempts:
            msg = (
                f"A card payment of this payment is being processed; it cannot be {becoming} "
                "until the card's answer is in"
            )
            raise Conflict(msg, code="invalid_state")

    async def _checkout(self, command: Checkout) -> Outcome | Detached:
        """Reserve the attempt and hand its authorization to detached work; its answer comes
        back as `Answered` (mps.actors.attempts)."""
        payment = self._require(command.mode)
        key = retry_key(self.keyring, payment, command.card, command.key)
        same = next((a for a in self._attempts.values() if key and a.retry_key == key), None)
        if same is not None and command.key is not None:
            # The shopper's retry under the Idempotency-Key of an attempt in flight (its answer
            # lost on the way): it gets that attempt's answer, not a second charge. Without a
            # key, a second submit while the card is processed is 409 like any other: only one
            # submission of a form gets the payment (the contract's double submit).
            return Detached(same.joined())
        if self._attempts and not payment.allow_multiple:
            msg = "A card payment of this payment is being processed; wait for its answer"
            raise Conflict(msg, code="invalid_state")
        now = self.context.clock()
        if payment.is_due_to_expire(now):
            # Expiry may not have been applied yet (it runs every second); it wins the race.
            # With another shopper's attempt in flight it waits for that answer, but this
            # checkout is too late either way.
            if self._attempts:
                raise Conflict("This payment has expired", code="invalid_state")
            await self._apply(rules.expire(payment, now), None)
            payment = self._require(None)
        try:
            rules.check_payable(payment, now)
        except Conflict:
            if command.key is not None and key is not None and payment.paid_at is not None:
                # A retry under the Idempotency-Key whose attempt paid it; without a key the
                # contract's 409 stands (the payment is not PENDING).
                return Detached(self._answer_paid_again(payment, key))
            raise
        processor = self.processors.get(payment.mode)
        if processor is None:
            msg = "Live card processing is not configured"
            raise Unavailable(msg, code="processor_unavailable")
        attempt = Attempt(
            id=new_id("att"),
            retry_key=key,
            payment=payment,
            child_id=new_id("pay") if payment.allow_multiple else None,
            email=command.email,
            phone=command.phone,
            created_at=iso(now),
            card=command.card,
            idempotency=command.idempotency,
        )
        self._attempts[attempt.id] = attempt
        return Detached(self._authorize(attempt, processor))

    async def _answer_paid_again(self, payment: Payment, key: str) -> Outcome:
        """A checkout of a paid single-use payment under the Idempotency-Key of the attempt
        that paid it (its answer was lost, and the attempt was booked from storage): the
        payment, as paid; nothing is charged. Any other is 409."""
        stored = await attempt_by_retry_key(self.context.database, payment.company_id,
                                            payment.id, key)  # fmt: skip
        if stored is None or stored.status != "APPROVED":
            rules.check_payable(payment, self.context.clock())  # raises the 409 it is
        return Outcome(payment, [])

    async def _authorize(self, attempt: Attempt, processor: Processor) -> Outcome:
        """Detached work: record the attempt, ask the processor, have the actor book the answer.
        Its outcome (or error) also answers requests that joined the attempt."""
        try:
            outcome = await self._authorize_and_book(attempt, processor)
        except BaseException as error:
            attempt.resolve(error=error)
            raise
        attempt.resolve(outcome)
        return outcome

    async def _authorize_and_book(self, attempt: Attempt, processor: Processor) -> Outcome:
        assert attempt.card is not None
        try:
            await self.context.commit(attempt_insert(attempt.stored()))
        except AttemptTaken:
            # The shopper's retry of an attempt this incarnation no longer holds: stored
            # approved, it is answered from storage; still in flight elsewhere, try again.
            self._tell_self(Abandoned(attempt.id, unknown=False))
            return await self._answer_from_storage(attempt)
        except BaseException:
            # The row may have landed all the same: the next activation settles it (VOID).
            self._tell_self(Abandoned(attempt.id, unknown=True))
            raise
        try:
            # Bounded, so that a processor that hangs cannot hold the attempt (and the payment's
            # cancel and expiry) indefinitely; its answer is then recalled at reload.
            async with asyncio.timeout(self.processor_deadline):
                answer = await processor.authorize(
                    attempt.card,
                    attempt.payment.amount_minor,
                    attempt.payment.currency,
                    idempotency_key=attempt.id,
                )
        except BaseException as exc:
            # Whether the card was charged is unknown: the processor's memory will say.
            self._tell_self(Abandoned(attempt.id, unknown=True))
            if isinstance(exc, TimeoutError):
                msg = "The card processor did not answer in time; try again"
                raise Unavailable(msg, code="processor_timeout") from exc
            raise
        try:
            outcome: Outcome = await ask(self.actor_ref, Answered(attempt.id, answer))
        except ActorDeadError as exc:
            # The actor stopped (a crash, a reload) before booking the answer: its next
            # incarnation books it from the attempt's row; a retry then finds it booked.
            msg = "The payment is being settled; try again"
            raise Unavailable(msg, retry_after=1) from exc
        return outcome

    async def _answer_from_storage(self, attempt: Attempt) -> Outcome:
        assert attempt.retry_key is not None
        db = self.context.database
        payment = attempt.payment
        stored = await attempt_by_retry_key(db, payment.company_id, payment.id, attempt.retry_key)
        paid_id = None
        if stored is not None and stored.status == "APPROVED":
            paid_id = stored.child_id or stored.payment_id
        paid = await load_payment(db, payment.company_id, paid_id) if paid_id else None
        if paid is None:
            msg = "An earlier attempt of this checkout is still being settled; try again"
            raise Unavailable(msg, retry_after=1)
        return Outcome(paid, [])

    def _tell_self(self, message: Any) -> None:
        with contextlib.suppress(ActorDeadError):
            self.actor_ref.tell(message)

    def _abandoned(self, message: Abandoned) -> None:
        attempt = self._attempts.pop(message.attempt_id, None)
        if message.unknown and attempt is not None:
            self._unsettled = True

    async def _answered(self, message: Answered) -> Outcome | Detached:
        attempt = self._attempts.pop(message.attempt_id)
        try:
            result = await self._book_answer(attempt, message.authorization)
        except CheckoutDeclined:
            raise  # booked: the decline and the settled attempt committed together
        except BaseException:
            # Not booked, or of unknown outcome: the row is settled from storage at reload.
            self._unsettled = True
            raise
        if isinstance(result, Detached):
            return Detached(self._unsettled_on_failure(result.work))
        return result

    async def _unsettled_on_failure(self, work: Awaitable[Outcome]) -> Outcome:
        try:
            return await work
        except BaseException:
            self._unsettled = True
            raise

    async def _book_answer(self, attempt: Attempt, answer: Authorization) -> Outcome | Detached:
        """Book the processor's answer to the attempt, settling the attempt in the same unit.
        Returns Detached for a multi-use link's child (its commit changes nothing held here)."""
        now = self.context.clock()
        stamp = iso(now)
        if not answer.approved:
            settles = Settles(attempt.id, "DECLINED", stamp)
            outcome = await self._apply(rules.checkout_declined(self._require(None), now), settles)
            raise CheckoutDeclined(outcome, answer.decline_code or "card_declined")
        settles = Settles(attempt.id, "APPROVED", stamp, attempt.idempotency)
        # A link's child is planned from the link as the attempt found it; a single-use payment
        # is what this actor holds (nothing changed it while the attempt was in flight).
        payment = attempt.payment if attempt.child_id is not None else self._require(None)

        def plan(child_reference: str) -> tuple[Payment, Outcome, list[Statement]]:
            transition = rules.checkout_succeeded(
                payment,
                now,
                brand=answer.brand,
                last4=answer.last4,
                email=attempt.email,
                phone=attempt.phone,
                child_id=attempt.child_id or new_id("pay"),
                child_reference=child_reference,
            )
            return self._plan(payment, transition, settles)

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

    async def _settle_left_in_flight(self) -> None:
        """At activation: book what the processor answered to each attempt a fault left
        IN_FLIGHT, once, before any message is taken (a cancel or an expiry must meet the
        payment as the attempt left it). Recall never charges; a processor that cannot answer
        fails the activation, so the payment answers 503 until it can."""
        payment = self._require(None)
        db = self.context.database
        for stored in await unsettled_attempts(db, self.company_id, self.payment_id):
            processor = self.processors.get(payment.mode)
            if processor is None:
                msg = "Live card processing is not configured"
                raise Unavailable(msg, code="processor_unavailable")
            async with asyncio.timeout(self.processor_deadline):
                answer = await processor.recall(stored.id)
            attempt = Attempt.restored(stored, self._require(None))
            logger.warning(
                "%s settles checkout attempt %s left in flight: %s",
                self,
                stored.id,
                "not charged" if answer is None else "approved" if answer.approved else "declined",
            )
            if answer is None:
                await self.context.commit(
                    attempt_settle(stored.id, "VOID", iso(self.context.clock()))
                )
                continue
            with contextlib.suppress(CheckoutDeclined):
                result = await self._book_answer(attempt, answer)
                if isinstance(result, Detached):
                    await result.work

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
        events, bodies = refund_events(refund, ("refund.created",), refund_json(refund))
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
        event_writes, bodies = refund_events(done, transition.refund_events, refund_json(done))
        payment_writes, payment_bodies = event_statements(
            transition.payment_events, lambda p: payment_json(p, self.public_url)
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
