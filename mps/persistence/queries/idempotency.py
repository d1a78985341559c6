"""Stored responses of Idempotency-Keys (decisions 16): the lookup and the guarded insert."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from mps.errors import KeyAlreadyStored
from mps.persistence.database import Database
from mps.persistence.statements import Row, Statement, placeholders

__all__ = ["live_response", "replace_body", "store_response"]


async def live_response(db: Database, scope: str, key: str, now: str) -> Row | None:
    """The response stored under the key, unless it has expired."""
    return await db.fetchrow(
        "SELECT * FROM idempotency_keys WHERE company_id = $1 AND idem_key = $2 "
        "AND expires_at > $3",
        scope,
        key,
        now,
    )


def store_response(row: Mapping[str, Any]) -> list[Statement]:
    """Store the response under its key, replacing only an expired one (housekeeping deletes
    those late).

    When the key still holds a live response the upsert changes nothing and returns no row, and
    the unit fails with `KeyAlreadyStored`: two requests under one key can never both commit
    what they did. It returns the key it stored (`keyed_by`), so that a batch of them goes to the
    server as one statement, each still checked for its one row.
    """
    columns = tuple(row)
    return [
        Statement(
            _store_sql(columns),
            tuple(row.values()),
            expect_rows=1,
            stale_error=KeyAlreadyStored,
            keyed_by=columns.index("idem_key"),
        )
    ]


def replace_body(scope: str, key: str, fingerprint: str, body: str) -> Statement:
    """Replace the stored (sealed) body of the key's response: for a route that learns after
    its commit what its answer says (how the email about the change went), so that the first
    answer and every replay stay the same bytes."""
    return Statement(
        "UPDATE idempotency_keys SET body = $1 "
        "WHERE company_id = $2 AND idem_key = $3 AND fingerprint = $4",
        (body, scope, key, fingerprint),
    )


@functools.lru_cache(maxsize=16)
def _store_sql(columns: tuple[str, ...]) -> str:
    # Made for every request under a key, always from the same columns: built once.
    marks = placeholders(len(columns))
    replaced = ", ".join(
        f"{c} = excluded.{c}" for c in columns if c not in ("company_id", "idem_key")
    )
    return (
        f"INSERT INTO idempotency_keys ({', '.join(columns)}) VALUES ({marks}) "
        f"ON CONFLICT (company_id, idem_key) DO UPDATE SET {replaced} "
        "WHERE idempotency_keys.expires_at <= excluded.created_at RETURNING idem_key"
    )
