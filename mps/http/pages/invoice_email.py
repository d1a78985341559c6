"""The HTML part of the email that sends an invoice to its customer
(`templates/invoice_email.html`): the same words as its text part, with the hosted page's link.
Every value is escaped (`mps.http.pages.markup.fill`)."""

from __future__ import annotations

from mps.domain.invoices import Invoice
from mps.http.pages.markup import fill

__all__ = ["render_invoice_email"]


def render_invoice_email(
    merchant: str, invoice: Invoice, total: str, due: str, link: str, greeting: str
) -> str:
    """The email's HTML: `total` and `due` are the sentence's parts as the text part words them
    (`due` is empty or ", due 2026-04-04"), `link` the hosted page's URL."""
    return fill(
        "invoice_email",
        "email",
        greeting=greeting,
        merchant=merchant,
        number=invoice.invoice_number,
        total=total,
        due=due,
        link=link,
    )
