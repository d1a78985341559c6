"""The payment actor's checkout turns.

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
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from mps.actors.attempts import Abandoned, Answered, Attempt, Recalled, Settles, retry_key
from mps.actors.commits import follow_up
from mps.actors.payment.core import PaymentCore
from mps.actors.payment.messages import Checkout, CheckoutDeclined, Outcome
from mps.actors.persistence import WRITE_DEADLINE
from mps.actors.references import commit_new_payment
from mps.actors.runtime import ActorDeadError, Detached, ask
from mps.adapters.processor import Authorization, Processor
from mps.domain import payments as rules
from mps.domain.clock import iso
from mps.domain.company import ModeSettings
from mps.domain.ids import new_id
from mps.domain.ledger import Books, Movement
from mps.domain.payments import Payment
from mps.errors import Conflict, Unavailable
from mps.persistence.attempt_store import (
    AttemptTaken,
    attempt_by_retry_key,
    attempt_insert,
    attempt_settle,
    unsettled_attempts,
)
from mps.persistence.payment_store import load_payment
from mps.persistence.statements import Statement

__all__ = ["CheckoutTurns"]

T = TypeVar("T")


logger = logging.getLogger(__name__)


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


class CheckoutTurns(PaymentCore):
    """The checkout: an attempt reserved in the turn, the processor asked outside it, and its
    answer booked in a later turn."""

    def _refuse_while_authorizing(self, becoming: str) -> None:
        if self._attempts:
            msg = (
                f"A card payment of this payment is being processed; it cannot be {becoming} "
                "until the card's answer is in"
            )
            raise Conflict(msg, code="invalid_state")

    def _checkout(self, command: Checkout) -> Detached:
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
            expiry = self._apply(rules.expire(payment, now), None)
            return Detached(self._too_late(expiry.work, self._require(None), now))
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

    async def _too_late(
        self, expiry: Awaitable[Outcome], expired: Payment, now: datetime
    ) -> Outcome:
        """Detached work: once the expiry this checkout met is committed, its 409."""
        await expiry
        rules.check_payable(expired, now)  # raises the 409 it is
        msg = "an EXPIRED payment was found payable"
        raise AssertionError(msg)

    async def _answer_paid_again(self, payment: Payment, key: str) -> Outcome:
        """A checkout of a paid single-use payment under the Idempotency-Key of the attempt
        that paid it (its answer was lost, and the attempt was booked from storage): the
        payment, as paid; nothing is charged. Any other is 409. Detached work: it waits for
        the units this actor handed over (the booking that paid it may be in flight), then
        reads what storage holds."""
        await self._units.drained()
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

    def _abandoned(self, message: Abandoned) -> None:
        attempt = self._attempts.pop(message.attempt_id, None)
        if attempt is None:
            return
        if message.unknown:
            self._unsettled = True
        if attempt.card is None:
            # Left in flight by a fault and its recall failed: a request that joined it is told
            # to retry (an attempt of this incarnation is answered by its own detached work).
            msg = "The card's answer is being settled; try again"
            attempt.resolve(error=Unavailable(msg, retry_after=1))

    def _answered(self, message: Answered) -> Detached:
        attempt = self._attempts.pop(message.attempt_id)
        try:
            booking = self._book_answer(attempt, message.authorization)
        except BaseException:
            # Not booked: the row is settled from storage at reload.
            self._unsettled = True
            raise
        return Detached(self._unsettled_on_failure(booking.work))

    async def _unsettled_on_failure(self, work: Awaitable[T]) -> T:
        try:
            return await work
        except CheckoutDeclined:
            raise  # booked: the decline and the settled attempt committed together
        except BaseException:
            # Not booked, or of unknown outcome: the row is settled from storage at reload.
            self._unsettled = True
            raise

    def _book_answer(self, attempt: Attempt, answer: Authorization) -> Detached:
        """Reserve the processor's answer to the attempt and hand over the unit that books it,
        settling the attempt in the same unit. A multi-use link's child is committed beside
        the chain of this actor's units (its commit changes nothing held here)."""
        now = self.context.clock()
        stamp = iso(now)
        if not answer.approved:
            settles = Settles(attempt.id, "DECLINED", stamp)
            booked = self._apply(rules.checkout_declined(self._require(None), now), settles)
            return Detached(_declined(booked.work, answer.decline_code or "card_declined"))
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
                    commit=lambda unit: self._book_now(credit, unit),
                )
            )
        self.payment = after

        def adopt(_movements: list[Movement]) -> Outcome:
            self._committed(after)
            self._committed(paid)
            return outcome

        return self._book(credit, statements, undo=lambda: self._restore(payment), adopt=adopt)

    async def _recall_left_in_flight(self) -> None:
        """At activation: hold each attempt a fault left IN_FLIGHT as in flight again, and ask
        the processor what it answered to it beside the actor: the answer comes back as
        `Recalled` and is booked once. Recall never charges. Meanwhile commands wait outside
        the mailbox (`_after_recall`): a cancel or an expiry must meet the payment as the
        attempt leaves it."""
        payment = self._require(None)
        for stored in await unsettled_attempts(self.context.database, self.company_id,
                                               self.payment_id):  # fmt: skip
            attempt = Attempt.restored(stored, payment)
            self._attempts[attempt.id] = attempt
            task = asyncio.get_running_loop().create_task(self._recall(attempt.id))
            recalls = self._recalls = self._recalls or set()
            recalls.add(task)
            task.add_done_callback(recalls.discard)

    async def _recall(self, attempt_id: str) -> None:
        """Beside the actor: the processor's memory of the attempt, told to the actor. A
        processor that cannot answer leaves the attempt to the next activation."""
        processor = self.processors.get(self._require(None).mode)
        try:
            if processor is None:
                msg = "Live card processing is not configured"
                raise Unavailable(msg, code="processor_unavailable")
            async with asyncio.timeout(self.processor_deadline):
                answer = await processor.recall(attempt_id)
        except Exception:
            logger.warning("%s could not recall checkout attempt %s", self, attempt_id,
                           exc_info=True)  # fmt: skip
            self._tell_self(Abandoned(attempt_id, unknown=True))
            return
        self._tell_self(Recalled(attempt_id, answer))

    def _recalled(self, message: Recalled) -> Detached | None:
        """Book what the processor recalled of an attempt left IN_FLIGHT (a tell: whoever
        retries the checkout finds it booked, or joins it while it is)."""
        attempt = self._attempts.get(message.attempt_id)
        if attempt is None:
            return None
        answer = message.authorization
        logger.warning(
            "%s settles checkout attempt %s left in flight: %s",
            self,
            attempt.id,
            "not charged" if answer is None else "approved" if answer.approved else "declined",
        )
        if answer is not None:
            try:
                booking = self._answered(Answered(attempt.id, answer))
            except BaseException as error:
                attempt.resolve(error=error)
                raise
            return Detached(_resolving(attempt, booking.work))
        del self._attempts[attempt.id]
        unit = attempt_settle(attempt.id, "VOID", iso(self.context.clock()))

        async def send() -> None:
            await self.context.commit(unit)

        voided = self._units.submit(send)
        return Detached(_resolving(attempt, self._unsettled_on_failure(voided)))

    def _recalling(self) -> bool:
        """Whether an attempt a fault left IN_FLIGHT is still being recalled and booked."""
        return any(attempt.card is None for attempt in self._attempts.values())

    def _after_recall(self, message: Any) -> Detached:
        """`message` again, as a follow-up turn of this actor, once the attempts being
        recalled are settled; the mailbox is not held up meanwhile."""
        waiting = [a.done for a in self._attempts.values() if a.card is None]
        return Detached(self._again_after(waiting, message))

    async def _again_after(self, waiting: list[asyncio.Future[Any]], message: Any) -> Any:
        # Bounded: an incarnation stopped before it booked the answer never resolves them.
        _done, pending = await asyncio.wait(waiting, timeout=self._recall_patience())
        if pending:
            msg = "The card's answer is being settled; try again"
            raise Unavailable(msg, retry_after=1)
        return await follow_up(self.actor_ref, message)

    def _recall_patience(self) -> float:
        # The processor's deadline for the recall, then the writer's for booking its answer.
        return self.processor_deadline + WRITE_DEADLINE

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        # Stopping (a crash, or a reload): whoever joined an attempt left in flight is told to
        # retry now; the next incarnation recalls it again.
        msg = "The card's answer is being settled; try again"
        for attempt in self._attempts.values():
            if attempt.card is None:
                attempt.resolve(error=Unavailable(msg, retry_after=1))

    def can_passivate(self) -> bool:
        # A recall in flight would tell its answer to nobody.
        return not self._recalls and super().can_passivate()


async def _declined(booking: Awaitable[Outcome], code: str) -> Outcome:
    """Detached work: once the decline is booked, the checkout's 402."""
    raise CheckoutDeclined(await booking, code)


async def _resolving(attempt: Attempt, booking: Awaitable[Any]) -> None:
    """Detached work of a tell: book a recalled answer, and answer whoever joined the attempt
    meanwhile (a decline is an answer to them, not a failure of the booking)."""
    try:
        outcome = await booking
    except CheckoutDeclined as declined:
        attempt.resolve(error=declined)
        return
    except BaseException as error:
        attempt.resolve(error=error)
        raise
    attempt.resolve(outcome)
