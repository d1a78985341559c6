"""The hosted invoice page: what a customer sees on opening the link in an invoice email. It holds
what the PDF of the invoice holds (merchant, number, dates, bill-to, line items, total, memo),
shows its status prominently, links to the PDF, and prints cleanly on A4 and Letter. The markup
is `templates/invoice.html`, the style `static/css/invoice.css`.

Every value that comes from the merchant or the customer is escaped
(`mps.http.pages.markup.fill`). The page runs under the strict Content Security Policy of
`mps.http.security`: its one style element carries the request's nonce; it has no script at all,
no inline event handlers, no `style=` attributes and nothing loaded from elsewhere.

`render_invoice_page(None, ...)` is the page for a link that names no invoice the customer may
see. It says only that the link is not valid, never whether such an invoice exists.
"""

from __future__ import annotations

from mps.domain.invoices import Invoice, LineItem
from mps.domain.money import format_major
from mps.http.pages.dates import day_text
from mps.http.pages.markup import Markup, fill, hosted_page

__all__ = ["render_invoice_page"]


def _money(amount_minor: int, currency: str) -> str:
    return f"{format_major(amount_minor, currency)} {currency}"


def _status(invoice: Invoice) -> tuple[str, str, str]:
    """The status's CSS class, badge text and a sentence under it."""
    due = day_text(invoice.due_date) if invoice.due_date else None
    if invoice.status == "PAID":
        paid = day_text(invoice.paid_at) if invoice.paid_at else None
        return "paid", f"Paid on {paid}" if paid else "Paid", "Thank you. Nothing more is due."
    if invoice.status == "VOID":
        return "void", "Void", "This invoice has been voided. Nothing is due."
    if invoice.status == "OVERDUE":
        note = f"Payment was due on {due}." if due else "Payment is overdue."
        return "overdue", "Overdue", note
    if invoice.status == "SENT":
        return "due", f"Due {due}" if due else "Due on receipt", ""
    return "due", invoice.status.title(), ""


def _rows(invoice: Invoice) -> Markup:
    items = invoice.items
    if items is None:
        items = (LineItem(invoice.memo or "Amount due", 1, invoice.amount_minor),)
    currency = invoice.currency
    return Markup(
        "".join(
            fill(
                "invoice",
                "row",
                description=item.description,
                quantity=f"{item.quantity:,}",
                unit_amount=format_major(item.unit_amount_minor, currency),
                amount=format_major(item.amount_minor, currency),
            )
            for item in items
        )
    )


def render_invoice_page(
    invoice: Invoice | None, merchant_name: str | None, nonce: str, pdf_url: str | None
) -> str:
    """The page of `invoice` of the merchant `merchant_name` (the not-valid page for None);
    `nonce` is the request's Content Security Policy nonce (`mps.http.security.csp_nonce`) and
    `pdf_url` the link to the invoice's PDF (no link for None)."""
    if invoice is None or merchant_name is None:
        return hosted_page(
            "invoice",
            "Invoice link not valid",
            fill("invoice", "invalid"),
            nonce,
            main=fill("invoice", "invalid_main"),
        )
    kind, badge, note = _status(invoice)
    total = _money(invoice.amount_minor, invoice.currency)
    label = {"PAID": "Amount paid", "VOID": "Invoice total"}.get(invoice.status, "Amount due")
    nothing = Markup()
    content = fill(
        "invoice",
        "invoice",
        test_mode=nothing if invoice.livemode else fill("invoice", "test_mode"),
        merchant=merchant_name,
        number=invoice.invoice_number,
        label=label,
        total=total,
        status_note=fill("invoice", "status_note", note=note) if note else nothing,
        kind=kind,
        status=invoice.status,
        badge=badge,
        customer_name=(
            fill("invoice", "customer_name", name=invoice.customer_name)
            if invoice.customer_name
            else nothing
        ),
        customer_email=invoice.customer_email,
        issued=day_text(invoice.created_at),
        due=day_text(invoice.due_date) if invoice.due_date else "On receipt",
        rows=_rows(invoice),
        # A single-total invoice already shows its memo as the one line's description.
        memo=(
            fill("invoice", "memo", memo=invoice.memo)
            if invoice.memo and invoice.items is not None
            else nothing
        ),
        download=fill("invoice", "download", url=pdf_url) if pdf_url else nothing,
    )
    return hosted_page(
        "invoice",
        f"Invoice {invoice.invoice_number} from {merchant_name}",
        content,
        nonce,
        main=fill("invoice", "invoice_main", status=invoice.status),
    )
