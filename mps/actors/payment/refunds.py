"""The payment actor's refund turns: a refund is created (past the company's approval gate for
refunds) with a reservation in the company's books, and settled by the processor's answer (or
the sandbox's), completing or releasing what it reserved."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from mps.actors.company.approvals import RequestApproval
from mps.actors.payment.core import PaymentCore
from mps.actors.payment.messages import CreateRefund, RefundOutcome, SettleRefund
from mps.domain import refunds as refund_rules
from mps.domain.approvals import ApprovalRequest
from mps.domain.company import ModeSettings
from mps.domain.ids import new_id
from mps.domain.ledger import Books, Movement
from mps.domain.refunds import Refund, RefundTransition
from mps.errors import Conflict
from mps.persistence.analytics_store import rollup_statements
from mps.persistence.payment_store import event_statements, payment_update
from mps.persistence.refund_store import refund_events, refund_insert, refund_update
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
