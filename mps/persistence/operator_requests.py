"""The operator's side of the operator's requests (`run.py kyc`, mps.operator): what its commands
read and the one thing they write.

The operator's command runs in a process of its own and reaches the service through its
database only (no writer actor, no broker), so it works for one process and for a cluster
alike. It writes nothing but a request row, as a unit of its own (`submit`); the node that owns
the company carries the request out through its actors (mps.actors.kyc_desk), with the event
and the audit entry, and marks it done (`kyc_store.operator_request_done`).
"""

from __future__ import annotations

from typing import Any

from mps.persistence.database import Database
from mps.persistence.kyc_store import operator_request_insert

__all__ = ["company_exists", "pending_kyc_reviews", "submit"]


async def company_exists(db: Database, company_id: str) -> bool:
    return await db.fetchrow("SELECT id FROM companies WHERE id = $1", company_id) is not None


async def submit(
    db: Database,
    request_id: str,
    company_id: str,
    kind: str,
    payload: dict[str, Any],
    by: str,
    now: str,
) -> None:
    """Write the request, not yet done, as one unit; raises what refused the unit."""
    statement = operator_request_insert(request_id, company_id, kind, payload, by, now)
    [outcome] = await db.write([[statement]])
    if isinstance(outcome, Exception):
        raise outcome


async def pending_kyc_reviews(db: Database) -> list[dict[str, Any]]:
    """Companies whose live status waits for a review: per company its `name`, how many
    `documents` are pending, the oldest one's time (`since`, the order) and the newest's
    (`latest`)."""
    rows = await db.fetch(
        "SELECT d.company_id, c.name, COUNT(*) AS documents, MIN(d.created_at) AS since, "
        "MAX(d.created_at) AS latest FROM kyc_documents d JOIN companies c ON c.id = d.company_id "
        "WHERE d.mode = 'live' AND d.status = 'PENDING' "
        "GROUP BY d.company_id, c.name ORDER BY since"
    )
    return [dict(r) for r in rows]
