"""The sandbox simulator (decisions 11): test keys trigger the same transitions, with the same
events, as the real triggers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from mps.actors.card import AuthorizeCard, CardOutcome
from mps.actors.company import AdvancePayout, DecideKyc, EmitEvent, PayoutOutcome
from mps.actors.invoice import InvoiceOutcome, MarkInvoiceOverdue
from mps.actors.payment import (
    Checkout,
    CheckoutDeclined,
    Expire,
    Outcome,
    RefundOutcome,
    Reverse,
    SettleRefund,
)
from mps.adapters.processor import CardInput
from mps.domain.kyc import Review
from mps.domain.money import parse_amount_minor
from mps.errors import FieldError, Forbidden, NotFound, ValidationFailed
from mps.http.replies import Resource
from mps.http.resources import resource
from mps.http.routes.invoices import link as invoice_link
from mps.http.routing import Auth, Call, Route
from mps.http.schema import Obj, Str
from mps.persistence.database import Database
from mps.persistence.queries import payouts as payout_queries
from mps.persistence.queries import refunds as refund_queries
from mps.representations.cards import card_json
from mps.representations.invoices import invoice_json
from mps.representations.money import payout_json, refund_json
from mps.representations.payments import payment_json

__all__ = ["ROUTES"]

_T = TypeVar("_T")

_APPROVED = CardInput("4242424242424242", 12, 2099, "123")
_DECLINED = CardInput("4000000000000002", 12, 2099, "123")


# A transition's result as (object, event): what the answer shows.
Shape = Callable[[Call, Any], tuple[dict[str, Any], dict[str, Any] | None]]


@dataclass(frozen=True)
class Kind:
    scope: str
    # Runs the transition, with the request's idempotency record; returns its result.
    run: Callable[[Call, Any], Awaitable[Any]]
    shape: Shape


def _with_first_event(show: Callable[[Call, Any], dict[str, Any]]) -> Shape:
    """The object `show` makes of an outcome, with the first event the transition raised (None
    when it raised none)."""

    def shape(call: Call, outcome: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
        return show(call, outcome), outcome.events[0] if outcome.events else None

    return shape


def _payment_shape(call: Call, outcome: Outcome) -> tuple[dict[str, Any], dict[str, Any] | None]:
    payment = payment_json(outcome.payment, call.services.settings.public_url)
    return payment, outcome.events[-1] if outcome.events else None


async def _ping(call: Call, idem: Any) -> dict[str, Any]:
    """A webhook.ping event to every endpoint subscribed to it (or to `webhook.*`, or `*`)."""
    key = call.api_key
    ping = {"object": "webhook.ping", "requestId": call.request_id}
    body: dict[str, Any] = await call.services.shards.ask_company(
        key.company_id, EmitEvent(key.mode, "webhook.ping", ping, idempotency=idem)
    )
    return body


def _event_shape(call: Call, event: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    return event["data"]["object"], event


async def _completed(call: Call, idem: Any) -> Outcome:
    return await _payment(call, Checkout(_APPROVED, None, None, "test", idempotency=idem))


async def _failed(call: Call, idem: Any) -> Outcome:
    try:
        await _payment(call, Checkout(_DECLINED, None, None, "test", idempotency=idem))
    except CheckoutDeclined as declined:
        return declined.outcome
    msg = "the simulator approved its decline card"
    raise AssertionError(msg)


async def _expired(call: Call, idem: Any) -> Outcome:
    return await _payment(call, Expire("test", due_only=False, idempotency=idem))


async def _reversed(call: Call, idem: Any) -> Outcome:
    return await _payment(call, Reverse("test", idempotency=idem))


def _required_id(call: Call, field: str) -> str:
    """The body's `field`, the id of what the simulation acts on; 422 when it is missing."""
    ident: str | None = call.body.get(field)
    if not ident:
        raise ValidationFailed([FieldError(field, "is required")])
    return ident


async def _test_object(
    call: Call,
    field: str,
    get: Callable[[Database, str, str, str], Awaitable[_T | None]],
    missing: str,
) -> _T:
    """The caller's test-mode object the body's `field` names, read with `get`; 404 when the
    company has none such in test mode (a live one is not the sandbox's to move)."""
    found = await get(
        call.services.database, call.api_key.company_id, "test", _required_id(call, field)
    )
    if found is None:
        raise NotFound(missing)
    return found


async def _payment(call: Call, message: Any) -> Outcome:
    key = call.api_key
    payment_id = _required_id(call, "paymentId")
    outcome: Outcome = await call.services.shards.ask_payment(key.company_id, payment_id, message)
    return outcome


def _refund(completed: bool) -> Callable[[Call, Any], Awaitable[RefundOutcome]]:
    async def run(call: Call, idem: Any) -> RefundOutcome:
        key = call.api_key
        refund = await _test_object(call, "refundId", refund_queries.get_refund, "No such refund")
        reason = None if completed else "rejected by the sandbox"
        command = SettleRefund(refund.id, completed, reason, "test", idempotency=idem)
        outcome: RefundOutcome = await call.services.shards.ask_payment(
            key.company_id, refund.payment_id, command
        )
        return outcome

    return run


def _payout(step: str) -> Callable[[Call, Any], Awaitable[PayoutOutcome]]:
    async def run(call: Call, idem: Any) -> PayoutOutcome:
        key = call.api_key
        payout = await _test_object(call, "payoutId", payout_queries.get_payout, "No such payout")
        reason = "could_not_process" if step == "failed" else None
        command = AdvancePayout(payout.id, step, reason, "test", idempotency=idem)
        outcome: PayoutOutcome = await call.services.shards.ask_company(key.company_id, command)
        return outcome

    return run


async def _overdue(call: Call, idem: Any) -> InvoiceOutcome:
    key = call.api_key
    invoice_id = _required_id(call, "invoiceId")
    command = MarkInvoiceOverdue("test", forced=True, idempotency=idem)
    outcome: InvoiceOutcome = await call.services.shards.ask_invoice(
        key.company_id, invoice_id, command
    )
    return outcome


async def _authorize(call: Call, idem: Any) -> CardOutcome:
    key, body = call.api_key, call.body
    errors = [
        FieldError(name, "is required")
        for name in ("cardId", "amountMinor", "currency")
        if not body.get(name)
    ]
    amount = parse_amount_minor(body.get("amountMinor") or "")
    if amount is None and body.get("amountMinor"):
        errors.append(
            FieldError("amountMinor", "must be a string of minor units, 1 to 999999999999")
        )
    if errors:
        raise ValidationFailed(errors)
    assert amount is not None
    command = AuthorizeCard(
        "test",
        amount,
        body["currency"],
        body.get("merchantName"),
        body.get("merchantCategory"),
        idempotency=idem,
    )
    outcome: CardOutcome = await call.services.shards.ask_card(
        key.company_id, body["cardId"], command
    )
    return outcome


def _kyc(status: str) -> Callable[[Call, Any], Awaitable[dict[str, Any]]]:
    """Test mode's verification forced either way, as an operator's review would decide live."""

    async def run(call: Call, idem: Any) -> dict[str, Any]:
        key = call.api_key
        review = Review("test", status, "forced by the sandbox" if status == "REJECTED" else None,
                        "sandbox")  # fmt: skip
        event: dict[str, Any] = await call.services.shards.ask_company(
            key.company_id, DecideKyc(review, call.audit(), idempotency=idem)
        )
        return event

    return run


_refund_shape = _with_first_event(lambda call, outcome: refund_json(outcome.refund))
_payout_shape = _with_first_event(lambda call, outcome: payout_json(outcome.payout))
_invoice_shape = _with_first_event(
    lambda call, outcome: invoice_json(outcome.invoice, invoice_link(call, outcome.invoice.id))
)
_authorization_shape = _with_first_event(
    lambda call, outcome: {
        **(outcome.authorization or {}),
        "card": card_json(outcome.card, outcome.balance),
    }
)

KINDS: dict[str, Kind] = {
    "payment.completed": Kind("payments:write", _completed, _payment_shape),
    "payment.failed": Kind("payments:write", _failed, _payment_shape),
    "payment.expired": Kind("payments:write", _expired, _payment_shape),
    "payment.reversed": Kind("payments:write", _reversed, _payment_shape),
    "refund.completed": Kind("refunds:write", _refund(True), _refund_shape),
    "refund.rejected": Kind("refunds:write", _refund(False), _refund_shape),
    "payout.paid": Kind("payouts:write", _payout("paid"), _payout_shape),
    "payout.failed": Kind("payouts:write", _payout("failed"), _payout_shape),
    "invoice.overdue": Kind("invoices:write", _overdue, _invoice_shape),
    "card.authorization": Kind("cards:write", _authorize, _authorization_shape),
    "webhook.ping": Kind("settings:write", _ping, _event_shape),
    "kyc.verified": Kind("settings:write", _kyc("VERIFIED"), _event_shape),
    "kyc.rejected": Kind("settings:write", _kyc("REJECTED"), _event_shape),
}


async def simulate(call: Call) -> Resource:
    key = call.api_key
    name = call.param("kind")
    kind = KINDS.get(name)
    if kind is None:
        raise NotFound(f"Unknown sandbox kind {name!r}; kinds: {', '.join(sorted(KINDS))}")
    if key.mode != "test":
        raise Forbidden("The sandbox takes test keys only", code="test_key_required")
    if kind.scope not in key.scopes:
        raise Forbidden(f"This needs the {kind.scope} scope", code="insufficient_scope")

    def present(result: Any) -> Resource:
        obj, event = kind.shape(call, result)
        return Resource({"kind": name, "object": obj, "event": event})

    result = await kind.run(call, call.idempotent(present))
    return present(result)


ROUTES = [
    Route(
        "POST",
        "/developer/sandbox/{kind}",
        simulate,
        "Simulate an event (test keys)",
        "developer",
        Auth.API_KEY,
        body=Obj(
            {
                "paymentId": Str(
                    max_length=64, description="The payment the payment.* kinds act on."
                ),
                "refundId": Str(max_length=64, description="The refund the refund.* kinds settle."),
                "payoutId": Str(max_length=64, description="The payout the payout.* kinds settle."),
                "invoiceId": Str(max_length=64, description="The invoice invoice.overdue marks."),
                "cardId": Str(max_length=64, description="The card card.authorization charges."),
                "amountMinor": Str(
                    max_length=12,
                    description="What card.authorization asks for, in minor units.",
                ),
                "currency": Str(
                    pattern=r"[A-Za-z]{3}", upper=True, message="must be a currency code"
                ),
                "merchantName": Str(
                    max_length=200, description="The shop card.authorization names."
                ),
                "merchantCategory": Str(
                    max_length=64,
                    description="The shop's category, checked against the card's controls.",
                ),
            }
        ),
        response=resource(
            {
                "kind": Str(),
                "object": Obj({}, allow_unknown=True, description="The object the kind touched."),
                "event": Obj({"id": Str(), "type": Str()}, nullable=True, allow_unknown=True),
            }
        ),
    ),
]
