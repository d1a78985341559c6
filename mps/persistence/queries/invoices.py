"""Invoice reads: one invoice, filtered cursor lists, its timeline, per-currency stats, and the
invoices due to become overdue. Scoped to one company and mode in the SQL itself, except the
scheduler's read, which is scoped to the shards this node owns."""

from __future__ import annotations

from typing import Any

from mps.domain.invoices import INVOICE_STATUSES, Invoice, TimelineEntry
from mps.persistence.database import Database
from mps.persistence.invoice_store import invoice_from_row
from mps.persistence.queries.paging import (
    PageRequest,
    Where,
    read_one_in_mode,
    read_page,
)
from mps.persistence.queries.shards import DueScan

__all__ = ["get_invoice", "get_public_invoice", "list_invoices", "overdue", "stats", "timeline"]


async def get_invoice(db: Database, company_id: str, mode: str, invoice_id: str) -> Invoice | None:
    return await read_one_in_mode(
        db, "SELECT * FROM invoices", company_id, mode, invoice_id, invoice_from_row
    )


async def get_public_invoice(db: Database, invoice_id: str) -> Invoice | None:
    """For the hosted page, whose caller proved the link's token before asking."""
    row = await db.fetchrow("SELECT * FROM invoices WHERE id = $1", invoice_id)
    return invoice_from_row(row) if row is not None else None


async def list_invoices(
    db: Database,
    company_id: str,
    mode: str,
    page: PageRequest,
    *,
    status: str | None = None,
    customer_email: str | None = None,
    created_from: str | None = None,
    created_to: str | None = None,
) -> tuple[list[Invoice], str | None]:
    where = (
        Where.in_mode(company_id, mode)
        .compare("status", status)
        .compare("customer_email", customer_email)
        .between("created_at", created_from, created_to)
    )
    return await read_page(db, "SELECT * FROM invoices", where, page, invoice_from_row)


async def timeline(db: Database, company_id: str, invoice_id: str) -> list[TimelineEntry]:
    rows = await db.fetch(
        "SELECT status, at, actor, note FROM invoice_timeline "
        "WHERE invoice_id = $1 AND company_id = $2 ORDER BY at, id",
        invoice_id,
        company_id,
    )
    return [TimelineEntry(r["status"], r["at"], r["actor"], r["note"]) for r in rows]


async def stats(
    db: Database,
    company_id: str,
    mode: str,
    *,
    currency: str | None = None,
    created_from: str | None = None,
    created_to: str | None = None,
) -> list[dict[str, Any]]:
    """Per currency (never blended): counts by status, and what is outstanding (SENT and
    OVERDUE), overdue and paid, in minor units."""
    where = (
        Where.in_mode(company_id, mode)
        .compare("currency", currency)
        .between("created_at", created_from, created_to)
    )
    rows = await db.fetch(
        "SELECT currency, status, COUNT(*) AS n, SUM(amount_minor) AS amount FROM invoices "
        f"WHERE {where.sql} GROUP BY currency, status ORDER BY currency",
        *where.params,
    )
    by_currency: dict[str, dict[str, tuple[int, int]]] = {}
    for row in rows:
        by_currency.setdefault(row["currency"], {})[row["status"]] = (
            int(row["n"]),
            int(row["amount"]),
        )
    return [
        {
            "currency": code,
            "countByStatus": {s: found.get(s, (0, 0))[0] for s in INVOICE_STATUSES},
            "outstandingMinor": str(found.get("SENT", (0, 0))[1] + found.get("OVERDUE", (0, 0))[1]),
            "overdueMinor": str(found.get("OVERDUE", (0, 0))[1]),
            "paidMinor": str(found.get("PAID", (0, 0))[1]),
        }
        for code, found in by_currency.items()
    ]


# SENT invoices whose due date has passed by now, the longest overdue first.
overdue = DueScan(
    "SELECT id, company_id FROM invoices WHERE status = 'SENT' "
    "AND overdue_from IS NOT NULL AND overdue_from <= $1 {scope} "
    "ORDER BY overdue_from LIMIT $2"
)
