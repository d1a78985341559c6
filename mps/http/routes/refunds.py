"""Refunds (interface 4, decisions 5): create against a payment, list, retrieve.

A refund is created by its payment's actor, which checks the payment's state and what remains
of it, and has the company's ledger reserve the amount in the same commit; the processor then
completes or rejects it (mps.actors.schedulers.money).
"""

from __future__ import annotations

from mps.actors.payment import CreateRefund, RefundOutcome
from mps.domain.approvals import ApprovalRequest
from mps.http.pagination import PAGE_FIELDS
from mps.http.replies import Resource
from mps.http.resources import REFUND, REFUND_STATUS, page, resource
from mps.http.routes._scoped import merchant_one, merchant_page
from mps.http.routes.approvals import HELD, approval_accepted
from mps.http.routes.payments import payment_id_of
from mps.http.routing import Call, RouteFamily
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
        merchant.actor_id,
        call.audit(),
        idempotency=idem,
    )
    outcome: RefundOutcome | ApprovalRequest = await call.services.shards.ask_payment(
        merchant.company_id, await payment_id_of(call, body["paymentId"]), command
    )
    return _created_or_held(outcome)


list_refunds = merchant_page(q.list_refunds, refund_json, payment_id="paymentId", status="status")
get_refund = merchant_one(q.get_refund, refund_json, "No such refund")


_refunds = RouteFamily("refunds", read="refunds:read", write="refunds:write")

ROUTES = [
    _refunds.post(
        "/merchant/refunds",
        create_refund,
        "Refund a PAID or PARTIAL_REFUND payment, in full or in part",
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
    _refunds.get(
        "/merchant/refunds",
        list_refunds,
        "List refunds, newest first",
        query=Obj({**PAGE_FIELDS, "paymentId": Str(max_length=64), "status": REFUND_STATUS}),
        response=page(REFUND),
    ),
    _refunds.get(
        "/merchant/refunds/{id}", get_refund, "Retrieve a refund", response=resource(REFUND)
    ),
]
