"""Customers, derived from payment activity (decisions 7)."""

from __future__ import annotations

from typing import Any

from mps.http.pagination import PAGE_FIELDS, PAGE_QUERY, page_request
from mps.http.replies import Page, Resource
from mps.http.resources import CUSTOMER, PAYMENT, page, resource
from mps.http.routes._scoped import one_in_mode
from mps.http.routes.payments import EMAIL
from mps.http.routing import Call, RouteFamily
from mps.http.schema import Obj
from mps.persistence.queries import customers as q
from mps.persistence.queries import payments as payment_queries
from mps.persistence.statements import Row
from mps.representations.payments import payment_json

__all__ = ["ROUTES"]


def _view(row: Row, totals: tuple[int, list[dict[str, str]]]) -> dict[str, Any]:
    count, by_currency = totals
    return {
        "id": row["id"],
        "email": row["email"],
        "phone": row["phone"],
        "firstSeenAt": row["first_seen_at"],
        "lastSeenAt": row["last_seen_at"],
        "paymentCount": count,
        "totals": by_currency,
        "createdAt": row["created_at"],
    }


async def list_customers(call: Call) -> Page:
    merchant, db = call.merchant, call.services.database
    page = page_request(call.query)
    email = call.query["email"].lower() if call.query.get("email") else None
    items, cursor = await q.list_customers(db, merchant.company_id, merchant.mode, email, page)
    totals = await q.customer_totals(
        db, merchant.company_id, merchant.mode, [r["id"] for r in items]
    )
    return Page([_view(r, totals[r["id"]]) for r in items], cursor)


async def _customer(call: Call) -> Row:
    return await one_in_mode(call, call.merchant, q.get_customer, "No such customer")


async def get_customer(call: Call) -> Resource:
    merchant, row = call.merchant, await _customer(call)
    totals = await q.customer_totals(
        call.services.database, merchant.company_id, merchant.mode, [row["id"]]
    )
    return Resource(_view(row, totals[row["id"]]))


async def customer_payments(call: Call) -> Page:
    merchant, row = call.merchant, await _customer(call)
    page = page_request(call.query)
    where = payment_queries.PaymentFilter(merchant.company_id, merchant.mode, customer_id=row["id"])
    payments, cursor = await payment_queries.list_payments(call.services.database, where, page)
    public_url = call.services.settings.public_url
    return Page([payment_json(p, public_url) for p in payments], cursor)


_customers = RouteFamily("customers", read="customers:read")

ROUTES = [
    _customers.get(
        "/merchant/customers",
        list_customers,
        "List customers, newest first",
        query=Obj({**PAGE_FIELDS, "email": EMAIL}),
        response=page(CUSTOMER),
    ),
    _customers.get(
        "/merchant/customers/{id}",
        get_customer,
        "Retrieve a customer with totals",
        response=resource(CUSTOMER),
    ),
    _customers.get(
        "/merchant/customers/{id}/payments",
        customer_payments,
        "A customer's payments, newest first",
        query=PAGE_QUERY,
        response=page(PAYMENT),
    ),
]
