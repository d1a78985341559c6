"""Audit entries as rows: the insert the company actor commits with each audited change, the
mapping back, and the chain's head its actor loads when it activates."""

from __future__ import annotations

import orjson

from mps.domain.audit import AuditContext, AuditEntry, AuditHead
from mps.errors import StaleWrite
from mps.persistence.database import Database
from mps.persistence.statements import Row, Statement, insert

__all__ = ["ChainMoved", "entry_from_row", "entry_insert", "load_head"]


class ChainMoved(StaleWrite):
    """The entry a unit's first insert names as stored is not (the unit it was linked after was
    refused, or the actor's head is not storage's): the unit is rolled back whole."""


def entry_insert(company_id: str, entry: AuditEntry, after: AuditHead | None = None) -> Statement:
    """The entry's row. With `after`, the insert is guarded: it writes only when the company's
    chain holds the entry `after` names (`after.seq` 0: when the chain is empty), and fails its
    unit with `ChainMoved` otherwise (mps.actors.company.audit). It returns the entry's id, so
    the guarded inserts of a group commit's units go to the server together, in unit order,
    each still checked for its one row (`Statement.keyed_by`). Either way the unit also fails
    when the chain already has an entry with this number (unique `(company_id, seq)`)."""
    plain = _insert(company_id, entry)
    if after is None:
        return plain
    values = plain.sql[plain.sql.index(" VALUES ") :]
    n = len(plain.params)
    if after.seq == 0:
        guard = f"NOT EXISTS (SELECT 1 FROM audit_entries WHERE company_id = ${n + 1})"
        params: tuple[object, ...] = (*plain.params, company_id)
    else:
        guard = (
            f"EXISTS (SELECT 1 FROM audit_entries WHERE company_id = ${n + 1} "
            f"AND seq = ${n + 2} AND hash = ${n + 3})"
        )
        params = (*plain.params, company_id, after.seq, after.hash)
    marks = values.removeprefix(" VALUES (").removesuffix(")")
    head = plain.sql[: plain.sql.index(" VALUES ")]
    sql = f"{head} SELECT {marks} WHERE {guard} RETURNING id"
    return Statement(sql, params, expect_rows=1, stale_error=ChainMoved, keyed_by=0)


def _insert(company_id: str, entry: AuditEntry) -> Statement:
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
