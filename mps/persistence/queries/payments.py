"""Payment reads: one payment, filtered cursor lists, per-currency stats. Always scoped to one
company and mode in the SQL itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mps.domain.payments import STATUSES, Payment
from mps.persistence.database import Database
from mps.persistence.payment_store import payment_from_row
from mps.persistence.queries.paging import PageRequest, Where, read_one_in_mode, read_page
from mps.persistence.queries.shards import DueScan
from mps.persistence.statements import Row

__all__ = [
    "PaymentFilter",
    "by_reference",
    "get_payment",
    "id_for_reference",
    "list_payments",
    "overdue",
    "stats",
]

# Statuses whose payments collected money at some point.
COLLECTED = ("PAID", "PARTIAL_REFUND", "REFUNDED", "REVERSED")


@dataclass(frozen=True)
class PaymentFilter:
    company_id: str
    mode: str
    status: str | None = None
    currency: str | None = None
    created_from: str | None = None
    created_to: str | None = None
    link_payment_id: str | None = None
    customer_email: str | None = None
    customer_id: str | None = None
    reference: str | None = None
    # A shopper's words for a payment: its reference, its id or the customer's email, exactly.
    search: str | None = None

    def where(self) -> Where:
        where = (
            Where.in_mode(self.company_id, self.mode)
            .compare("status", self.status)
            .compare("currency", self.currency)
            .between("created_at", self.created_from, self.created_to)
            .compare("link_payment_id", self.link_payment_id)
            .compare("customer_email", self.customer_email)
            .compare("customer_id", self.customer_id)
            .compare("reference", self.reference)
        )
        if self.search is not None:
            where.params.extend([self.search, self.search.lower()])
            n = len(where.params)
            where.conditions.append(
                f"(reference = ${n - 1} OR id = ${n - 1} OR customer_email = ${n})"
            )
        return where


async def get_payment(db: Database, company_id: str, mode: str, payment_id: str) -> Payment | None:
    return await read_one_in_mode(
        db, "SELECT * FROM payments", company_id, mode, payment_id, payment_from_row
    )


async def id_for_reference(db: Database, company_id: str, mode: str, reference: str) -> str | None:
    """The id of the company's payment in `mode` with this reference; None when it has none."""
    row = await db.fetchrow(
        "SELECT id FROM payments WHERE reference = $1 AND company_id = $2 AND mode = $3",
        reference,
        company_id,
        mode,
    )
    return str(row["id"]) if row is not None else None


async def by_reference(db: Database, reference: str) -> Payment | None:
    row = await db.fetchrow("SELECT * FROM payments WHERE reference = $1", reference)
    return payment_from_row(row) if row is not None else None


# PENDING payments whose expiresAt is at or before now, the longest overdue first: their `id`
# and `company_id`, for the expiry scheduler.
overdue = DueScan(
    "SELECT id, company_id FROM payments WHERE status = 'PENDING' "
    "AND expires_at IS NOT NULL AND expires_at <= $1 {scope} ORDER BY expires_at LIMIT $2"
)


async def list_payments(
    db: Database, where: PaymentFilter, page: PageRequest
) -> tuple[list[Payment], str | None]:
    return await read_page(db, "SELECT * FROM payments", where.where(), page, payment_from_row)


async def stats(db: Database, where: PaymentFilter) -> list[dict[str, Any]]:
    """Per currency: counts and amounts by status, gross, refunded, net. Never blended."""
    condition = where.where()
    rows = await db.fetch(
        "SELECT currency, status, COUNT(*) AS n, SUM(amount_minor) AS amount, "
        "SUM(amount_refunded_minor) AS refunded FROM payments "
        f"WHERE {condition.sql} GROUP BY currency, status ORDER BY currency",
        *condition.params,
    )
    return _shape_stats(rows)


def _shape_stats(rows: list[Row]) -> list[dict[str, Any]]:
    by_currency: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = by_currency.setdefault(
            row["currency"],
            {
                "count": 0,
                "by": {},
                "gross": 0,
                "refunded": 0,
                "reversed": 0,
            },
        )
        amount, refunded = int(row["amount"]), int(row["refunded"])
        entry["count"] += int(row["n"])
        entry["by"][row["status"]] = (int(row["n"]), amount)
        if row["status"] in COLLECTED:
            entry["gross"] += amount
            entry["refunded"] += refunded
        if row["status"] == "REVERSED":
            entry["reversed"] += amount - refunded
    result = []
    for currency, entry in by_currency.items():
        by_status = {
            status: {
                "count": entry["by"].get(status, (0, 0))[0],
                "amountMinor": str(entry["by"].get(status, (0, 0))[1]),
            }
            for status in STATUSES
        }
        net = entry["gross"] - entry["refunded"] - entry["reversed"]
        result.append(
            {
                "currency": currency,
                "count": entry["count"],
                "byStatus": by_status,
                "grossMinor": str(entry["gross"]),
                "refundedMinor": str(entry["refunded"]),
                "netMinor": str(net),
            }
        )
    return result
