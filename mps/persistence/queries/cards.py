"""Card reads: one card, filtered cursor lists with their balances, a card's authorizations,
and its sealed number and CVC for the audited details route. Scoped to one company and mode."""

from __future__ import annotations

from mps.domain.issuing import Card
from mps.persistence.card_store import card_from_row
from mps.persistence.database import Database
from mps.persistence.queries.paging import (
    PageRequest,
    Where,
    fetch_one_in_mode,
    fetch_page,
    read_one_in_mode,
    read_page,
)
from mps.persistence.statements import Row, placeholders

__all__ = ["authorizations", "balances", "get_card", "list_cards", "sealed_details"]


async def get_card(db: Database, company_id: str, mode: str, card_id: str) -> Card | None:
    return await read_one_in_mode(
        db, "SELECT * FROM cards", company_id, mode, card_id, card_from_row
    )


async def list_cards(
    db: Database,
    company_id: str,
    mode: str,
    page: PageRequest,
    *,
    card_type: str | None = None,
    status: str | None = None,
) -> tuple[list[Card], str | None]:
    where = Where.in_mode(company_id, mode).compare("type", card_type).compare("status", status)
    return await read_page(db, "SELECT * FROM cards", where, page, card_from_row)


async def balances(db: Database, company_id: str, card_ids: list[str]) -> dict[str, int]:
    """Each card's balance: the sum of its own postings (one grouped read for a page)."""
    if not card_ids:
        return {}
    marks = placeholders(len(card_ids), 2)
    rows = await db.fetch(
        "SELECT t.source_id, SUM(p.amount_minor) AS total FROM ledger_postings p "
        "JOIN ledger_transactions t ON t.id = p.transaction_id "
        f"WHERE t.company_id = $1 AND t.source_id IN ({marks}) AND p.account = 'card' "
        "GROUP BY t.source_id",
        company_id,
        *card_ids,
    )
    found = {row["source_id"]: int(row["total"]) for row in rows}
    return {card_id: found.get(card_id, 0) for card_id in card_ids}


async def authorizations(
    db: Database, company_id: str, card_id: str, page: PageRequest
) -> tuple[list[Row], str | None]:
    where = Where.in_company(company_id).compare("card_id", card_id)
    return await fetch_page(db, "SELECT * FROM card_authorizations", where, page)


async def sealed_details(db: Database, company_id: str, mode: str, card_id: str) -> Row | None:
    return await fetch_one_in_mode(
        db, "SELECT number, cvc, exp_month, exp_year FROM cards", company_id, mode, card_id
    )
