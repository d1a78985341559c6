"""The payment actor's refund turns: a refund is created (past the company's approval gate for
refunds) with a reservation in the company's books, and settled by the processor's answer (or
the sandbox's), completing or releasing what it reserved.

Neither waits in the payment's turn. Asking the company is waiting (its answer comes from
another actor's turn, and a booking's only after its commit), so the gate is asked from
detached work, and a refund it lets through comes back as a follow-up `CreateRefund` that
passes no gate: its turn checks the refund again against what the payment holds then, so two
refunds let through together can never take more than the payment. A refund's turn reserves it
(the payment's PENDING refunds count it at once) and hands its booking to the company's books
after the payment's earlier units; a refusal there (the balance cannot take it) undoes the
reservation. Every movement is the company's balanced ledger entry, committed with the refund's
own change or not at all.
"""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import replace
from datetime import timedelta
from typing import Any

from mps.actors.chained import through_gate
from mps.actors.company.approvals import RequestApproval
from mps.actors.payment.core import PaymentCore
from mps.actors.payment.messages import CreateRefund, RefundOutcome, SettleRefund
from mps.actors.runtime import Detached
from mps.domain import refunds as refund_rules
from mps.domain.company import ModeSettings
from mps.domain.ids import new_id
from mps.domain.ledger import Books, Movement
from mps.domain.refunds import Refund, RefundTransition
from mps.errors import Conflict
from mps.persistence.analytics_store import rollup_statements
from mps.persistence.outbox import event_writes
from mps.persistence.payment_store import event_statements, payment_update
from mps.persistence.refund_store import (
    RefundExceedsPayment,
    refund_insert,
    refund_update,
)
from mps.persistence.statements import Statement
from mps.representations.money import refund_json
from mps.representations.payments import payment_json

__all__ = ["RefundTurns"]


def _with_split(refund: Refund, movements: list[Movement]) -> Refund:
    """The refund with the part of its reservation that came from pending."""
    [reservation] = movements
    return replace(refund, from_pending_minor=-reservation.change("pending"))


class RefundTurns(PaymentCore):
    """Creating and settling the payment's refunds."""

    def _create_refund(self, command: CreateRefund) -> Detached:
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
                command.requested_by, command.audit, idempotency=command.idempotency,
            )  # fmt: skip
            return Detached(through_gate(self.company, self.actor_ref, gate, command))
        refund = refund_rules.create(
            payment,
            held,
            refund_id=new_id("re"),
            amount=command.amount_minor,
            reason=command.reason,
            now=now,
            process_after=now + timedelta(seconds=self.refund_delay),
        )
        events, bodies = event_writes(refund, ("refund.created",), refund_json(refund))
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

        self.refunds[refund.id] = refund

        def adopt(movements: list[Movement]) -> RefundOutcome:
            split = _with_split(refund, movements)
            if refund.id in self.refunds:
                self.refunds[refund.id] = split
            else:
                # Settled in memory already; its settle's release reads what pending gave.
                self._from_pending[refund.id] = split.from_pending_minor
            return outcome

        def undo() -> None:
            self.refunds.pop(refund.id, None)

        return Detached(self._guarded(self._book(reserve, unit, undo=undo, adopt=adopt).work))

    async def _guarded(self, work: Coroutine[Any, Any, RefundOutcome]) -> RefundOutcome:
        """Detached work: the refund's unit, whose insert storage refuses when the stored
        refunds leave the payment too little (mps.persistence.refund_store). Memory let it
        through, so memory is behind storage: the actor reloads before it decides again."""
        try:
            return await work
        except RefundExceedsPayment as exc:
            self._mark_stale()
            msg = "The refund exceeds what remains of the payment"
            raise Conflict(msg, code="refund_exceeds_remaining") from exc

    def _settle_refund(self, command: SettleRefund) -> Detached:
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
        refund_writes, bodies = event_writes(done, transition.refund_events, refund_json(done))
        payment_writes, payment_bodies = event_statements(
            transition.payment_events, lambda p: payment_json(p, self.public_url)
        )
        statements += [*refund_writes, *payment_writes]
        outcome = RefundOutcome(done, [*bodies, *payment_bodies])
        if command.idempotency is not None:
            statements += command.idempotency.statements(outcome)
        stamp = done.updated_at
        refund_id = refund.id

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
            # Read when the company decides, after the refund's own creation has committed.
            from_pending = self._from_pending.get(refund_id, refund.from_pending_minor)
            return [
                books.refund_release(
                    done.mode, done.currency, done.id, from_pending, done.amount_minor, stamp
                )
            ]

        del self.refunds[refund.id]
        self.payment = after

        def adopt(_movements: list[Movement]) -> RefundOutcome:
            self._from_pending.pop(refund_id, None)
            self._committed(after)
            return outcome

        def undo() -> None:
            known = self._from_pending.pop(refund_id, None)
            self.refunds[refund_id] = (
                refund if known is None else replace(refund, from_pending_minor=known)
            )
            self._restore(payment)

        return self._book(move, statements, undo=undo, adopt=adopt)
