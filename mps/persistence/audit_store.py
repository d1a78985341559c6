"""Audit entries as rows: the insert the company actor commits with each audited change, the
mapping back, and the chain's head its actor loads when it activates."""

from __future__ import annotations

import orjson

from mps.domain.audit import AuditContext, AuditEntry, AuditHead
from mps.persistence.database import Database
from mps.persistence.statements import Row, Statement, insert

__all__ = ["entry_from_row", "entry_insert", "load_head"]


def entry_insert(company_id: str, entry: AuditEntry) -> Statement:
    """Fails its unit when the company's chain already has an entry with this number (a fork
    that cannot happen while one actor appends, refused should it ever)."""
    return insert(
        "audit_entries",
        {
            "id": entry.id,
            "company_id": company_id,
            "seq": entry.seq,
            "at": entry.at,
            "actor_type": entry.context.actor_type,
            "actor_id": entry.context.actor_id,
            "action": entry.action,
            "target_type": entry.target_type,
            "target_id": entry.target_id,
            "details": orjson.dumps(entry.details, option=orjson.OPT_SORT_KEYS).decode(),
            "ip": entry.context.ip,
            "request_id": entry.context.request_id,
            "prev_hash": entry.prev_hash,
            "hash": entry.hash,
        },
    )


def entry_from_row(row: Row) -> AuditEntry:
    return AuditEntry(
        id=row["id"],
        at=row["at"],
        action=row["action"],
        context=AuditContext(row["actor_type"], row["actor_id"], row["ip"], row["request_id"]),
        target_type=row["target_type"],
        target_id=row["target_id"],
        details=orjson.loads(row["details"]),
        seq=row["seq"],
        prev_hash=row["prev_hash"],
        hash=row["hash"],
    )


async def load_head(db: Database, company_id: str) -> AuditHead:
    row = await db.fetchrow(
        "SELECT seq, hash FROM audit_entries WHERE company_id = $1 ORDER BY seq DESC LIMIT 1",
        company_id,
    )
    return AuditHead() if row is None else AuditHead(int(row["seq"]), row["hash"])
