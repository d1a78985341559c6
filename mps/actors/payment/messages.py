"""The commands a payment actor takes and what each replies, with the customer link every
payment it holds or replies with carries (`with_customer`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from mps.actors.idempotency import IdempotentCommand
from mps.adapters.processor import CardInput
from mps.auth.keyring import Keyring
from mps.domain.audit import SYSTEM, AuditContext
from mps.domain.payments import Payment
from mps.domain.refunds import Refund
from mps.errors import PaymentDeclined

__all__ = [
    "Cancel",
    "Checkout",
    "CheckoutDeclined",
    "CreateRefund",
    "Expire",
    "Outcome",
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
class Cancel(IdempotentCommand):
    mode: str


@dataclass(frozen=True)
class Expire(IdempotentCommand):
    """Expire the payment. `due_only`: only if its expiresAt has passed (the scheduler's case);
    the sandbox forces it."""

    mode: str | None = None
    due_only: bool = True


@dataclass(frozen=True)
class Reverse(IdempotentCommand):
    mode: str


@dataclass(frozen=True)
class Checkout(IdempotentCommand):
    """Reply: the Outcome (the payment PAID, or a multi-use link's new child), or
    CheckoutDeclined. `key`: the shopper's Idempotency-Key, which names the attempt a retry is
    (mps.actors.attempts)."""

    card: CardInput
    email: str | None
    phone: str | None
    mode: str | None = None
    key: str | None = None


@dataclass(frozen=True)
class CreateRefund(IdempotentCommand):
    """Reply: a RefundOutcome with the PENDING refund and its refund.created event; or, when
    the amount is above the refund.create policy's threshold (and `approved` is not set), the
    PENDING ApprovalRequest the company made instead."""

    mode: str
    amount_minor: int
    reason: str | None = None
    # Who asks, for an approval request; None (the sandbox, an approved request) asks none.
    requested_by: str | None = None
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class SettleRefund(IdempotentCommand):
    """Reply: a RefundOutcome. The processor's answer (or the sandbox's): `completed` True
    completes the refund, False rejects it with `reason`. 409 unless it is PENDING."""

    refund_id: str
    completed: bool
    reason: str | None = None
    mode: str | None = None


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


def with_customer(payment: Payment, keyring: Keyring) -> Payment:
    if not (payment.customer_email or payment.customer_phone):
        return payment
    customer_id = keyring.customer_id(
        payment.company_id, payment.mode, payment.customer_email, payment.customer_phone
    )
    return replace(payment, customer_id=customer_id)
