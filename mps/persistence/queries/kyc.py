"""Identity-verification reads: a company's documents and latest review, scoped to one company
and mode in the SQL itself; and, for the node that owns them, the operator's open requests and
the documents' storage keys (the orphan sweep)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from mps.domain.kyc import KycDocument
from mps.persistence.database import Database
from mps.persistence.kyc_store import document_from_row
from mps.persistence.queries.paging import (
    PageRequest,
    Where,
    read_one_in_mode,
    read_page,
)
from mps.persistence.queries.shards import owned_companies
from mps.persistence.statements import placeholders

__all__ = [
    "OperatorRequest",
    "count_documents",
    "get_document",
    "known_keys",
    "latest_review",
    "list_documents",
    "open_requests",
    "operator_request",
]


async def get_document(
    db: Database, company_id: str, mode: str, document_id: str
) -> KycDocument | None:
    return await read_one_in_mode(
        db, "SELECT * FROM kyc_documents", company_id, mode, document_id, document_from_row
    )


async def list_documents(
    db: Database, company_id: str, mode: str, page: PageRequest, *, status: str | None = None
) -> tuple[list[KycDocument], str | None]:
    where = Where.in_mode(company_id, mode)
    where = where.compare("status", status)
    return await read_page(db, "SELECT * FROM kyc_documents", where, page, document_from_row)


async def count_documents(db: Database, company_id: str, mode: str) -> int:
    row = await db.fetchrow(
        "SELECT COUNT(*) AS n FROM kyc_documents WHERE company_id = $1 AND mode = $2",
        company_id,
        mode,
    )
    return int(row["n"]) if row is not None else 0


async def latest_review(db: Database, company_id: str, mode: str) -> dict[str, Any] | None:
    row = await db.fetchrow(
        "SELECT status, reason, reviewed_at FROM kyc_reviews WHERE company_id = $1 AND mode = $2 "
        "ORDER BY reviewed_at DESC, id DESC LIMIT 1",
        company_id,
        mode,
    )
    return dict(row) if row is not None else None


class OperatorRequest:
    __slots__ = ("company_id", "id", "kind", "payload", "requested_by")

    def __init__(self, row: dict[str, Any]) -> None:
        self.id: str = row["id"]
        self.company_id: str = row["company_id"]
        self.kind: str = row["kind"]
        self.payload: dict[str, Any] = orjson.loads(row["payload"])
        self.requested_by: str = row["requested_by"]


async def open_requests(
    db: Database, shards: Sequence[int] | None, limit: int = 100
) -> list[OperatorRequest]:
    """Requests not yet carried out, oldest first, of the companies of `shards`."""
    scope = owned_companies("company_id", shards)
    if scope is None:
        return []
    rows = await db.fetch(
        f"SELECT * FROM operator_requests WHERE done_at IS NULL {scope} "
        "ORDER BY requested_at, id LIMIT $1",
        limit,
    )
    return [OperatorRequest(dict(r)) for r in rows]


async def operator_request(db: Database, request_id: str) -> dict[str, Any] | None:
    row = await db.fetchrow("SELECT * FROM operator_requests WHERE id = $1", request_id)
    return dict(row) if row is not None else None


async def known_keys(db: Database, keys: Sequence[str]) -> set[str]:
    """Which of `keys` a document row names."""
    if not keys:
        return set()
    marks = placeholders(len(keys))
    rows = await db.fetch(
        f"SELECT storage_key FROM kyc_documents WHERE storage_key IN ({marks})", *keys
    )
    return {r["storage_key"] for r in rows}
