"""Invoices (decisions 8), as pure values and transitions.

Vocabulary:
    SENT     created and emailed to the customer; resendable
    OVERDUE  still unpaid when its due date has passed (found by a scheduler)
    PAID     the merchant recorded a payment made outside the service (mark-paid); the ledger
             is not touched, since no money moved through it
    VOID     cancelled while unpaid

SENT and OVERDUE are open: they can be paid, voided and resent. PAID and VOID are final.

An invoice is numbered `INV-000001` upwards per company and mode unless the merchant gives a
number of its own; numbers are unique per company and mode either way. The invoice's actor
applies the transitions one at a time; each adds an entry to its timeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta

from mps.domain.clock import iso
from mps.domain.company import InMode
from mps.errors import Conflict

__all__ = [
    "INVOICE_STATUSES",
    "OPEN",
    "Invoice",
    "LineItem",
    "TimelineEntry",
    "automatic_number",
    "mark_overdue",
    "mark_paid",
    "resend",
    "void",
]

INVOICE_STATUSES = ("SENT", "OVERDUE", "PAID", "VOID")
OPEN = frozenset({"SENT", "OVERDUE"})
NUMBER_PREFIX = "INV-"


def automatic_number(sequence: int) -> str:
    return f"{NUMBER_PREFIX}{sequence:06d}"


@dataclass(frozen=True)
class LineItem:
    description: str
    quantity: int
    unit_amount_minor: int

    @property
    def amount_minor(self) -> int:
        return self.quantity * self.unit_amount_minor


@dataclass(frozen=True)
class TimelineEntry:
    status: str
    at: str
    # Who made the change: a member's user id, or "system" (the overdue scheduler).
    actor: str
    note: str | None = None


@dataclass(frozen=True)
class Invoice(InMode):
    id: str
    company_id: str
    mode: str
    status: str
    invoice_number: str
    currency: str
    amount_minor: int
    customer_email: str
    created_at: str
    updated_at: str
    version: int = 1
    # The automatic number's sequence, None for a number the merchant chose.
    number_sequence: int | None = None
    customer_name: str | None = None
    # None for a single-total invoice.
    items: tuple[LineItem, ...] | None = None
    due_date: str | None = None  # an ISO date
    memo: str | None = None
    paid_at: str | None = None
    paid_reference: str | None = None
    paid_note: str | None = None
    voided_at: str | None = None
    last_sent_at: str | None = None
    # How the customer's latest email went: PENDING until tried, then SENT or FAILED with a
    # reason fit to show (None on invoices from before this was recorded).
    email_status: str | None = "PENDING"
    email_error: str | None = None
    # New entries of the transition that made this snapshot (the stored timeline holds the rest).
    new_entries: tuple[TimelineEntry, ...] = field(default=(), compare=False)

    @property
    def overdue_from(self) -> str | None:
        """When it becomes OVERDUE if still unpaid: the start of the day after its due date."""
        if self.due_date is None:
            return None
        day_after = date.fromisoformat(self.due_date) + timedelta(days=1)
        return iso(datetime.combine(day_after, time(), tzinfo=UTC))

    def is_due_to_be_overdue(self, now: datetime) -> bool:
        start = self.overdue_from
        return self.status == "SENT" and start is not None and start <= iso(now)


def _require_open(invoice: Invoice, action: str) -> None:
    if invoice.status not in OPEN:
        msg = f"Cannot {action} an invoice that is {invoice.status}; it must be SENT or OVERDUE"
        raise Conflict(msg, code="invalid_state")


def _change(invoice: Invoice, now: datetime, entry: TimelineEntry, **changes: object) -> Invoice:
    return replace(
        invoice,
        version=invoice.version + 1,
        updated_at=iso(now),
        new_entries=(entry,),
        **changes,  # type: ignore[arg-type]
    )


def mark_paid(
    invoice: Invoice,
    now: datetime,
    *,
    actor: str,
    paid_at: str | None,
    reference: str | None,
    note: str | None,
) -> Invoice:
    _require_open(invoice, "mark as paid")
    when = paid_at or iso(now)
    entry = TimelineEntry("PAID", iso(now), actor, note)
    return _change(
        invoice,
        now,
        entry,
        status="PAID",
        paid_at=when,
        paid_reference=reference,
        paid_note=note,
    )


def void(invoice: Invoice, now: datetime, *, actor: str) -> Invoice:
    _require_open(invoice, "void")
    entry = TimelineEntry("VOID", iso(now), actor)
    return _change(invoice, now, entry, status="VOID", voided_at=iso(now))


def resend(invoice: Invoice, now: datetime, *, actor: str) -> Invoice:
    """Email it again; the status stays, the timeline notes it."""
    _require_open(invoice, "resend")
    entry = TimelineEntry(invoice.status, iso(now), actor, "resent")
    return _change(invoice, now, entry, last_sent_at=iso(now))


def mark_overdue(invoice: Invoice, now: datetime, *, forced: bool = False) -> Invoice:
    """OVERDUE once its due date has passed; `forced` (the sandbox) only needs it SENT."""
    if invoice.status != "SENT" or not (forced or invoice.is_due_to_be_overdue(now)):
        msg = f"Cannot make an invoice that is {invoice.status} overdue"
        if invoice.status == "SENT":
            msg = "The invoice is not past its due date"
        raise Conflict(msg, code="invalid_state")
    note = f"due {invoice.due_date}" if invoice.due_date else "forced by the sandbox"
    entry = TimelineEntry("OVERDUE", iso(now), "system", note)
    return _change(invoice, now, entry, status="OVERDUE")
