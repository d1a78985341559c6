"""Refund reads: one refund, filtered cursor lists, and the refunds due for the processor.
Always scoped to one company and mode in the SQL itself, except the scheduler's read, which is
scoped to the shards this node owns."""

from __future__ import annotations

from mps.domain.refunds import Refund
from mps.persistence.database import Database
from mps.persistence.queries.paging import (
    PageRequest,
    Where,
    read_one_in_mode,
    read_page,
)
from mps.persistence.queries.shards import DueScan
from mps.persistence.refund_store import refund_from_row

__all__ = ["due", "get_refund", "list_refunds"]


async def get_refund(db: Database, company_id: str, mode: str, refund_id: str) -> Refund | None:
    return await read_one_in_mode(
        db, "SELECT * FROM refunds", company_id, mode, refund_id, refund_from_row
    )


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


# PENDING refunds whose processing time has come, the oldest first.
due = DueScan(
    "SELECT * FROM refunds WHERE status = 'PENDING' AND process_after <= $1 "
    "{scope} ORDER BY process_after LIMIT $2"
)
