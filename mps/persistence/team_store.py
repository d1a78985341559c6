"""Roles and memberships as rows: the statements the company actor commits for team changes,
and the custom roles it loads when it activates. Every statement names the company."""

from __future__ import annotations

import orjson

from mps.domain.scopes import Role
from mps.persistence.database import Database, IntegrityConflict
from mps.persistence.statements import Row, Statement, insert

__all__ = [
    "RoleNameTaken",
    "keys_revoke",
    "live_keys",
    "load_roles",
    "member_remove",
    "member_role",
    "role_delete",
    "role_from_row",
    "role_insert",
    "role_update",
    "sessions_revoke",
]


class RoleNameTaken(IntegrityConflict):
    """Another role of the company has this name."""


def _scopes(role: Role) -> str:
    return orjson.dumps(sorted(role.scopes)).decode()


def role_insert(company_id: str, role: Role, now: str) -> Statement:
    row = insert(
        "roles",
        {
            "id": role.id,
            "company_id": company_id,
            "name": role.name,
            "scopes": _scopes(role),
            "created_at": now,
            "updated_at": now,
        },
    )
    return Statement(row.sql, row.params, conflict_error=RoleNameTaken)


def role_update(company_id: str, role: Role, now: str) -> Statement:
    return Statement(
        "UPDATE roles SET name = $1, scopes = $2, updated_at = $3 "
        "WHERE id = $4 AND company_id = $5",
        (role.name, _scopes(role), now, role.id, company_id),
        expect_rows=1,
        conflict_error=RoleNameTaken,
    )


def role_delete(company_id: str, role_id: str) -> Statement:
    return Statement(
        "DELETE FROM roles WHERE id = $1 AND company_id = $2", (role_id, company_id), expect_rows=1
    )


def member_role(company_id: str, user_id: str, role_id: str) -> Statement:
    return Statement(
        "UPDATE members SET role_id = $1 WHERE company_id = $2 AND user_id = $3",
        (role_id, company_id, user_id),
        expect_rows=1,
    )


def member_remove(company_id: str, user_id: str) -> Statement:
    return Statement(
        "DELETE FROM members WHERE company_id = $1 AND user_id = $2",
        (company_id, user_id),
        expect_rows=1,
    )


def sessions_revoke(company_id: str, user_id: str, now: str) -> Statement:
    """End every open session of the user in the company (they are no longer a member)."""
    return Statement(
        "UPDATE sessions SET revoked_at = $1 "
        "WHERE company_id = $2 AND user_id = $3 AND revoked_at IS NULL",
        (now, company_id, user_id),
    )


def keys_revoke(company_id: str, user_id: str, now: str) -> Statement:
    """Revoke every unrevoked API key the user created in the company, of both modes (a key
    acts for its creator, who is no longer a member)."""
    return Statement(
        "UPDATE api_keys SET revoked_at = $1 "
        "WHERE company_id = $2 AND created_by = $3 AND revoked_at IS NULL",
        (now, company_id, user_id),
    )


async def live_keys(db: Database, company_id: str, user_id: str) -> list[str]:
    """The ids of the unrevoked API keys the user created in the company, oldest first."""
    rows = await db.fetch(
        "SELECT id FROM api_keys WHERE company_id = $1 AND created_by = $2 "
        "AND revoked_at IS NULL ORDER BY created_at, id",
        company_id,
        user_id,
    )
    return [str(r["id"]) for r in rows]


def role_from_row(row: Row) -> Role:
    return Role(row["id"], row["name"], frozenset(orjson.loads(row["scopes"])), builtin=False)


async def load_roles(db: Database, company_id: str) -> dict[str, Role]:
    rows = await db.fetch("SELECT id, name, scopes FROM roles WHERE company_id = $1", company_id)
    return {r["id"]: role_from_row(r) for r in rows}
