"""Refunds (interface 4, decisions 5): create against a payment, list, retrieve.

A refund is created by its payment's actor, which checks the payment's state and what remains
of it, and has the company's ledger reserve the amount in the same commit; the processor then
completes or rejects it (mps.actors.schedulers.money).
"""

from __future__ import annotations

from mps.actors.payment import CreateRefund, RefundOutcome
from mps.domain.approvals import ApprovalRequest
from mps.http.pagination import PAGE_FIELDS
from mps.http.replies import Page, Resource
from mps.http.resources import REFUND, REFUND_STATUS, page, resource
from mps.http.routes._scoped import one_in_mode, page_in_mode
from mps.http.routes.approvals import HELD, approval_accepted
from mps.http.routes.payments import payment_id_of
from mps.http.routing import Call, Route
from mps.http.schema import Amount, Obj, Str
from mps.persistence.queries import refunds as q
from mps.representations.money import refund_json

__all__ = ["ROUTES"]


def _created_or_held(outcome: RefundOutcome | ApprovalRequest) -> Resource:
    if isinstance(outcome, ApprovalRequest):
        return approval_accepted(outcome)
    return Resource(refund_json(outcome.refund), 201)


async def create_refund(call: Call) -> Resource:
    merchant, body = call.merchant, call.body
    idem = call.idempotent(_created_or_held)
    command = CreateRefund(
        merchant.mode,
        body["amountMinor"],
        body.get("reason"),
        idem,
        merchant.actor_id,
        call.audit(),
    )
    outcome: RefundOutcome | ApprovalRequest = await call.services.shards.ask_payment(
        merchant.company_id, await payment_id_of(call, body["paymentId"]), command
    )
    return _created_or_held(outcome)


async def list_refunds(call: Call) -> Page:
    query = call.query
    return await page_in_mode(
        call,
        call.merchant,
        q.list_refunds,
        refund_json,
        payment_id=query.get("paymentId"),
        status=query.get("status"),
    )


async def get_refund(call: Call) -> Resource:
    refund = await one_in_mode(call, call.merchant, q.get_refund, "No such refund")
    return Resource(refund_json(refund))


ROUTES = [
    Route(
        "POST",
        "/merchant/refunds",
        create_refund,
        "Refund a PAID or PARTIAL_REFUND payment, in full or in part",
        "refunds",
        scope="refunds:write",
        status=201,
        body=Obj(
            {
                "paymentId": Str(max_length=64),
                "amountMinor": Amount(),
                "reason": Str(max_length=500),
            },
            required=["paymentId", "amountMinor"],
        ),
        response=resource(REFUND),
        also=HELD,
        commits_key=True,
    ),
    Route(
        "GET",
        "/merchant/refunds",
        list_refunds,
        "List refunds, newest first",
        "refunds",
        scope="refunds:read",
        query=Obj({**PAGE_FIELDS, "paymentId": Str(max_length=64), "status": REFUND_STATUS}),
        response=page(REFUND),
    ),
    Route(
        "GET",
        "/merchant/refunds/{id}",
        get_refund,
        "Retrieve a refund",
        "refunds",
        scope="refunds:read",
        response=resource(REFUND),
    ),
]
