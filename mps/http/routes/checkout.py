"""Hosted checkout (decisions 4): the public pay route and the page at /pay/{reference}."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from aiohttp import web

from mps.actors.payment import Checkout, Outcome
from mps.adapters.processor import CardInput
from mps.domain.cards import luhn_valid
from mps.domain.payments import Payment
from mps.errors import FieldError, NotFound, ValidationFailed
from mps.http.pages.checkout import render_checkout_page
from mps.http.replies import Resource
from mps.http.resources import resource
from mps.http.routes.payments import EMAIL, PHONE, normalize_phone
from mps.http.routing import Auth, Call, LimitRule, Route
from mps.http.schema import Int, Obj, Str
from mps.http.security import csp_nonce
from mps.limits import Limit
from mps.persistence.queries import companies
from mps.persistence.queries import payments as q

__all__ = ["build"]


# The link as read for this request: the idempotency scope and the handler both need it.
_LINK: web.RequestKey[Payment] = web.RequestKey("checkout_link")


async def _payment(call: Call) -> Payment:
    cached: Payment | None = call.request.get(_LINK)
    if cached is not None:
        return cached
    payment = await q.by_reference(call.services.database, call.param("reference"))
    if payment is None or payment.link_payment_id is not None:
        raise NotFound("No such payment link")
    call.request[_LINK] = payment
    return payment


async def _scope(call: Call) -> tuple[str, str, str]:
    """Checkout keys are scoped per payment link (decisions 16)."""
    payment = await _payment(call)
    return payment.company_id, f"checkout:{payment.id}:", payment.mode


def _card(body: dict[str, Any], now: datetime) -> CardInput:
    card = body["card"]
    number = "".join(card["number"].split())
    errors = []
    if not luhn_valid(number):
        errors.append(FieldError("card.number", "is not a valid card number"))
    year = card["expYear"]
    if year < 100:
        year += 2000  # as printed on cards: 29 is 2029
    elif year < 2000:
        errors.append(FieldError("card.expYear", "must be a two- or four-digit year"))
    if year >= 2000 and (year, card["expMonth"]) < (now.year, now.month):
        errors.append(FieldError("card.expYear", "the card has expired"))
    if errors:
        raise ValidationFailed(errors)
    return CardInput(number, card["expMonth"], year, card["cvc"])


def success_redirect(success_url: str | None, payment: Payment) -> str | None:
    """The merchant's success URL with the paid payment's id and reference added, so the page
    the shopper lands on knows which order was paid (its own query kept)."""
    if success_url is None:
        return None
    parts = urlsplit(success_url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    query += [("paymentId", payment.id), ("reference", payment.reference)]
    return urlunsplit(parts._replace(query=urlencode(query)))


def checkout_view(payment: Payment, redirect: str | None) -> dict[str, Any]:
    """What the public may see of a payment: no metadata, no customer, no webhook."""
    return {
        "reference": payment.reference,
        "status": payment.status,
        "amountMinor": str(payment.amount_minor),
        "currency": payment.currency,
        "paidAt": payment.paid_at,
        "paymentMethod": {"brand": payment.card_brand, "last4": payment.card_last4},
        "redirectUrl": redirect,
    }


async def pay(call: Call) -> Resource:
    link = await _payment(call)
    card = _card(call.body, datetime.now(UTC))
    email = call.body.get("email")
    phone = call.body.get("phone")

    def present(outcome: Outcome) -> Resource:
        paid = outcome.payment
        return Resource(checkout_view(paid, success_redirect(link.success_url, paid)))

    idem = call.idempotent(present)
    outcome = await call.services.shards.ask_payment(
        link.company_id,
        link.id,
        Checkout(
            card,
            email.lower() if email else None,
            normalize_phone(phone) if phone else None,
            None,
            idempotency=idem,
            # Names the attempt a retry is, so that it is never charged twice (the pipeline
            # has validated it; mps.actors.attempts).
            key=call.request.headers.get("Idempotency-Key"),
        ),
    )
    return present(outcome)


async def page(call: Call) -> web.Response:
    """The page's security headers (its Content Security Policy names the nonce) are set for
    every response by `mps.http.security`."""
    nonce = csp_nonce(call.request)
    payment = await q.by_reference(call.services.database, call.param("reference"))
    if payment is None or payment.link_payment_id is not None:
        html = render_checkout_page(None, None, nonce)
        return web.Response(status=404, text=html, content_type="text/html")
    company = await companies.company(call.services.database, payment.company_id)
    html = render_checkout_page(payment, company.name, nonce)
    return web.Response(text=html, content_type="text/html")


PAY_BODY = Obj(
    {
        "card": Obj(
            {
                "number": Str(pattern=r"[0-9 ]{12,23}", message="must be 12 to 19 digits"),
                "expMonth": Int(minimum=1, maximum=12),
                "expYear": Int(
                    minimum=0, maximum=2100, description="Four digits, or two (29 is 2029)."
                ),
                "cvc": Str(pattern=r"[0-9]{3,4}", message="must be 3 or 4 digits"),
            },
            required=["number", "expMonth", "expYear", "cvc"],
        ),
        "email": EMAIL,
        "phone": PHONE,
    },
    required=["card"],
)


def build(development: bool) -> list[Route]:
    per_ip = Limit("checkout", 600 if development else 30, 60)
    return [
        Route(
            "POST",
            "/checkout/{reference}/pay",
            pay,
            "Pay a payment link with a card",
            "checkout",
            Auth.PUBLIC,
            body=PAY_BODY,
            limits=(LimitRule(per_ip, lambda call: call.ip),),
            idempotency_scope=_scope,
            response=resource(
                {
                    "reference": Str(),
                    "status": Str(),
                    "amountMinor": Str(),
                    "currency": Str(),
                    "paidAt": Str(format="date-time", nullable=True),
                    "paymentMethod": Obj(
                        {"brand": Str(nullable=True), "last4": Str(nullable=True)},
                        allow_unknown=True,
                    ),
                    "redirectUrl": Str(nullable=True),
                }
            ),
        ),
        Route(
            "GET",
            "/pay/{reference}",
            page,
            "The hosted checkout page",
            "checkout",
            Auth.PUBLIC,
            api=False,
        ),
    ]
