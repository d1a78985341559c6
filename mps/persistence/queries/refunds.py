"""Refund reads: one refund, filtered cursor lists, and the refunds due for the processor.
Always scoped to one company and mode in the SQL itself, except the scheduler's read, which is
scoped to the shards this node owns."""

from __future__ import annotations

from collections.abc import Sequence

from mps.domain.refunds import Refund
from mps.persistence.database import Database
from mps.persistence.queries.paging import (
    PageRequest,
    Where,
    fetch_one_in_mode,
    read_page,
)
from mps.persistence.queries.shards import due_in_shards
from mps.persistence.refund_store import refund_from_row
from mps.persistence.statements import Row

__all__ = ["due", "get_refund", "list_refunds"]


async def get_refund(db: Database, company_id: str, mode: str, refund_id: str) -> Refund | None:
    row = await fetch_one_in_mode(db, "SELECT * FROM refunds", company_id, mode, refund_id)
    return refund_from_row(row) if row is not None else None


async def list_refunds(
    db: Database,
    company_id: str,
    mode: str,
    page: PageRequest,
    *,
    payment_id: str | None = None,
    status: str | None = None,
) -> tuple[list[Refund], str | None]:
    where = (
        Where.in_mode(company_id, mode).compare("payment_id", payment_id).compare("status", status)
    )
    return await read_page(db, "SELECT * FROM refunds", where, page, refund_from_row)


async def due(db: Database, now: str, limit: int, shards: Sequence[int] | None) -> list[Row]:
    """Up to `limit` PENDING refunds whose processing time has come, the oldest first, of every
    company or (in a cluster) of the companies in `shards`."""
    sql = (
        "SELECT * FROM refunds WHERE status = 'PENDING' AND process_after <= $1 "
        "{scope} ORDER BY process_after LIMIT $2"
    )
    return await due_in_shards(db, sql, "company_id", shards, now, limit)
