"""An invoice as the API and its events show it (decisions 8)."""

from __future__ import annotations

from typing import Any

from mps.domain.invoices import Invoice, TimelineEntry

__all__ = ["hosted_url", "invoice_json", "timeline_json"]


def hosted_url(public_url: str, invoice_id: str, token: str) -> str:
    """The customer's link to the hosted invoice page; `token` is the keyring's for the id."""
    return f"{public_url}/i/{invoice_id}?t={token}"


def invoice_json(invoice: Invoice, hosted_url: str) -> dict[str, Any]:
    """`hosted_url` is the customer's link to the hosted page (it carries the invoice's token)."""
    items = invoice.items
    return {
        "id": invoice.id,
        "status": invoice.status,
        "invoiceNumber": invoice.invoice_number,
        "amountMinor": str(invoice.amount_minor),
        "currency": invoice.currency,
        "customer": {"email": invoice.customer_email, "name": invoice.customer_name},
        "items": None
        if items is None
        else [
            {
                "description": item.description,
                "quantity": item.quantity,
                "unitAmountMinor": str(item.unit_amount_minor),
                "amountMinor": str(item.amount_minor),
            }
            for item in items
        ],
        "dueDate": invoice.due_date,
        "memo": invoice.memo,
        "paidAt": invoice.paid_at,
        "paidReference": invoice.paid_reference,
        "voidedAt": invoice.voided_at,
        "hostedUrl": hosted_url,
        "emailStatus": invoice.email_status,
        "emailError": invoice.email_error,
        "livemode": invoice.livemode,
        "createdAt": invoice.created_at,
        "updatedAt": invoice.updated_at,
    }


def timeline_json(entry: TimelineEntry) -> dict[str, Any]:
    return {"status": entry.status, "at": entry.at, "actor": entry.actor, "note": entry.note}
