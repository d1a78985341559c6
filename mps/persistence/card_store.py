"""Cards and their authorizations as rows: the statements the company actor (issuing) and each
card's actor commit, the reads a card's actor activates from, and the events that report cards.
Every statement names the company."""

from __future__ import annotations

from datetime import datetime

import orjson

from mps.domain.clock import iso
from mps.domain.issuing import Card, Controls
from mps.persistence.database import Database, IntegrityConflict
from mps.persistence.rows import from_row, to_row
from mps.persistence.statements import Row, Statement, insert, versioned_update

__all__ = [
    "NumberTaken",
    "authorization_insert",
    "card_balance",
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
    row = to_row(
        card,
        controls=_controls(card),
        number=sealed_number,
        number_hash=number_hash,
        cvc=sealed_cvc,
    )
    statement = insert("cards", row)
    return Statement(statement.sql, statement.params, conflict_error=NumberTaken)


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
