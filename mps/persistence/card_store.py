"""Cards and their authorizations as rows: the statements the company actor (issuing) and each
card's actor commit, the reads a card's actor activates from, and the events that report cards.
Every statement names the company."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import orjson

from mps.domain.clock import iso
from mps.domain.issuing import Card, Controls
from mps.persistence.database import Database, IntegrityConflict
from mps.persistence.outbox import event_writes
from mps.persistence.rows import from_row
from mps.persistence.statements import Row, Statement, insert, versioned_update

__all__ = [
    "NumberTaken",
    "authorization_insert",
    "card_balance",
    "card_events",
    "card_from_row",
    "card_insert",
    "card_update",
    "load_card",
    "spent_ever",
    "spent_since",
]


def card_from_row(row: Row) -> Card:
    return from_row(Card, row, controls=Controls.from_json(orjson.loads(row["controls"])))


def _controls(card: Card) -> str:
    return orjson.dumps(card.controls.to_json(), option=orjson.OPT_SORT_KEYS).decode()


class NumberTaken(IntegrityConflict):
    """A new card's number is another card's (unique by its keyed hash): draw another."""


def card_insert(card: Card, sealed_number: str, number_hash: str, sealed_cvc: str) -> Statement:
    row = insert(
        "cards",
        {
            "id": card.id,
            "company_id": card.company_id,
            "mode": card.mode,
            "version": card.version,
            "type": card.type,
            "cardholder_name": card.cardholder_name,
            "nickname": card.nickname,
            "member_id": card.member_id,
            "brand": card.brand,
            "last4": card.last4,
            "number": sealed_number,
            "number_hash": number_hash,
            "cvc": sealed_cvc,
            "exp_month": card.exp_month,
            "exp_year": card.exp_year,
            "currency": card.currency,
            "status": card.status,
            "controls": _controls(card),
            "created_at": card.created_at,
            "updated_at": card.updated_at,
        },
    )
    return Statement(row.sql, row.params, conflict_error=NumberTaken)


def card_update(before: Card, after: Card) -> Statement:
    return versioned_update(
        "cards",
        "id",
        after.id,
        before.version,
        {"status": after.status, "controls": _controls(after), "updated_at": after.updated_at},
    )


def authorization_insert(
    card: Card,
    authorization_id: str,
    amount: int,
    *,
    approved: bool,
    decline_reason: str | None,
    merchant_name: str | None,
    category: str | None,
    now: str,
) -> Statement:
    return insert(
        "card_authorizations",
        {
            "id": authorization_id,
            "card_id": card.id,
            "company_id": card.company_id,
            "mode": card.mode,
            "amount_minor": amount,
            "currency": card.currency,
            "approved": int(approved),
            "decline_reason": decline_reason,
            "merchant_name": merchant_name,
            "category": category,
            "created_at": now,
        },
    )


def card_events(
    card: Card,
    types: Iterable[str],
    obj: dict[str, Any],
    at: str | None = None,
) -> tuple[list[Statement], list[dict[str, Any]]]:
    """The outbox inserts for the card's events, each carrying `obj` (the card as the API shows
    it, with fields such as the authorization, rendered by the caller), made `at` (the card's
    last change by default), and the bodies a client will see."""
    return event_writes(
        company_id=card.company_id,
        mode=card.mode,
        created_at=at or card.updated_at,
        types=types,
        obj=obj,
    )


async def load_card(db: Database, company_id: str, card_id: str) -> Card | None:
    row = await db.fetchrow(
        "SELECT * FROM cards WHERE id = $1 AND company_id = $2", card_id, company_id
    )
    return card_from_row(row) if row is not None else None


async def card_balance(db: Database, company_id: str, card_id: str) -> int:
    """The sum of the card's own postings: its balance, stored nowhere else."""
    total = await db.fetchval(
        "SELECT COALESCE(SUM(p.amount_minor), 0) FROM ledger_postings p "
        "JOIN ledger_transactions t ON t.id = p.transaction_id "
        "WHERE t.source_id = $1 AND t.company_id = $2 AND p.account = 'card'",
        card_id,
        company_id,
    )
    return int(total)


async def spent_ever(db: Database, card_id: str) -> int:
    """What the card's approved authorizations spent, ever (the all-time limit counts it)."""
    total = await db.fetchval(
        "SELECT COALESCE(SUM(amount_minor), 0) FROM card_authorizations "
        "WHERE card_id = $1 AND approved = 1",
        card_id,
    )
    return int(total)


async def spent_since(db: Database, card_id: str, since: datetime | None) -> list[tuple[str, int]]:
    """(time, amount) of the card's approved authorizations since `since` (all when None)."""
    rows = await db.fetch(
        "SELECT created_at, amount_minor FROM card_authorizations "
        "WHERE card_id = $1 AND approved = 1 AND created_at >= $2 ORDER BY created_at",
        card_id,
        "" if since is None else iso(since),
    )
    return [(r["created_at"], int(r["amount_minor"])) for r in rows]
