"""Team reads: members with their users, and the audit trail: filtered cursor pages, and its
entries in chain order a chunk at a time (verification and export read in constant memory)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from mps.domain.audit import AuditEntry
from mps.persistence.audit_store import entry_from_row
from mps.persistence.database import Database
from mps.persistence.queries.paging import PageRequest, Where, read_page
from mps.persistence.statements import Row

__all__ = ["audit_chain", "audit_page", "members"]

CHUNK = 1000


async def members(db: Database, company_id: str) -> list[Row]:
    return await db.fetch(
        "SELECT m.user_id, m.role_id, m.created_at, u.email, u.name FROM members m "
        "JOIN users u ON u.id = m.user_id WHERE m.company_id = $1 ORDER BY m.created_at, u.id",
        company_id,
    )


async def audit_page(
    db: Database,
    company_id: str,
    page: PageRequest,
    *,
    actor_id: str | None = None,
    action: str | None = None,
    at_from: str | None = None,
    at_to: str | None = None,
) -> tuple[list[AuditEntry], str | None]:
    where = (
        Where.in_company(company_id)
        .compare("actor_id", actor_id)
        .compare("action", action)
        .between("at", at_from, at_to)
    )
    # The page's cursor is (at, id), as every list's; `at` is when the entry was made.
    return await read_page(
        db, "SELECT *, at AS created_at FROM audit_entries", where, page, entry_from_row, "at"
    )


async def audit_chain(db: Database, company_id: str) -> AsyncIterator[list[AuditEntry]]:
    """The company's entries in chain order, `CHUNK` at a time: memory stays constant however
    long the chain."""
    after = 0
    while True:
        rows = await db.fetch(
            "SELECT * FROM audit_entries WHERE company_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
            company_id,
            after,
            CHUNK,
        )
        if not rows:
            return
        yield [entry_from_row(r) for r in rows]
        after = int(rows[-1]["seq"])
