"""Cards (decisions 6): member and company cards prepaid from the wallet, funding and
withdrawal, freeze, unfreeze, terminate, controls, authorizations, and the audited details.

Issuing goes to the company actor (it funds the card from its books); everything after goes to
the card's own actor, which serializes the card's balance and state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mps.actors.card import (
    CardOutcome,
    ChangeCard,
    FundCard,
    UpdateCardControls,
    WithdrawFromCard,
)
from mps.actors.company import IssueCard, IssuedCard, RecordAudit
from mps.actors.company.cards import CARD_CVC_PURPOSE, CARD_NUMBER_PURPOSE
from mps.auth.principals import ApiKeyPrincipal
from mps.domain.approvals import ApprovalRequest
from mps.domain.issuing import CARD_STATUSES, CARD_TYPES, Controls, validate_controls
from mps.errors import FieldError, NotFound, ValidationFailed
from mps.http.idempotency import presented
from mps.http.pagination import PAGE_FIELDS, PAGE_QUERY, page_request
from mps.http.replies import Page, Resource
from mps.http.resources import CARD, CARD_AUTHORIZATION, page, resource
from mps.http.routes._scoped import one_in_mode
from mps.http.routes.approvals import HELD, approval_accepted
from mps.http.routes.payments import CURRENCY
from mps.http.routing import Call, LimitRule, Route
from mps.http.schema import Amount, Array, Enum, Int, Obj, Str
from mps.limits import Limit
from mps.persistence.queries import cards as q
from mps.representations.cards import authorization_json, card_json

__all__ = ["CONTROLS", "ROUTES"]

CONTROLS = Obj(
    {
        "spendingLimits": Array(
            Obj(
                {"amountMinor": Str(max_length=12), "interval": Str(max_length=20)},
                required=["amountMinor", "interval"],
            ),
            max_items=10,
        ),
        "allowedCategories": Array(Str(max_length=64), max_items=300),
        "blockedCategories": Array(Str(max_length=64), max_items=300),
    },
    description="Spending limits per interval and merchant categories (Stripe Issuing's names).",
)


def _controls(body: dict[str, Any]) -> Controls:
    raw = body.get("controls")
    return validate_controls(raw) if raw else Controls()


def _issued(issued: IssuedCard | ApprovalRequest) -> Resource:
    if isinstance(issued, ApprovalRequest):
        return approval_accepted(issued)
    return Resource(card_json(issued.card, issued.balance), 201)


def _changed(outcome: CardOutcome | ApprovalRequest) -> Resource:
    if isinstance(outcome, ApprovalRequest):
        return approval_accepted(outcome)
    return Resource(card_json(outcome.card, outcome.balance))


def _member(call: Call) -> str:
    """The card's member: `memberId`, else the member asking. A key is no member, so a key
    names one."""
    member_id: str | None = call.body.get("memberId")
    if member_id:
        return member_id
    if isinstance(call.merchant, ApiKeyPrincipal):
        raise ValidationFailed(
            [FieldError("memberId", "is required when an API key issues a member card")]
        )
    return call.merchant.actor_id


async def _issue(call: Call, card_type: str, holder: Callable[[], dict[str, str]]) -> Resource:
    """Asks the company actor to issue a card of `card_type`; `holder` reads who or what it is
    for (a member card's cardholder and member, a company card's nickname) after the controls,
    so a request wrong in both is told about its controls first."""
    merchant, body = call.merchant, call.body
    idem = call.idempotent(_issued)
    command = IssueCard(
        merchant.mode,
        card_type,
        body["currency"],
        _controls(body),
        **holder(),
        initial_funding_minor=body.get("initialFundingMinor") or 0,
        audit=call.audit(),
        idempotency=idem,
        requested_by=merchant.actor_id,
    )
    issued: IssuedCard | ApprovalRequest = await call.services.shards.ask_company(
        merchant.company_id, command
    )
    return presented(idem, issued, _issued)


async def issue_member_card(call: Call) -> Resource:
    return await _issue(
        call,
        "member",
        lambda: {"cardholder_name": call.body["cardholderName"], "member_id": _member(call)},
    )


async def issue_company_card(call: Call) -> Resource:
    return await _issue(call, "company", lambda: {"nickname": call.body["nickname"]})


async def list_cards(call: Call) -> Page:
    merchant, query = call.merchant, call.query
    db = call.services.database
    cards, cursor = await q.list_cards(
        db,
        merchant.company_id,
        merchant.mode,
        page_request(query),
        card_type=query.get("type"),
        status=query.get("status"),
    )
    held = await q.balances(db, merchant.company_id, [c.id for c in cards])
    return Page([card_json(c, held[c.id]) for c in cards], cursor)


async def get_card(call: Call) -> Resource:
    merchant = call.merchant
    db = call.services.database
    card = await one_in_mode(call, merchant, q.get_card, "No such card")
    held = await q.balances(db, merchant.company_id, [card.id])
    return Resource(card_json(card, held[card.id]))


async def _ask(call: Call, message: Any) -> Resource:
    """Asks the card's actor; the reply as the request's claim rendered it for the stored
    response, when the command carried one (`message.idempotency`)."""
    outcome: CardOutcome | ApprovalRequest = await call.services.shards.ask_card(
        call.merchant.company_id, call.param("id"), message
    )
    return presented(call.idempotency, outcome, _changed)


def _action(action: str) -> Any:
    async def handle(call: Call) -> Resource:
        idem = call.idempotent(_changed)
        return await _ask(call, ChangeCard(call.merchant.mode, action, idempotency=idem))

    handle.__name__ = f"{action}_card"
    return handle


async def update_controls(call: Call) -> Resource:
    controls = validate_controls(call.body)
    return await _ask(call, UpdateCardControls(call.merchant.mode, controls))


async def fund(call: Call) -> Resource:
    merchant = call.merchant
    idem = call.idempotent(_changed)
    command = FundCard(
        merchant.mode, call.body["amountMinor"], merchant.actor_id, call.audit(), idempotency=idem
    )
    return await _ask(call, command)


async def withdraw(call: Call) -> Resource:
    idem = call.idempotent(_changed)
    return await _ask(
        call, WithdrawFromCard(call.merchant.mode, call.body["amountMinor"], idempotency=idem)
    )


async def transactions(call: Call) -> Page:
    merchant = call.merchant
    card = await one_in_mode(call, merchant, q.get_card, "No such card")
    rows, cursor = await q.authorizations(
        call.services.database, merchant.company_id, card.id, page_request(call.query)
    )
    return Page([authorization_json(r) for r in rows], cursor)


async def details(call: Call) -> Resource:
    """The full number and CVC: audited before they are shown, and limited per user."""
    merchant = call.merchant
    services = call.services
    row = await q.sealed_details(
        services.database, merchant.company_id, merchant.mode, call.param("id")
    )
    if row is None:
        raise NotFound("No such card")
    await services.shards.ask_company(
        merchant.company_id,
        RecordAudit("card.details_revealed", ("card", call.param("id")), {}, call.audit()),
    )
    keyring = services.keyring
    return Resource(
        {
            "id": call.param("id"),
            "number": keyring.unseal(row["number"], CARD_NUMBER_PURPOSE).decode(),
            "cvc": keyring.unseal(row["cvc"], CARD_CVC_PURPOSE).decode(),
            "expMonth": row["exp_month"],
            "expYear": row["exp_year"],
        }
    )


AMOUNT_BODY = Obj({"amountMinor": Amount()}, required=["amountMinor"])
ISSUE_FIELDS = {
    "currency": CURRENCY,
    "controls": CONTROLS,
    "initialFundingMinor": Amount(description="Taken from the available balance (the wallet)."),
}
_CARD = resource(CARD)


def _route(method: str, path: str, handler: Any, summary: str, scope: str, **more: Any) -> Route:
    return Route(method, path, handler, summary, "cards", scope=scope, **more)


ROUTES = [
    _route(
        "POST",
        "/merchant/cards",
        issue_member_card,
        "Issue a virtual card to a member",
        "cards:write",
        status=201,
        also=HELD,
        response=_CARD,
        body=Obj(
            {
                **ISSUE_FIELDS,
                "cardholderName": Str(min_length=1, max_length=100),
                "memberId": Str(max_length=64),
            },
            required=["cardholderName", "currency"],
        ),
        commits_key=True,
    ),
    _route(
        "POST",
        "/merchant/company-cards",
        issue_company_card,
        "Issue a company card",
        "cards:write",
        status=201,
        also=HELD,
        response=_CARD,
        body=Obj(
            {**ISSUE_FIELDS, "nickname": Str(min_length=1, max_length=100)},
            required=["nickname", "currency"],
        ),
        commits_key=True,
    ),
    _route(
        "GET",
        "/merchant/cards",
        list_cards,
        "List cards, newest first",
        "cards:read",
        query=Obj({**PAGE_FIELDS, "type": Enum(CARD_TYPES), "status": Enum(CARD_STATUSES)}),
        response=page(CARD),
    ),
    _route(
        "GET", "/merchant/cards/{id}", get_card, "Retrieve a card", "cards:read", response=_CARD
    ),
    *(
        _route(
            "POST",
            f"/merchant/cards/{{id}}/{action}",
            _action(action),
            summary,
            "cards:write",
            response=_CARD,
            commits_key=True,
        )
        for action, summary in (
            ("freeze", "Freeze a card"),
            ("unfreeze", "Unfreeze a card"),
            ("terminate", "Terminate a card; its balance returns to the wallet"),
        )
    ),
    _route(
        "PATCH",
        "/merchant/cards/{id}/controls",
        update_controls,
        "Change a card's controls",
        "cards:write",
        body=CONTROLS,
        response=_CARD,
    ),
    *(
        _route(
            "POST",
            path,
            fund,
            summary,
            "cards:write",
            body=AMOUNT_BODY,
            response=_CARD,
            also=HELD,
            commits_key=True,
        )
        for path, summary in (
            ("/merchant/cards/{id}/fund", "Fund a card from the wallet"),
            ("/merchant/company-cards/{id}/fund", "Top up a company card from the wallet"),
        )
    ),
    _route(
        "POST",
        "/merchant/cards/{id}/withdraw",
        withdraw,
        "Move money from a card to the wallet",
        "cards:write",
        body=AMOUNT_BODY,
        response=_CARD,
        commits_key=True,
    ),
    _route(
        "GET",
        "/merchant/cards/{id}/transactions",
        transactions,
        "A card's authorizations, approved and declined, newest first",
        "cards:read",
        query=PAGE_QUERY,
        response=page(CARD_AUTHORIZATION),
    ),
    _route(
        "GET",
        "/merchant/cards/{id}/details",
        details,
        "The card's full number and CVC (audited)",
        "cards:write",
        limits=(LimitRule.per_actor(Limit("card-details", 10, 60)),),
        response=resource(
            {"id": Str(), "number": Str(), "cvc": Str(), "expMonth": Int(), "expYear": Int()}
        ),
    ),
]
