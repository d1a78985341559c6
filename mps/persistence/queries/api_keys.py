"""API key reads. Never selects the secret's hash for display."""

from __future__ import annotations

from mps.http.pagination import PageRequest
from mps.persistence.database import Database
from mps.persistence.statements import Row

__all__ = ["key_logs", "list_keys"]

_KEY_COLUMNS = "id, mode, name, type, prefix, last4, scopes, created_at, last_used_at, revoked_at"


async def list_keys(
    db: Database, company_id: str, mode: str | None, page: PageRequest
) -> list[Row]:
    conditions = ["company_id = $1"]
    params: list[object] = [company_id]
    if mode is not None:
        params.append(mode)
        conditions.append(f"mode = ${len(params)}")
    after, after_params = page.where(len(params) + 1)
    if after:
        conditions.append(after)
        params.extend(after_params)
    params.append(page.limit + 1)
    return await db.fetch(
        f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE {' AND '.join(conditions)} "
        f"ORDER BY created_at DESC, id DESC LIMIT ${len(params)}",
        *params,
    )


async def key_exists(db: Database, company_id: str, key_id: str) -> bool:
    found = await db.fetchval(
        "SELECT 1 FROM api_keys WHERE id = $1 AND company_id = $2", key_id, company_id
    )
    return found is not None


async def key_logs(db: Database, company_id: str, key_id: str, page: PageRequest) -> list[Row]:
    params: list[object] = [key_id, company_id]
    after, after_params = page.where(3, created="at")
    condition = f" AND {after}" if after else ""
    params.extend(after_params)
    params.append(page.limit + 1)
    return await db.fetch(
        "SELECT id, at AS created_at, method, path, status_code, ip, request_id FROM api_key_logs "
        f"WHERE key_id = $1 AND company_id = $2{condition} "
        f"ORDER BY at DESC, id DESC LIMIT ${len(params)}",
        *params,
    )
