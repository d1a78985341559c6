"""The reads that verify a credential: one round trip each, on a cache miss only."""

from __future__ import annotations

from mps.persistence.database import Database
from mps.persistence.statements import Row

__all__ = ["api_key_by_hash", "session_with_member"]


async def session_with_member(
    db: Database, session_id: str, user_id: str, company_id: str, mode: str
) -> Row | None:
    """The session, its member's role (with the scopes of a custom one) and the company's
    settings; None when any is gone."""
    return await db.fetchrow(
        "SELECT s.revoked_at, s.revoked_reason, s.expires_at, m.role_id, "
        "r.scopes AS custom_scopes, c.data "
        "FROM sessions s "
        "JOIN members m ON m.company_id = s.company_id AND m.user_id = s.user_id "
        "JOIN companies c ON c.id = s.company_id "
        "LEFT JOIN roles r ON r.id = m.role_id AND r.company_id = s.company_id "
        "WHERE s.id = $1 AND s.user_id = $2 AND s.company_id = $3 AND s.mode = $4",
        session_id,
        user_id,
        company_id,
        mode,
    )


async def api_key_by_hash(db: Database, secret_hash: str) -> Row | None:
    """The key, the company's settings, and its creator's role as it is now (with the scopes of
    a custom one): `role_id` is None when the creator is no longer a member."""
    return await db.fetchrow(
        "SELECT k.id, k.company_id, k.mode, k.type, k.scopes, k.revoked_at, k.created_by, "
        "c.data, m.role_id, r.scopes AS custom_scopes "
        "FROM api_keys k JOIN companies c ON c.id = k.company_id "
        "LEFT JOIN members m ON m.company_id = k.company_id AND m.user_id = k.created_by "
        "LEFT JOIN roles r ON r.id = m.role_id AND r.company_id = k.company_id "
        "WHERE k.secret_hash = $1",
        secret_hash,
    )
