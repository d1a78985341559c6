"""Ledger reads: a company's movements for the API, the settlements that are due, and the
zero-sum checks of the ledger service (decisions 5, 14)."""

from __future__ import annotations

from mps.persistence.database import Database
from mps.persistence.queries.paging import PageRequest, Where, fetch_page
from mps.persistence.queries.shards import DueScan
from mps.persistence.statements import Row, placeholders

__all__ = ["due_settlements", "list_transactions", "unbalanced", "zero_sum"]


async def list_transactions(
    db: Database,
    company_id: str,
    mode: str,
    page: PageRequest,
    *,
    currency: str | None = None,
    source_id: str | None = None,
    kind: str | None = None,
) -> tuple[list[Row], str | None]:
    """A page of the company's movements, newest first, each row with its postings summed per
    merchant account (`available`, `pending`, `reserved`). The page is cut from the
    transactions first, so only its own postings are read."""
    where = (
        Where.in_mode(company_id, mode)
        .compare("currency", currency)
        .compare("source_id", source_id)
        .compare("type", kind)
    )
    rows, cursor = await fetch_page(db, "SELECT * FROM ledger_transactions", where, page)
    if not rows:
        return [], cursor
    marks = placeholders(len(rows), 2)
    sums = await db.fetch(
        "SELECT transaction_id, account, amount_minor FROM ledger_postings "
        f"WHERE company_id = $1 AND transaction_id IN ({marks})",
        company_id,
        *(row["id"] for row in rows),
    )
    changes: dict[str, dict[str, int]] = {}
    for posting in sums:
        changes.setdefault(posting["transaction_id"], {})[posting["account"]] = int(
            posting["amount_minor"]
        )
    summed = []
    for row in rows:
        moved = changes.get(row["id"], {})
        summed.append(
            {
                **row,
                "available": moved.get("available", 0),
                "pending": moved.get("pending", 0),
                "reserved": moved.get("reserved", 0),
            }
        )
    return summed, cursor


# Credits due to settle, the longest due first.
due_settlements = DueScan(
    "SELECT payment_id, company_id, mode, currency, amount_minor FROM settlements "
    "WHERE settled_at IS NULL AND due_at <= $1 {scope} ORDER BY due_at LIMIT $2"
)


async def zero_sum(db: Database) -> int:
    """The sum of every posting: zero, or the ledger is broken."""
    total = await db.fetchval("SELECT COALESCE(SUM(amount_minor), 0) FROM ledger_postings")
    return int(total)


async def unbalanced(db: Database, limit: int = 10, recent: int | None = None) -> list[str]:
    """Transactions whose postings do not sum to zero (at most `limit`); of the newest `recent`
    transactions only, when given (the cheap probe /health runs on every call)."""
    if recent is None:
        rows = await db.fetch(
            "SELECT transaction_id FROM ledger_postings GROUP BY transaction_id "
            "HAVING SUM(amount_minor) <> 0 LIMIT $1",
            limit,
        )
    else:
        rows = await db.fetch(
            "SELECT p.transaction_id FROM ledger_postings p WHERE p.transaction_id IN "
            "(SELECT id FROM ledger_transactions ORDER BY created_at DESC LIMIT $1) "
            "GROUP BY p.transaction_id HAVING SUM(p.amount_minor) <> 0 LIMIT $2",
            recent,
            limit,
        )
    return [row["transaction_id"] for row in rows]
