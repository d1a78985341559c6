"""Invoices as rows: the mapping both ways, the statements their writers commit (an invoice with
its timeline entries and its events), and the read an invoice's actor activates from."""

from __future__ import annotations

from typing import Any

import orjson

from mps.domain.ids import new_id
from mps.domain.invoices import Invoice, LineItem
from mps.persistence.database import Database, IntegrityConflict
from mps.persistence.outbox import event_writes
from mps.persistence.rows import columns, from_row
from mps.persistence.statements import Row, Statement, insert, versioned_update

__all__ = [
    "NumberTaken",
    "email_outcome",
    "invoice_changes",
    "invoice_from_row",
    "invoice_insert",
    "load_invoice",
    "load_invoice_numbers",
]


class NumberTaken(IntegrityConflict):
    """A new invoice's number is another invoice's already (unique per company and mode)."""


def _items_text(invoice: Invoice) -> str | None:
    if invoice.items is None:
        return None
    return orjson.dumps(
        [[i.description, i.quantity, i.unit_amount_minor] for i in invoice.items]
    ).decode()


def invoice_from_row(row: Row) -> Invoice:
    raw = row["items"]
    items = None if raw is None else tuple(LineItem(d, q, u) for d, q, u in orjson.loads(raw))
    # The timeline's new entries are a turn's, never stored.
    return from_row(Invoice, row, items=items, new_entries=())


# What an invoice's change of status may write.
_CHANGING = (
    "status", "paid_at", "paid_reference", "paid_note", "voided_at", "last_sent_at",
    "updated_at",
)  # fmt: skip


def _timeline(invoice: Invoice) -> list[Statement]:
    return [
        insert(
            "invoice_timeline",
            {
                "id": new_id("itl"),
                "invoice_id": invoice.id,
                "company_id": invoice.company_id,
                "status": entry.status,
                "at": entry.at,
                "actor": entry.actor,
                "note": entry.note,
            },
        )
        for entry in invoice.new_entries
    ]


def invoice_insert(
    invoice: Invoice, obj: dict[str, Any]
) -> tuple[list[Statement], list[dict[str, Any]]]:
    """The new invoice's row, its first timeline entry and its invoice.sent event (whose
    object is `obj`, the invoice as the API shows it); the unit fails with `NumberTaken` when
    its number is another invoice's."""
    row = insert(
        "invoices",
        {
            "id": invoice.id,
            "company_id": invoice.company_id,
            "mode": invoice.mode,
            "version": invoice.version,
            "invoice_number": invoice.invoice_number,
            "number_sequence": invoice.number_sequence,
            "currency": invoice.currency,
            "amount_minor": invoice.amount_minor,
            "customer_email": invoice.customer_email,
            "customer_name": invoice.customer_name,
            "items": _items_text(invoice),
            "due_date": invoice.due_date,
            "overdue_from": invoice.overdue_from,
            "memo": invoice.memo,
            "created_at": invoice.created_at,
            "email_status": invoice.email_status,
            "email_error": invoice.email_error,
            **columns(invoice, _CHANGING),
        },
    )
    events, bodies = event_writes(invoice, ("invoice.sent",), obj)
    statements = [Statement(row.sql, row.params, conflict_error=NumberTaken)]
    return [*statements, *_timeline(invoice), *events], bodies


def invoice_changes(
    before: Invoice, after: Invoice, event: str | None, obj: dict[str, Any]
) -> tuple[list[Statement], list[dict[str, Any]]]:
    """The versioned update from `before` to `after`, its timeline entries and its event."""
    statements = [
        versioned_update("invoices", "id", after.id, before.version, columns(after, _CHANGING)),
        *_timeline(after),
    ]
    events, bodies = event_writes(after, (event,) if event else (), obj)
    return [*statements, *events], bodies


def email_outcome(company_id: str, invoice_id: str, status: str, error: str | None) -> Statement:
    """How the customer's latest email about the invoice went (SENT, or FAILED with a reason).
    Not versioned: it is no part of the invoice's state machine, and the invoice actor's
    updates leave these columns alone."""
    return Statement(
        "UPDATE invoices SET email_status = $1, email_error = $2 WHERE id = $3 AND company_id = $4",
        (status, error, invoice_id, company_id),
    )


async def load_invoice(db: Database, company_id: str, invoice_id: str) -> Invoice | None:
    row = await db.fetchrow(
        "SELECT * FROM invoices WHERE id = $1 AND company_id = $2", invoice_id, company_id
    )
    return invoice_from_row(row) if row is not None else None


async def load_invoice_numbers(db: Database, company_id: str) -> dict[str, int]:
    """mode -> the company's last automatic invoice number, for its actor's activation."""
    rows = await db.fetch(
        "SELECT mode, MAX(number_sequence) AS last FROM invoices "
        "WHERE company_id = $1 AND number_sequence IS NOT NULL GROUP BY mode",
        company_id,
    )
    return {row["mode"]: int(row["last"]) for row in rows}
