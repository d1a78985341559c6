"""Payments (interface 4, decisions 4): create, list, retrieve, cancel, stats."""

from __future__ import annotations

from typing import Any

from mps.actors.company import CreatePayment
from mps.actors.payment import Cancel, Outcome
from mps.domain.money import KNOWN_CURRENCIES
from mps.domain.payments import STATUSES, NewPayment
from mps.errors import FieldError, NotFound, ValidationFailed
from mps.http.idempotency import presented
from mps.http.pagination import PAGE_FIELDS, page_request
from mps.http.replies import Aggregate, Page, Resource
from mps.http.resources import (
    PAYMENT,
    PAYMENT_STATS,
    PAYMENT_STATUS,
    page,
    per_currency,
    resource,
)
from mps.http.routing import Call, RouteFamily
from mps.http.schema import (
    Amount,
    Anything,
    Bool,
    Int,
    Map,
    Moment,
    Obj,
    Str,
)
from mps.http.targets import checked_url
from mps.persistence.queries import payments as q
from mps.representations.payments import payment_json

__all__ = [
    "CURRENCY",
    "CURRENCY_FILTER",
    "DATE_RANGE",
    "EMAIL",
    "PHONE",
    "ROUTES",
    "STATS_QUERY",
    "normalize_phone",
    "payment_id_of",
    "range_filter",
]

CURRENCY = Str(
    pattern=r"[A-Za-z]{3}",
    upper=True,
    message="must be a three-letter ISO 4217 code",
    description="ISO 4217, in either case (answered upper-case).",
)
# A filter on currency: a code no company can hold would only ever answer zeros, so it is
# refused like a body's unknown code rather than answered 200 with nothing.
CURRENCY_FILTER = Str(
    pattern="|".join(sorted(KNOWN_CURRENCIES)),
    upper=True,
    message="must be an ISO 4217 currency code this service supports",
    description="ISO 4217, in either case: only amounts in this currency.",
)
EMAIL = Str(max_length=254, format="email")
PHONE = Str(pattern=r"\+?[0-9 ()\-]{7,20}", message="must be a phone number in E.164 form")
URL = Str(max_length=2048, format="uri")
DATE_RANGE = {
    "from": Moment(description="Created at or after: an ISO date or timestamp."),
    "to": Moment(
        end_of_day=True, description="Created at or before: an ISO timestamp, or a whole date."
    ),
}
# The query of a per-currency stats route: one currency or every one, over a createdAt window.
STATS_QUERY = Obj({"currency": CURRENCY_FILTER, **DATE_RANGE})


def normalize_phone(phone: str) -> str:
    digits = "".join(ch for ch in phone if ch.isdigit())
    return f"+{digits}"


# The largest integer every JSON reader keeps exactly (2**53 - 1).
_SAFE_INT = 2**53 - 1


def _metadata_values(body: dict[str, Any]) -> list[FieldError]:
    errors = []
    for key, value in (body.get("customMetadata") or {}).items():
        if isinstance(value, str) and len(value) > 500:
            errors.append(FieldError(f"customMetadata.{key}", "must be at most 500 characters"))
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > _SAFE_INT:
            # Past 2**53 a JavaScript client (the dashboard, most webhook receivers) would read
            # another number than the one stored.
            errors.append(
                FieldError(
                    f"customMetadata.{key}",
                    "must be an integer within ±9007199254740991; send larger ones as a string",
                )
            )
        elif not isinstance(value, str | int | float | bool) and value is not None:
            errors.append(
                FieldError(f"customMetadata.{key}", "must be a string, number, boolean or null")
            )
    return errors


def _phone_is_e164(body: dict[str, Any]) -> list[FieldError]:
    phone = body.get("customerPhone")
    if phone is not None and not 8 <= len(normalize_phone(phone)) <= 16:
        return [FieldError("customerPhone", "must be a phone number in E.164 form")]
    return []


CREATE_BODY = Obj(
    {
        "amountMinor": Amount(),
        "currency": CURRENCY,
        "description": Str(max_length=200),
        "customerEmail": EMAIL,
        "customerPhone": PHONE,
        "expiresInSec": Int(minimum=60, maximum=7_776_000),
        "noExpiry": Bool(),
        "allowMultiplePayments": Bool(),
        "successUrl": URL,
        "cancelUrl": URL,
        "webhookUrl": URL,
        "customMetadata": Map(values=Anything(), max_keys=50, max_key_length=40),
    },
    required=["amountMinor", "currency"],
    rules=[_metadata_values, _phone_is_e164],
)


def range_filter(query: dict[str, Any]) -> tuple[str | None, str | None]:
    """The createdAt bounds of `from`/`to`, both included, as stored strings (the query schema
    has parsed and cleaned them)."""
    start, end = query.get("from"), query.get("to")
    if start is not None and end is not None and start > end:
        raise ValidationFailed([FieldError("from", "must not be after to")])
    return start, end


async def payment_id_of(call: Call, given: str) -> str:
    """The payment id `given` stands for: the id itself, or the reference a shopper quotes
    (`PAY-…`), resolved within the caller's company and mode. An unknown reference is passed on
    as it is, so the answer is the same 404 an unknown id gets."""
    if not given.upper().startswith("PAY-"):
        return given
    merchant = call.merchant
    found = await q.id_for_reference(
        call.services.database, merchant.company_id, merchant.mode, given.upper()
    )
    return found or given


def _view(call: Call, outcome: Outcome) -> dict[str, Any]:
    return payment_json(outcome.payment, call.services.settings.public_url)


def _created(call: Call, outcome: Outcome) -> Resource:
    return Resource(_view(call, outcome), 201)


async def create_payment(call: Call) -> Resource:
    merchant, body = call.merchant, call.body
    spec = NewPayment(
        amount_minor=body["amountMinor"],
        currency=body["currency"],
        description=body.get("description"),
        customer_email=body["customerEmail"].lower() if body.get("customerEmail") else None,
        customer_phone=normalize_phone(body["customerPhone"])
        if body.get("customerPhone")
        else None,
        expires_in_sec=body.get("expiresInSec"),
        no_expiry=bool(body.get("noExpiry")),
        allow_multiple=bool(body.get("allowMultiplePayments")),
        success_url=body.get("successUrl"),
        cancel_url=body.get("cancelUrl"),
        webhook_url=(
            checked_url(call, body["webhookUrl"], "webhookUrl") if body.get("webhookUrl") else None
        ),
        metadata=body.get("customMetadata") or {},
    )
    idem = call.idempotent(lambda outcome: _created(call, outcome))
    outcome = await call.services.shards.ask_company(
        merchant.company_id, CreatePayment(merchant.mode, spec, idempotency=idem)
    )
    return presented(idem, outcome, lambda outcome: _created(call, outcome))


def _filter(call: Call, **more: str | None) -> q.PaymentFilter:
    """The caller's payments in its mode, of the query's `currency` and created in its date
    range, narrowed by `more`."""
    merchant, query = call.merchant, call.query
    start, end = range_filter(query)
    return q.PaymentFilter(
        merchant.company_id,
        merchant.mode,
        currency=query.get("currency"),
        created_from=start,
        created_to=end,
        **more,
    )


async def list_payments(call: Call) -> Page:
    query = call.query
    where = _filter(
        call,
        status=query.get("status"),
        link_payment_id=query.get("linkPaymentId"),
        customer_email=query["customerEmail"].lower() if query.get("customerEmail") else None,
        reference=query["reference"].upper() if query.get("reference") else None,
        search=query.get("q"),
    )
    page = page_request(query)
    payments, cursor = await q.list_payments(call.services.database, where, page)
    public_url = call.services.settings.public_url
    return Page([payment_json(p, public_url) for p in payments], cursor)


async def get_payment(call: Call) -> Resource:
    merchant, payment_id = call.merchant, await payment_id_of(call, call.param("id"))
    payment = call.services.shards.recent_payment(
        merchant.company_id, merchant.mode, payment_id
    ) or await q.get_payment(call.services.database, merchant.company_id, merchant.mode, payment_id)
    if payment is None:
        raise NotFound("No such payment")
    return Resource(payment_json(payment, call.services.settings.public_url))


async def cancel_payment(call: Call) -> Resource:
    merchant = call.merchant
    idem = call.idempotent(lambda outcome: Resource(_view(call, outcome)))
    payment_id = await payment_id_of(call, call.param("id"))
    outcome = await call.services.shards.ask_payment(
        merchant.company_id, payment_id, Cancel(merchant.mode, idempotency=idem)
    )
    return presented(idem, outcome, lambda outcome: Resource(_view(call, outcome)))


async def payment_stats(call: Call) -> Resource | Aggregate:
    query = call.query
    where = _filter(call)
    data = await q.stats(call.services.database, where)
    if query.get("currency"):
        empty = {
            "currency": query["currency"],
            "count": 0,
            "byStatus": {s: {"count": 0, "amountMinor": "0"} for s in STATUSES},
            "grossMinor": "0",
            "refundedMinor": "0",
            "netMinor": "0",
        }
        return Resource(data[0] if data else empty)
    return Aggregate(data)


LIST_QUERY = Obj(
    {
        **PAGE_FIELDS,
        "status": PAYMENT_STATUS,
        "currency": CURRENCY_FILTER,
        **DATE_RANGE,
        "linkPaymentId": Str(max_length=64),
        "customerEmail": EMAIL,
        "reference": Str(
            max_length=64, description="The payment's reference (PAY-…), in either case."
        ),
        "q": Str(
            min_length=1,
            max_length=254,
            description="Payments whose reference, id or customer email is exactly this.",
        ),
    }
)

_payments = RouteFamily("payments", read="payments:read", write="payments:write")

ROUTES = [
    _payments.post(
        "/merchant/payments",
        create_payment,
        "Create a payment link",
        status=201,
        body=CREATE_BODY,
        response=resource(PAYMENT),
        commits_key=True,
    ),
    _payments.get(
        "/merchant/payments",
        list_payments,
        "List payments, newest first",
        query=LIST_QUERY,
        response=page(PAYMENT),
    ),
    _payments.get(
        "/merchant/payments/stats",
        payment_stats,
        "Per-currency payment totals and counts",
        query=STATS_QUERY,
        response=per_currency(PAYMENT_STATS),
    ),
    _payments.get(
        "/merchant/payments/{id}",
        get_payment,
        "Retrieve a payment by its id or its reference (PAY-…)",
        response=resource(PAYMENT),
    ),
    _payments.post(
        "/merchant/payments/{id}/cancel",
        cancel_payment,
        "Cancel a PENDING payment",
        response=resource(PAYMENT),
        commits_key=True,
    ),
]
