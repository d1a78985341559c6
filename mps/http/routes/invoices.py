"""Invoices (interface 4, decisions 8): create, list, retrieve, stats, the PDF, the timeline,
mark-paid, resend, cancel; and the hosted invoice page the customer's email links to.

The company actor numbers and creates an invoice; its own actor changes it afterwards. The
customer is emailed once the invoice (or its resend) is committed: a crash in between loses
the email, never the invoice, and a resend sends it again. A send that fails is recorded on the
invoice (`emailStatus: FAILED`, `mps.http.mailed`) and answered, never raised.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import date
from typing import Any

from aiohttp import web

from mps.actors.company import CreateInvoice, NewInvoice
from mps.actors.invoice import InvoiceOutcome, MarkInvoicePaid, ResendInvoice, VoidInvoice
from mps.adapters.mail import Mail
from mps.documents.invoice_pdf import render_invoice_pdf
from mps.domain.invoices import INVOICE_STATUSES, Invoice, LineItem
from mps.domain.money import format_major
from mps.errors import FieldError, NotFound, ValidationFailed
from mps.http.mailed import mail_input, send_after_commit, settle
from mps.http.pages.invoice import render_invoice_page
from mps.http.pages.invoice_email import render_invoice_email
from mps.http.pagination import PAGE_FIELDS
from mps.http.replies import Aggregate, Page, Resource
from mps.http.resources import (
    INVOICE,
    INVOICE_STATS,
    INVOICE_STATUS,
    TIMELINE_ENTRY,
    aggregate,
    page,
    per_currency,
    resource,
)
from mps.http.routes._scoped import one_in_mode, page_in_mode
from mps.http.routes.payments import (
    CURRENCY,
    DATE_RANGE,
    EMAIL,
    STATS_QUERY,
    range_filter,
)
from mps.http.routing import Auth, Call, Route, RouteFamily
from mps.http.schema import Amount, Array, Int, Moment, Obj, Str
from mps.http.security import csp_nonce
from mps.http.signin import normalize_email
from mps.persistence import invoice_store as store
from mps.persistence.queries import companies
from mps.persistence.queries import invoices as q
from mps.representations.invoices import hosted_url, invoice_json, timeline_json

__all__ = ["ROUTES", "link"]


def link(call: Call, invoice_id: str) -> str:
    """The invoice's hosted link, as its customer receives it."""
    services = call.services
    token = services.keyring.invoice_token(invoice_id)
    return hosted_url(services.settings.public_url, invoice_id, token)


def _view(call: Call, invoice: Invoice) -> dict[str, Any]:
    return invoice_json(invoice, link(call, invoice.id))


async def _email(call: Call, invoice: Invoice, again: bool) -> Invoice:
    """The customer's email: plain text and HTML, with the hosted link. Not logged. Returns
    the invoice with how the email went (`mps.http.mailed`): a failure is recorded, not
    raised, so the answer says so and the invoice stands."""
    services = call.services
    company = await companies.company(services.database, invoice.company_id)
    hosted = link(call, invoice.id)
    total = f"{invoice.currency} {format_major(invoice.amount_minor, invoice.currency)}"
    due = f", due {invoice.due_date}" if invoice.due_date else ""
    subject = (
        f"{'Reminder: i' if again else 'I'}nvoice {invoice.invoice_number} from {company.name}"
    )
    greeting = f"Hello {invoice.customer_name}," if invoice.customer_name else "Hello,"
    text = (
        f"{greeting}\n\n{company.name} sent you invoice {invoice.invoice_number} for {total}"
        f"{due}.\n\nView and download it: {hosted}\n"
    )
    html = render_invoice_email(company.name, invoice, total, due, hosted, greeting)
    mail = Mail(to=invoice.customer_email, subject=subject, text=text, html=html, link=hosted)
    outcome = await send_after_commit(
        call,
        mail,
        lambda status, error: store.email_outcome(invoice.company_id, invoice.id, status, error),
    )
    return replace(invoice, email_status=outcome.status, email_error=outcome.error)


def _items(body: dict[str, Any]) -> tuple[LineItem, ...] | None:
    raw = body.get("items")
    if raw is None:
        return None
    return tuple(LineItem(i["description"], i["quantity"], i["unitAmountMinor"]) for i in raw)


def _one_way_to_total(body: dict[str, Any]) -> list[FieldError]:
    has_items, has_amount = body.get("items") is not None, body.get("amountMinor") is not None
    if has_items and has_amount:
        return [FieldError("amountMinor", "must be omitted when items are given")]
    if not has_items and not has_amount:
        return [FieldError("amountMinor", "is required when items are omitted")]
    return []


def _real_date(body: dict[str, Any]) -> list[FieldError]:
    due = body.get("dueDate")
    if due is None:
        return []
    try:
        date.fromisoformat(due)
    except ValueError:
        return [FieldError("dueDate", "is not a date that exists")]
    return []


async def create_invoice(call: Call) -> Resource:
    merchant, body = call.merchant, call.body
    due = body.get("dueDate")
    if due is not None and due < call.services.clock().date().isoformat():
        # Sent, mailed and overdue a minute later is never what the merchant meant.
        raise ValidationFailed([FieldError("dueDate", "must be today or later (UTC)")])
    spec = NewInvoice(
        currency=body["currency"],
        customer_email=normalize_email(body["customerEmail"]),
        customer_name=body.get("customerName"),
        items=_items(body),
        amount_minor=body.get("amountMinor"),
        invoice_number=body.get("invoiceNumber"),
        due_date=body.get("dueDate"),
        memo=body.get("memo"),
    )
    idem = call.idempotent(lambda invoice: Resource(_view(call, invoice), 201))
    invoice: Invoice = await call.services.shards.ask_company(
        merchant.company_id, CreateInvoice(merchant.mode, spec, merchant.actor_id, idempotency=idem)
    )
    invoice = await _email(call, invoice, again=False)
    await settle(call, invoice)
    return Resource(_view(call, invoice), 201)


async def _stored(call: Call) -> Invoice:
    return await one_in_mode(call, call.merchant, q.get_invoice, "No such invoice")


async def list_invoices(call: Call) -> Page:
    query = call.query
    start, end = range_filter(query)
    return await page_in_mode(
        call,
        call.merchant,
        q.list_invoices,
        lambda invoice: _view(call, invoice),
        status=query.get("status"),
        customer_email=query["customerEmail"].lower() if query.get("customerEmail") else None,
        created_from=start,
        created_to=end,
    )


async def get_invoice(call: Call) -> Resource:
    return Resource(_view(call, await _stored(call)))


async def invoice_stats(call: Call) -> Resource | Aggregate:
    merchant, query = call.merchant, call.query
    start, end = range_filter(query)
    currency = query.get("currency")
    data = await q.stats(
        call.services.database,
        merchant.company_id,
        merchant.mode,
        currency=currency,
        created_from=start,
        created_to=end,
    )
    if currency is None:
        return Aggregate(data)
    empty = {
        "currency": currency,
        "countByStatus": dict.fromkeys(INVOICE_STATUSES, 0),
        "outstandingMinor": "0",
        "overdueMinor": "0",
        "paidMinor": "0",
    }
    return Resource(data[0] if data else empty)


async def _pdf(call: Call, invoice: Invoice) -> web.Response:
    company = await companies.company(call.services.database, invoice.company_id)
    # Rendering is CPU work of some milliseconds: off the event loop.
    data = await asyncio.to_thread(render_invoice_pdf, invoice, company.name)
    return web.Response(
        body=data,
        content_type="application/pdf",
        headers={"Content-Disposition": f'attachment; filename="{invoice.invoice_number}.pdf"'},
    )


async def invoice_pdf(call: Call) -> web.Response:
    return await _pdf(call, await _stored(call))


async def invoice_timeline(call: Call) -> Aggregate:
    invoice = await _stored(call)
    entries = await q.timeline(call.services.database, invoice.company_id, invoice.id)
    return Aggregate([timeline_json(e) for e in entries])


def _changed(call: Call, outcome: InvoiceOutcome) -> Resource:
    return Resource(_view(call, outcome.invoice))


async def _change(call: Call, message: Any) -> InvoiceOutcome:
    outcome: InvoiceOutcome = await call.services.shards.ask_invoice(
        call.merchant.company_id, call.param("id"), message
    )
    return outcome


async def mark_paid(call: Call) -> Resource:
    merchant, body = call.merchant, call.body
    command = MarkInvoicePaid(
        merchant.mode,
        merchant.actor_id,
        paid_at=body.get("paidAt"),
        reference=body.get("reference"),
        note=body.get("note"),
        idempotency=call.idempotent(lambda o: _changed(call, o)),
    )
    return _changed(call, await _change(call, command))


async def cancel(call: Call) -> Resource:
    merchant = call.merchant
    idem = call.idempotent(lambda o: _changed(call, o))
    return _changed(
        call, await _change(call, VoidInvoice(merchant.mode, merchant.actor_id, idempotency=idem))
    )


async def resend(call: Call) -> Resource:
    merchant = call.merchant
    idem = call.idempotent(lambda o: _changed(call, o))
    outcome = await _change(call, ResendInvoice(merchant.mode, merchant.actor_id, idempotency=idem))
    outcome = replace(outcome, invoice=await _email(call, outcome.invoice, again=True))
    await settle(call, outcome)
    return _changed(call, outcome)


async def _public(call: Call) -> Invoice | None:
    """The invoice a hosted link names, when its token is right; None for any wrong link (the
    answer never tells a guessed id from a real one)."""
    invoice_id, token = call.param("invoiceId"), call.query.get("t") or ""
    if not call.services.keyring.invoice_token_valid(invoice_id, token):
        return None
    return await q.get_public_invoice(call.services.database, invoice_id)


async def hosted_page(call: Call) -> web.Response:
    """The page's security headers (its Content Security Policy names the nonce) are set for
    every response by `mps.http.security`."""
    nonce = csp_nonce(call.request)
    invoice = await _public(call)
    if invoice is None:
        html = render_invoice_page(None, None, nonce, None)
        return web.Response(status=404, text=html, content_type="text/html")
    company = await companies.company(call.services.database, invoice.company_id)
    pdf_url = f"/i/{invoice.id}/pdf?t={call.query['t']}"
    html = render_invoice_page(invoice, company.name, nonce, pdf_url)
    return web.Response(text=html, content_type="text/html")


async def hosted_pdf(call: Call) -> web.Response:
    invoice = await _public(call)
    if invoice is None:
        raise NotFound("No such invoice")
    return await _pdf(call, invoice)


ITEM = Obj(
    {
        "description": Str(min_length=1, max_length=200),
        "quantity": Int(minimum=1, maximum=100_000),
        "unitAmountMinor": Amount(),
    },
    required=["description", "quantity", "unitAmountMinor"],
)
CREATE_BODY = Obj(
    {
        "currency": CURRENCY,
        "customerEmail": EMAIL,
        "customerName": Str(min_length=1, max_length=200),
        "items": Array(ITEM, min_items=1, max_items=100),
        "amountMinor": Amount(description="The total of a single-total invoice (no items)."),
        "invoiceNumber": Str(
            pattern=r"[A-Za-z0-9][A-Za-z0-9._/#-]{0,63}",
            message="must be 1 to 64 letters, digits and . _ / # -",
        ),
        "dueDate": Str(pattern=r"[0-9]{4}-[0-9]{2}-[0-9]{2}", message="must be an ISO date"),
        "memo": Str(max_length=1000),
    },
    required=["currency", "customerEmail"],
    rules=[
        _one_way_to_total,
        _real_date,
        mail_input(addresses=("customerEmail",), headers=("customerName",)),
    ],
)
TOKEN = Obj({"t": Str(max_length=64)})

_invoices = RouteFamily("invoices", read="invoices:read", write="invoices:write")

ROUTES = [
    _invoices.post(
        "/merchant/invoices",
        create_invoice,
        "Create an invoice and email it to the customer",
        status=201,
        body=CREATE_BODY,
        response=resource(INVOICE),
    ),
    _invoices.get(
        "/merchant/invoices",
        list_invoices,
        "List invoices, newest first",
        query=Obj(
            {
                **PAGE_FIELDS,
                "status": INVOICE_STATUS,
                "customerEmail": EMAIL,
                **DATE_RANGE,
            }
        ),
        response=page(INVOICE),
    ),
    _invoices.get(
        "/merchant/invoices/stats",
        invoice_stats,
        "Per-currency invoice counts and amounts",
        query=STATS_QUERY,
        response=per_currency(INVOICE_STATS),
    ),
    _invoices.get(
        "/merchant/invoices/{id}", get_invoice, "Retrieve an invoice", response=resource(INVOICE)
    ),
    _invoices.get("/merchant/invoices/{id}/pdf", invoice_pdf, "Download the invoice as a PDF"),
    _invoices.get(
        "/merchant/invoices/{id}/timeline",
        invoice_timeline,
        "Every change of the invoice, oldest first",
        response=aggregate(Array(TIMELINE_ENTRY)),
    ),
    _invoices.post(
        "/merchant/invoices/{id}/mark-paid",
        mark_paid,
        "Record a payment made outside the service",
        body=Obj(
            {
                "paidAt": Moment(description="When it was paid (default: now)."),
                "reference": Str(max_length=200),
                "note": Str(max_length=1000),
            }
        ),
        response=resource(INVOICE),
        commits_key=True,
    ),
    _invoices.post(
        "/merchant/invoices/{id}/resend",
        resend,
        "Email the invoice to the customer again",
        response=resource(INVOICE),
    ),
    _invoices.post(
        "/merchant/invoices/{id}/cancel",
        cancel,
        "Void an unpaid invoice",
        response=resource(INVOICE),
        commits_key=True,
    ),
    Route(
        "GET",
        "/i/{invoiceId}",
        hosted_page,
        "The hosted invoice page",
        "invoices",
        Auth.PUBLIC,
        query=TOKEN,
        api=False,
    ),
    Route(
        "GET",
        "/i/{invoiceId}/pdf",
        hosted_pdf,
        "The hosted invoice's PDF",
        "invoices",
        Auth.PUBLIC,
        query=TOKEN,
        api=False,
    ),
]
