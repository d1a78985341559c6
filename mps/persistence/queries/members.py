"""Users, memberships and sign-in reads."""

from __future__ import annotations

from mps.domain.scopes import OWNER_ROLE
from mps.persistence.database import Database
from mps.persistence.statements import Row

__all__ = [
    "code_is_usable",
    "login_by_id",
    "member_view",
    "memberships",
    "owner_emails",
    "user_by_email",
]


async def user_by_email(db: Database, email: str) -> Row | None:
    return await db.fetchrow(
        "SELECT id, email, name, created_at FROM users WHERE email = $1", email
    )


async def memberships(db: Database, user_id: str) -> list[Row]:
    return await db.fetch(
        "SELECT company_id, role_id, created_at FROM members WHERE user_id = $1 "
        "ORDER BY created_at, company_id",
        user_id,
    )


async def login_by_id(db: Database, login_id: str) -> Row | None:
    return await db.fetchrow("SELECT * FROM logins WHERE id = $1", login_id)


async def code_is_usable(
    db: Database, login_id: str, code_hash: str, now: str, max_failed: int
) -> bool:
    """Whether `code_hash` is the login's current code and could still be spent at `now`."""
    found = await db.fetchval(
        "SELECT 1 FROM logins WHERE id = $1 AND consumed_at IS NULL AND failed_attempts < $2 "
        "AND code_hash = $3 AND code_expires_at > $4",
        login_id,
        max_failed,
        code_hash,
        now,
    )
    return found is not None


async def member_view(db: Database, company_id: str, user_id: str) -> Row | None:
    """The user, their company and their role in it, for /auth/me and sign-in replies."""
    return await db.fetchrow(
        "SELECT u.id AS user_id, u.email, u.name AS user_name, u.created_at AS user_created_at, "
        "c.id AS company_id, c.name AS company_name, c.created_at AS company_created_at, "
        "m.role_id, r.name AS custom_role_name "
        "FROM members m JOIN users u ON u.id = m.user_id JOIN companies c ON c.id = m.company_id "
        "LEFT JOIN roles r ON r.id = m.role_id AND r.company_id = m.company_id "
        "WHERE m.company_id = $1 AND m.user_id = $2",
        company_id,
        user_id,
    )


async def owner_emails(db: Database, company_id: str) -> list[str]:
    """The email addresses of the company's owners, for notices only they receive."""
    rows = await db.fetch(
        "SELECT u.email FROM members m JOIN users u ON u.id = m.user_id "
        "WHERE m.company_id = $1 AND m.role_id = $2 ORDER BY u.email",
        company_id,
        OWNER_ROLE,
    )
    return [str(r["email"]) for r in rows]
