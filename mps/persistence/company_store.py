"""A company, its members, sessions and API keys as rows: the statements the company actor
commits. Every statement names the company, so no write can reach another tenant's rows."""

from __future__ import annotations

from typing import Any

import orjson

from mps.domain.company import Company
from mps.domain.shards import shard_of
from mps.persistence.statements import Row, Statement, insert, versioned_update

__all__ = [
    "api_key_insert",
    "api_key_revoke",
    "company_insert",
    "company_update",
    "membership",
    "session_insert",
    "session_revoke",
]


def company_insert(company: Company) -> Statement:
    return insert(
        "companies",
        {
            "id": company.id,
            "version": 1,
            "name": company.name,
            "created_at": company.created_at,
            "updated_at": company.created_at,
            "data": orjson.dumps(company.data_json()).decode(),
            "shard": shard_of(company.id),
        },
    )


def company_update(before: Company, after: Company, now: str) -> Statement:
    return versioned_update(
        "companies",
        "id",
        before.id,
        before.version,
        {"updated_at": now, "name": after.name, "data": orjson.dumps(after.data_json()).decode()},
    )


def membership(
    company_id: str, user_id: str, email: str, name: str | None, role_id: str, now: str
) -> list[Statement]:
    """The user (kept as is when the email already has an account: a concurrent signup may
    have created it first) and their membership; the last statement returns the user's id.
    A user who is a member already makes the unit fail with IntegrityConflict."""
    return [
        Statement(
            "INSERT INTO users (id, email, name, created_at) VALUES ($1, $2, $3, $4) "
            "ON CONFLICT (email) DO NOTHING",
            (user_id, email, name, now),
        ),
        Statement(
            "INSERT INTO members (company_id, user_id, role_id, created_at) "
            "SELECT $1, id, $2, $3 FROM users WHERE email = $4 RETURNING user_id",
            (company_id, role_id, now, email),
            expect_rows=1,
        ),
    ]


def session_insert(row: Row) -> Statement:
    return insert("sessions", row)


def session_revoke(
    company_id: str, session_id: str, now: str, reason: str | None = None
) -> Statement:
    """`reason`: why, when the refusal of the session's token should say (0016)."""
    return Statement(
        "UPDATE sessions SET revoked_at = $1, revoked_reason = $4 WHERE id = $2 "
        "AND company_id = $3 AND revoked_at IS NULL",
        (now, session_id, company_id, reason),
    )


def api_key_insert(row: dict[str, Any]) -> Statement:
    return insert("api_keys", row)


def api_key_revoke(company_id: str, key_id: str, now: str) -> Statement:
    """Returns the key's row; none when the company has no such key."""
    return Statement(
        "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) "
        "WHERE id = $2 AND company_id = $3 RETURNING id, revoked_at",
        (now, key_id, company_id),
    )
