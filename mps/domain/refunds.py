"""Refunds and what they do to their payment (decisions 4, 5), as pure functions.

Vocabulary:
    PENDING    created: the amount is reserved from the balance and the processor is asked
    COMPLETED  the processor paid it back to the shopper; the reservation is spent
    REJECTED   the processor refused it; the reservation is released

A refund is created against a PAID or PARTIAL_REFUND payment for at most what is left of it:
its amount less what was refunded and what pending refunds hold. The payment moves when a
refund completes: PARTIAL_REFUND while some remains, REFUNDED when nothing does. A REVERSED
payment stays REVERSED (the chargeback took what no refund held).

The payment actor applies these one at a time, so concurrent refunds of one payment cannot
together exceed it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from mps.domain.clock import iso
from mps.domain.company import InMode
from mps.domain.money import format_money
from mps.domain.payments import Event, Payment
from mps.errors import Conflict

__all__ = [
    "REFUNDABLE",
    "REFUND_STATUSES",
    "Refund",
    "RefundTransition",
    "complete",
    "create",
    "reject",
    "remaining",
]

REFUND_STATUSES = ("PENDING", "COMPLETED", "REJECTED")
REFUNDABLE = ("PAID", "PARTIAL_REFUND")


@dataclass(frozen=True)
class Refund(InMode):
    id: str
    company_id: str
    mode: str
    payment_id: str
    status: str
    amount_minor: int
    currency: str
    created_at: str
    updated_at: str
    process_after: str
    version: int = 1
    reason: str | None = None
    failure_reason: str | None = None
    # The part of the reservation taken from pending (mps.domain.ledger).
    from_pending_minor: int = 0
    completed_at: str | None = None


@dataclass(frozen=True)
class RefundTransition:
    refund: Refund
    payment: Payment
    # Events about the refund (its own object) and about the payment.
    refund_events: tuple[str, ...]
    payment_events: tuple[Event, ...] = ()


def remaining(payment: Payment, pending: int) -> int:
    """What may still be refunded: the amount less refunds completed and pending."""
    return payment.amount_minor - payment.amount_refunded_minor - pending


def create(
    payment: Payment,
    pending: int,
    *,
    refund_id: str,
    amount: int,
    reason: str | None,
    now: datetime,
    process_after: datetime,
) -> Refund:
    """A new PENDING refund of `amount`; 409 when the payment cannot take it. `pending` is what
    the payment's pending refunds hold."""
    if payment.status not in REFUNDABLE:
        msg = f"Cannot refund a payment that is {payment.status}; it must be PAID or PARTIAL_REFUND"
        raise Conflict(msg, code="invalid_state")
    left = remaining(payment, pending)
    if amount > left:
        held = format_money(left, payment.currency)
        msg = f"The refund exceeds what remains of the payment ({held})"
        raise Conflict(msg, code="refund_exceeds_remaining")
    stamp = iso(now)
    return Refund(
        id=refund_id,
        company_id=payment.company_id,
        mode=payment.mode,
        payment_id=payment.id,
        status="PENDING",
        amount_minor=amount,
        currency=payment.currency,
        reason=reason,
        created_at=stamp,
        updated_at=stamp,
        process_after=iso(process_after),
    )


def _require_pending(refund: Refund, action: str) -> None:
    if refund.status != "PENDING":
        msg = f"Cannot {action} a refund that is {refund.status}; it must be PENDING"
        raise Conflict(msg, code="invalid_state")


def complete(payment: Payment, refund: Refund, now: datetime) -> RefundTransition:
    _require_pending(refund, "complete")
    stamp = iso(now)
    done = replace(
        refund, status="COMPLETED", version=refund.version + 1, updated_at=stamp, completed_at=stamp
    )
    refunded = payment.amount_refunded_minor + refund.amount_minor
    if payment.status == "REVERSED":
        status, event = "REVERSED", None
    elif refunded >= payment.amount_minor:
        status, event = "REFUNDED", "payment.refunded"
    else:
        status, event = "PARTIAL_REFUND", "payment.partially_refunded"
    after = replace(
        payment,
        status=status,
        amount_refunded_minor=refunded,
        version=payment.version + 1,
        updated_at=stamp,
    )
    events = (Event(event, after),) if event else ()
    return RefundTransition(done, after, ("refund.completed",), events)


def reject(payment: Payment, refund: Refund, now: datetime, reason: str) -> RefundTransition:
    _require_pending(refund, "reject")
    rejected = replace(
        refund,
        status="REJECTED",
        version=refund.version + 1,
        updated_at=iso(now),
        failure_reason=reason,
    )
    return RefundTransition(rejected, payment, ("refund.rejected",))
