"""Customer reads, with per-currency totals derived from the customer's payments."""

from __future__ import annotations

from mps.persistence.database import Database
from mps.persistence.queries.paging import PageRequest, Where, fetch_one_in_mode, fetch_page
from mps.persistence.statements import Row, placeholders

__all__ = ["customer_totals", "get_customer", "list_customers"]


async def get_customer(db: Database, company_id: str, mode: str, customer_id: str) -> Row | None:
    return await fetch_one_in_mode(db, "SELECT * FROM customers", company_id, mode, customer_id)


async def list_customers(
    db: Database, company_id: str, mode: str, email: str | None, page: PageRequest
) -> tuple[list[Row], str | None]:
    where = Where.in_mode(company_id, mode)
    return await fetch_page(db, "SELECT * FROM customers", where.compare("email", email), page)


async def customer_totals(
    db: Database, company_id: str, mode: str, customer_ids: list[str]
) -> dict[str, tuple[int, list[dict[str, str]]]]:
    """Per customer: (payment count, [{currency, paidMinor, refundedMinor}])."""
    if not customer_ids:
        return {}
    marks = placeholders(len(customer_ids), 3)
    rows = await db.fetch(
        "SELECT customer_id, currency, COUNT(*) AS n, "
        "SUM(CASE WHEN status IN ('PAID', 'PARTIAL_REFUND', 'REFUNDED', 'REVERSED') "
        "THEN amount_minor ELSE 0 END) AS paid, SUM(amount_refunded_minor) AS refunded "
        f"FROM payments WHERE company_id = $1 AND mode = $2 AND customer_id IN ({marks}) "
        "GROUP BY customer_id, currency ORDER BY currency",
        company_id,
        mode,
        *customer_ids,
    )
    totals: dict[str, tuple[int, list[dict[str, str]]]] = {c: (0, []) for c in customer_ids}
    for row in rows:
        count, currencies = totals[row["customer_id"]]
        currencies.append(
            {
                "currency": row["currency"],
                "paidMinor": str(int(row["paid"])),
                "refundedMinor": str(int(row["refunded"])),
            }
        )
        totals[row["customer_id"]] = (count + int(row["n"]), currencies)
    return totals
