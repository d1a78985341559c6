"""Sign-in attempts (logins) as rows: the statements the sign-in use cases commit (decisions 2).

This is the sign-in flow's one write API: it has no actor of its own (a login belongs to no
company yet), so `mps.http.signin` hands each of these statements to the writer
(`services.actors.commit`) and writes nothing else.

Every check on a code is a condition of the statement that spends or counts it, so the checks
hold however many requests race on one login, on any node.
"""

from __future__ import annotations

from typing import Any

from mps.persistence.statements import Row, Statement, insert

__all__ = ["count_failed_code", "login_insert", "replace_code", "spend_code"]


def login_insert(row: Row) -> Statement:
    return insert("logins", row)


def replace_code(login_id: str, code_hash: str, code_expires_at: str) -> Statement:
    """A fresh code for the login; the count of wrong codes is kept (a new code does not reset
    it)."""
    return Statement(
        "UPDATE logins SET code_hash = $1, code_expires_at = $2 WHERE id = $3",
        (code_hash, code_expires_at, login_id),
    )


def count_failed_code(login_id: str, max_failed: int) -> Statement:
    """One more wrong code, unless the login is spent or has no tries left."""
    return Statement(
        "UPDATE logins SET failed_attempts = failed_attempts + 1 "
        "WHERE id = $1 AND consumed_at IS NULL AND failed_attempts < $2",
        (login_id, max_failed),
    )


def spend_code(
    login_id: str, code_hash: str, now: str, max_failed: int, company_id: str | None
) -> Statement:
    """Consume the code if it is right, unexpired and the login has tries left, and, when a
    company is named, only if the login's user is a member of it. Returns the login's
    `user_id`, `company_id`, `email` and the company a sign-up will create
    (`signup_company_name`, `signup_owner_name`, NULL for other logins); no row when any
    condition failed.

    A sign-up's code stays spendable, within its expiry, until its company exists: the company
    is made after the spend, and should that fail (a fault, a shard moving), the person's retry
    with the same code makes it rather than finding the code used."""
    sql = (
        "UPDATE logins SET consumed_at = $1 WHERE id = $2 AND (consumed_at IS NULL OR "
        "(signup_company_name IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM companies c WHERE c.id = logins.company_id))) "
        "AND failed_attempts < $3 AND code_hash = $4 AND code_expires_at > $1"
    )
    params: tuple[Any, ...] = (now, login_id, max_failed, code_hash)
    if company_id is not None:
        sql += (
            " AND EXISTS (SELECT 1 FROM members m "
            "WHERE m.user_id = logins.user_id AND m.company_id = $5)"
        )
        params += (company_id,)
    returning = " RETURNING user_id, company_id, email, signup_company_name, signup_owner_name"
    return Statement(sql + returning, params)
