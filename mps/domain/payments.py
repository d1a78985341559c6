"""Payments and their state machine (interface 3, decisions 4), as pure functions.

Vocabulary:
    PENDING         created; the link can be paid until it expires or is cancelled
    PAID            a checkout succeeded (for a multi-use link: each child is PAID)
    EXPIRED         expiresAt passed while PENDING
    CANCELLED       cancelled by the merchant while PENDING
    PARTIAL_REFUND  refunds completed for part of the amount
    REFUNDED        refunds completed for the whole amount
    REVERSED        a chargeback took the remaining amount back

Each transition takes a snapshot and returns the next snapshot with the events it emits; nothing
here reads a clock or touches storage, so the rules are tested without I/O. The payment actor
applies them one at a time, which is what gives a race between checkout, cancel and expiry
exactly one winner.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from mps.domain.clock import iso, parse_iso
from mps.domain.company import InMode
from mps.errors import Conflict, RateLimited

__all__ = [
    "FINAL_STATES",
    "STATUSES",
    "Event",
    "NewPayment",
    "Payment",
    "Transition",
    "cancel",
    "checkout_declined",
    "checkout_succeeded",
    "create",
    "expire",
    "reverse",
]

STATUSES = ("PENDING", "PAID", "EXPIRED", "CANCELLED", "REFUNDED", "PARTIAL_REFUND", "REVERSED")
FINAL_STATES = frozenset({"EXPIRED", "CANCELLED", "REFUNDED", "REVERSED"})
DEFAULT_EXPIRY = timedelta(seconds=86_400)
# After this many declines within DECLINE_WINDOW a payment refuses checkout (card testing).
MAX_DECLINES = 10
DECLINE_WINDOW = timedelta(hours=1)


@dataclass(frozen=True)
class Event:
    type: str
    payment: Payment


@dataclass(frozen=True)
class NewPayment:
    """A validated create request."""

    amount_minor: int
    currency: str
    description: str | None = None
    customer_email: str | None = None
    customer_phone: str | None = None
    expires_in_sec: int | None = None
    no_expiry: bool = False
    allow_multiple: bool = False
    success_url: str | None = None
    cancel_url: str | None = None
    webhook_url: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Payment(InMode):
    id: str
    company_id: str
    mode: str
    reference: str
    status: str
    amount_minor: int
    currency: str
    created_at: str
    updated_at: str
    version: int = 1
    description: str | None = None
    customer_email: str | None = None
    customer_phone: str | None = None
    customer_id: str | None = None
    expires_at: str | None = None
    allow_multiple: bool = False
    success_url: str | None = None
    cancel_url: str | None = None
    webhook_url: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    link_payment_id: str | None = None
    amount_refunded_minor: int = 0
    card_brand: str | None = None
    card_last4: str | None = None
    paid_at: str | None = None
    # Times of recent declined checkouts, for the card-testing guard.
    declines: tuple[str, ...] = ()

    @classmethod
    def restored(cls, fields: dict[str, Any]) -> Payment:
        """The payment stored with these fields: every one of them, as `payment_from_row`
        gives them back.

        Not through `__init__`: a frozen dataclass's sets each of its 26 fields through
        `object.__setattr__`, which was a fifth of a 20-payment list's cost; a stored payment
        was checked when it was written, so its fields are put in place at once."""
        payment = object.__new__(cls)
        payment.__dict__.update(fields)
        return payment

    def is_due_to_expire(self, now: datetime) -> bool:
        return (
            self.status == "PENDING"
            and self.expires_at is not None
            and parse_iso(self.expires_at) <= now
        )


@dataclass(frozen=True)
class Transition:
    payment: Payment
    events: tuple[Event, ...]
    # A multi-use link's checkout creates a new PAID child instead of changing the link.
    child: Payment | None = None


def create(
    spec: NewPayment, *, payment_id: str, reference: str, company_id: str, mode: str, now: datetime
) -> Transition:
    if spec.no_expiry:
        expires_at = None
    else:
        seconds = spec.expires_in_sec if spec.expires_in_sec is not None else None
        expires_at = iso(now + (timedelta(seconds=seconds) if seconds else DEFAULT_EXPIRY))
    stamp = iso(now)
    payment = Payment(
        id=payment_id,
        company_id=company_id,
        mode=mode,
        reference=reference,
        status="PENDING",
        amount_minor=spec.amount_minor,
        currency=spec.currency,
        created_at=stamp,
        updated_at=stamp,
        description=spec.description,
        customer_email=spec.customer_email,
        customer_phone=spec.customer_phone,
        expires_at=expires_at,
        allow_multiple=spec.allow_multiple,
        success_url=spec.success_url,
        cancel_url=spec.cancel_url,
        webhook_url=spec.webhook_url,
        metadata=spec.metadata,
    )
    return Transition(payment, (Event("payment.created", payment),))


def _require_pending(payment: Payment, action: str) -> None:
    if payment.status != "PENDING":
        msg = f"Cannot {action} a payment that is {payment.status}; it must be PENDING"
        raise Conflict(msg, code="invalid_state")


def _bump(payment: Payment, now: datetime, **changes: Any) -> Payment:
    return replace(payment, version=payment.version + 1, updated_at=iso(now), **changes)


def cancel(payment: Payment, now: datetime) -> Transition:
    _require_pending(payment, "cancel")
    cancelled = _bump(payment, now, status="CANCELLED")
    return Transition(cancelled, (Event("payment.cancelled", cancelled),))


def expire(payment: Payment, now: datetime) -> Transition:
    _require_pending(payment, "expire")
    expired = _bump(payment, now, status="EXPIRED")
    return Transition(expired, (Event("payment.expired", expired),))


def check_payable(payment: Payment, now: datetime) -> None:
    """Raise unless a checkout may be attempted now."""
    _require_pending(payment, "pay")
    recent = [t for t in payment.declines if parse_iso(t) > now - DECLINE_WINDOW]
    if len(recent) >= MAX_DECLINES:
        retry = parse_iso(min(recent)) + DECLINE_WINDOW - now
        msg = "This payment refuses checkout for a while after too many declined cards"
        raise RateLimited(max(1, int(retry.total_seconds()) + 1), msg)


def checkout_succeeded(
    payment: Payment,
    now: datetime,
    *,
    brand: str,
    last4: str,
    email: str | None,
    phone: str | None,
    child_id: str,
    child_reference: str,
) -> Transition:
    _require_pending(payment, "pay")
    stamp = iso(now)
    email = email or payment.customer_email
    phone = phone or payment.customer_phone
    if not payment.allow_multiple:
        paid = _bump(
            payment,
            now,
            status="PAID",
            paid_at=stamp,
            card_brand=brand,
            card_last4=last4,
            customer_email=email,
            customer_phone=phone,
        )
        return Transition(paid, (Event("payment.completed", paid),))
    child = Payment(
        id=child_id,
        company_id=payment.company_id,
        mode=payment.mode,
        reference=child_reference,
        status="PAID",
        amount_minor=payment.amount_minor,
        currency=payment.currency,
        created_at=stamp,
        updated_at=stamp,
        description=payment.description,
        customer_email=email,
        customer_phone=phone,
        metadata=payment.metadata,
        link_payment_id=payment.id,
        card_brand=brand,
        card_last4=last4,
        paid_at=stamp,
    )
    events = (Event("payment.created", child), Event("payment.completed", child))
    return Transition(payment, events, child=child)


def checkout_declined(payment: Payment, now: datetime) -> Transition:
    _require_pending(payment, "pay")
    recent = tuple(t for t in payment.declines if parse_iso(t) > now - DECLINE_WINDOW)
    failed = _bump(payment, now, declines=(*recent, iso(now))[-MAX_DECLINES:])
    return Transition(failed, (Event("payment.failed", failed),))


def reverse(payment: Payment, now: datetime) -> Transition:
    if payment.status not in ("PAID", "PARTIAL_REFUND"):
        msg = f"Only a PAID or PARTIAL_REFUND payment can be reversed; this one is {payment.status}"
        raise Conflict(msg, code="invalid_state")
    reversed_ = _bump(payment, now, status="REVERSED")
    return Transition(reversed_, (Event("payment.reversed", reversed_),))
