"""An invoice as the service stores it, for the tests that render one: the hosted page and the
PDF."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from mps.domain.invoices import Invoice, LineItem


def sent_invoice(
    items: Sequence[LineItem],
    customer: tuple[str, str],
    issued: str,
    due: str,
    /,
    **changes: object,
) -> Invoice:
    """Invoice INV-000042 of a live company, in USD, sent to `customer` (name, email) at
    `issued` and due on the day `due`; its amount the total of `items`, its memo a thank-you.
    `changes` replace any field after that, the items too."""
    name, email = customer
    invoice = Invoice(
        id="inv_1",
        company_id="co_1",
        mode="live",
        status="SENT",
        invoice_number="INV-000042",
        currency="USD",
        amount_minor=sum(item.amount_minor for item in items),
        customer_email=email,
        customer_name=name,
        items=tuple(items),
        due_date=due,
        memo="Thank you for your business.",
        created_at=issued,
        updated_at=issued,
    )
    return replace(invoice, **changes)  # type: ignore[arg-type]
