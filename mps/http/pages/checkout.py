"""The hosted checkout page: `templates/checkout.html`, styled by `static/css/checkout.css` and
run by `static/js/checkout.js`. Every value shown is escaped (`mps.http.pages.markup.fill`); the
card goes straight from the form to the JSON pay route and is never part of a URL.

The page runs under a strict Content Security Policy (`mps.http.security`): its one `<script>` and
one `<style>` carry the request's nonce, and it has no inline event handlers or `style=`
attributes, which that policy would block. The script is the same file for every payment: what it
needs (the pay route, the amount, the merchant's name) it reads from the form's escaped `data-`
attributes, so no value from data is ever part of code."""

from __future__ import annotations

from mps.domain.money import format_major
from mps.domain.payments import Payment
from mps.http.pages.markup import Markup, fill, hosted_page, inline_code

__all__ = ["render_checkout_page"]

_STATES = {
    "PAID": ("Already paid", "This payment has been completed."),
    "EXPIRED": ("Link expired", "This payment link has expired. Ask the merchant for a new one."),
    "CANCELLED": ("Link cancelled", "The merchant cancelled this payment link."),
    "REFUNDED": ("Already paid", "This payment has been completed and refunded."),
    "PARTIAL_REFUND": ("Already paid", "This payment has been completed."),
    "REVERSED": ("Already paid", "This payment has been completed."),
}


def render_checkout_page(payment: Payment | None, merchant: str | None, nonce: str) -> str:
    """The page for `payment` of `merchant` (the not-found page for None); `nonce` is the
    request's Content Security Policy nonce (`mps.http.security.csp_nonce`)."""
    if payment is None or merchant is None:
        return hosted_page("checkout", "Payment not found", fill("checkout", "not_found"), nonce)
    amount = f"{format_major(payment.amount_minor, payment.currency)} {payment.currency}"
    head = fill(
        "checkout",
        "head",
        test_mode=fill("checkout", "test_mode") if not payment.livemode else Markup(),
        merchant=merchant,
        amount=amount,
        description=(
            fill("checkout", "description", description=payment.description)
            if payment.description
            else Markup()
        ),
    )
    if payment.status != "PENDING":
        title, text = _STATES[payment.status]
        state = fill("checkout", "state", status=payment.status, title=title, text=text)
        return hosted_page("checkout", f"{merchant}: {title}", Markup(head + state), nonce)
    cancel = fill("checkout", "cancel", url=payment.cancel_url) if payment.cancel_url else Markup()
    form = fill(
        "checkout",
        "form",
        pay_path=f"/api/v1/checkout/{payment.reference}/pay",
        amount=amount,
        merchant=merchant,
        email=payment.customer_email or "",
        phone=payment.customer_phone or "",
        cancel=cancel,
        nonce=nonce,
        script=inline_code("js/checkout.js"),
    )
    return hosted_page("checkout", f"Pay {merchant}", Markup(head + form), nonce)
