"""Stored responses of Idempotency-Keys (decisions 16): the lookup and the guarded insert."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mps.errors import KeyAlreadyStored
from mps.persistence.database import Database
from mps.persistence.statements import Row, Statement, insert

__all__ = ["live_response", "store_response"]


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

    When the key still holds a live response the insert breaks the key's uniqueness and the unit
    fails with `KeyAlreadyStored`: two requests under one key can never both commit what they
    did. (A plain insert, rather than an upsert whose guard shows only in a row count, so that a
    batch of them can go to the server as one statement.)
    """
    return [
        Statement(
            "DELETE FROM idempotency_keys WHERE company_id = $1 AND idem_key = $2 "
            "AND expires_at <= $3",
            (row["company_id"], row["idem_key"], row["created_at"]),
        ),
        Statement(
            insert("idempotency_keys", row).sql,
            tuple(row.values()),
            conflict_error=KeyAlreadyStored,
        ),
    ]
