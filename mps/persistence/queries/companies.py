"""Company reads."""

from __future__ import annotations

import orjson

from mps.domain.company import Company
from mps.errors import NotFound
from mps.persistence.database import Database

__all__ = ["company", "member_roles"]


async def company(db: Database, company_id: str) -> Company:
    row = await db.fetchrow(
        "SELECT id, name, version, created_at, data FROM companies WHERE id = $1", company_id
    )
    if row is None:
        raise NotFound("No such company")
    return Company.from_row(row, orjson.loads(row["data"]))


async def member_roles(db: Database, company_id: str) -> dict[str, str]:
    """user id -> role id, for every member of the company."""
    rows = await db.fetch("SELECT user_id, role_id FROM members WHERE company_id = $1", company_id)
    return {row["user_id"]: row["role_id"] for row in rows}
