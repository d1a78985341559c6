"""Issuing cards: the company actor checks what it holds (the member, the currency, the live
account), draws a Luhn-valid number from the test BIN, seals it, and commits the card with its
initial funding from the wallet (a ledger movement it decides against its books) and its audit
entry, in one unit. Afterwards the card's own actor (mps.actors.card) serializes it.
"""

from __future__ import annotations

import secrets
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from mps.actors.company.approvals import RequestApproval, request_approval
from mps.actors.company.audit import entry
from mps.actors.company.ledger import commit_movements, require_fresh
from mps.actors.company.state import CompanyState
from mps.actors.idempotency import IdempotentCommand
from mps.actors.runtime import Detached
from mps.domain import issuing as rules
from mps.domain import purposes
from mps.domain.approvals import needs_approval
from mps.domain.audit import SYSTEM, AuditContext
from mps.domain.cards import brand_of
from mps.domain.clock import iso
from mps.domain.ids import new_id
from mps.domain.issuing import Card, Controls
from mps.domain.ledger import Movement
from mps.errors import FieldError, Forbidden, ValidationFailed
from mps.persistence import card_store as store
from mps.persistence.outbox import event_writes
from mps.persistence.statements import Statement
from mps.representations.cards import card_json

__all__ = ["CARD_CVC_PURPOSE", "CARD_NUMBER_PURPOSE", "IssueCard", "IssuedCard", "issue_card"]


@dataclass(frozen=True)
class IssueCard(IdempotentCommand):
    """Reply: IssuedCard, once the card, its card.created event (and its funding from the
    wallet, with card.funded) committed. A member card goes to `member_id`."""

    mode: str
    type: str  # member | company
    currency: str
    controls: Controls
    cardholder_name: str | None = None
    nickname: str | None = None
    member_id: str | None = None
    initial_funding_minor: int = 0
    audit: AuditContext = SYSTEM
    # Who asks, for an approval request should the card.issue policy apply; None (an approved
    # request being run) asks for none.
    requested_by: str | None = None


@dataclass(frozen=True)
class IssuedCard:
    card: Card
    balance: int
    events: list[dict[str, Any]]


NUMBER_ATTEMPTS = 3
# Sealing purposes (mps.domain.purposes): a sealed number opens only as a card number.
CARD_NUMBER_PURPOSE = purposes.CARD_NUMBER
CARD_CVC_PURPOSE = purposes.CARD_CVC


def _random_digits(count: int) -> str:
    return "".join(secrets.choice("0123456789") for _ in range(count))


def issue_card(state: CompanyState, command: IssueCard) -> Detached:
    company = state.require()
    require_fresh(state)
    settings = company.settings[command.mode]
    if command.currency not in settings.supported_currencies:
        supported = ", ".join(settings.supported_currencies)
        raise ValidationFailed([FieldError("currency", f"must be one of {supported}")])
    if command.mode == "live" and settings.kyc_status != "VERIFIED":
        raise Forbidden("Live cards need a verified account", code="account_not_verified")
    if command.type == "member" and command.member_id not in state.members:
        raise ValidationFailed([FieldError("memberId", "is not a member of the company")])
    limits = [limit.amount_minor for limit in command.controls.spending_limits]
    weight = max([command.initial_funding_minor, *limits])
    if command.requested_by is not None and needs_approval(
        state.policies, "card.issue", command.currency, weight
    ):
        if command.initial_funding_minor > 0:
            # A funding the balance cannot cover today would only fail once approved: refused
            # now, before anyone is asked to vote (409 balance_insufficient).
            state.books.card_funding(
                command.mode, command.currency, "card_check", command.initial_funding_minor, ""
            )
        payload = {
            "type": command.type,
            "currency": command.currency,
            "controls": command.controls.to_json(),
            "cardholderName": command.cardholder_name,
            "nickname": command.nickname,
            "memberId": command.member_id,
            "initialFundingMinor": str(command.initial_funding_minor),
        }
        gate = RequestApproval(
            command.mode, "card.issue", command.currency, weight, payload,
            command.requested_by, command.audit, idempotency=command.idempotency,
        )  # fmt: skip
        return request_approval(state, gate)
    now = state.context.clock()
    stamp = iso(now)
    card_id = new_id("card")
    month, year = rules.expiry(now)
    funding = command.initial_funding_minor
    movements: list[Movement] = []
    if funding > 0:
        movements.append(
            state.books.card_funding(command.mode, command.currency, card_id, funding, stamp)
        )
    types = ("card.created", "card.funded") if funding > 0 else ("card.created",)
    keyring = state.keyring
    audit = entry(
        state, command.audit, "card.issued", ("card", card_id),
        type=command.type, currency=command.currency, initialFundingMinor=str(funding),
    )  # fmt: skip

    def plan() -> tuple[IssuedCard, list[Statement]]:
        """The card under a freshly drawn number, and the unit that stores it."""
        number = rules.new_card_number(_random_digits)
        card = Card(
            id=card_id,
            company_id=state.company_id,
            mode=command.mode,
            type=command.type,
            cardholder_name=command.cardholder_name,
            nickname=command.nickname,
            member_id=command.member_id if command.type == "member" else None,
            brand=brand_of(number),
            last4=number[-4:],
            exp_month=month,
            exp_year=year,
            currency=command.currency,
            status="ACTIVE",
            controls=command.controls,
            created_at=stamp,
            updated_at=stamp,
        )
        events, bodies = event_writes(card, types, card_json(card, funding))
        issued = IssuedCard(card, funding, bodies)
        statements = [
            store.card_insert(
                card,
                keyring.seal(number.encode(), CARD_NUMBER_PURPOSE),
                keyring.hash_card_number(number),
                keyring.seal(rules.new_cvc(_random_digits).encode(), CARD_CVC_PURPOSE),
            ),
            *events,
        ]
        if command.idempotency is not None:
            statements += command.idempotency.statements(issued)
        return issued, statements

    # Counted as in flight now, in the turn. Should the drawn number be another card's (one in
    # a billion per card already issued), the same card is committed again under a fresh one.
    def commit() -> Coroutine[Any, Any, Any]:
        issued, statements = plan()
        return commit_movements(state, movements, statements, issued, [audit]).work

    attempt = commit()

    async def run() -> IssuedCard:
        nonlocal attempt
        for _ in range(NUMBER_ATTEMPTS - 1):
            try:
                issued: IssuedCard = await attempt
            except store.NumberTaken:
                attempt = commit()
                continue
            return issued
        last: IssuedCard = await attempt
        return last

    return Detached(run())
