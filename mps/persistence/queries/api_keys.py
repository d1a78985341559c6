"""API key reads. Never selects the secret's hash for display."""

from __future__ import annotations

from mps.persistence.database import Database
from mps.persistence.queries.paging import PageRequest, Where, fetch_page
from mps.persistence.statements import Row

__all__ = ["key_exists", "key_logs", "key_row", "list_keys"]

_KEY_COLUMNS = (
    "id, mode, name, type, prefix, last4, scopes, created_by, created_at, last_used_at, revoked_at"
)


async def list_keys(
    db: Database, company_id: str, mode: str | None, page: PageRequest
) -> tuple[list[Row], str | None]:
    where = Where.in_company(company_id).compare("mode", mode)
    return await fetch_page(db, f"SELECT {_KEY_COLUMNS} FROM api_keys", where, page)


async def key_row(db: Database, company_id: str, key_id: str) -> Row | None:
    return await db.fetchrow(
        f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE id = $1 AND company_id = $2", key_id, company_id
    )


async def key_exists(db: Database, company_id: str, key_id: str) -> bool:
    found = await db.fetchval(
        "SELECT 1 FROM api_keys WHERE id = $1 AND company_id = $2", key_id, company_id
    )
    return found is not None


async def key_logs(
    db: Database, company_id: str, key_id: str, page: PageRequest
) -> tuple[list[Row], str | None]:
    where = Where.in_company(company_id).compare("key_id", key_id)
    select = (
        "SELECT id, at, at AS created_at, method, path, status_code, ip, request_id "
        "FROM api_key_logs"
    )
    return await fetch_page(db, select, where, page, created="at")
