"""Identity verification as rows: documents, reviews and the operator's requests, and the
statements the company actor commits. Every statement names the company."""

from __future__ import annotations

from typing import Any

import orjson

from mps.domain.ids import new_id
from mps.domain.kyc import KycDocument, Review
from mps.persistence.rows import from_row, to_row
from mps.persistence.statements import Row, Statement, insert

__all__ = [
    "document_from_row",
    "document_insert",
    "documents_decided",
    "operator_request_done",
    "operator_request_insert",
    "review_insert",
]


def document_from_row(row: Row) -> KycDocument:
    return from_row(KycDocument, row, size_bytes=int(row["size_bytes"]))


def document_insert(document: KycDocument) -> Statement:
    return insert("kyc_documents", to_row(document))


def documents_decided(company_id: str, review: Review, now: str) -> Statement:
    """Every PENDING document of the review's mode takes its outcome."""
    status = "ACCEPTED" if review.status == "VERIFIED" else "REJECTED"
    return Statement(
        "UPDATE kyc_documents SET status = $1, reviewed_at = $2 "
        "WHERE company_id = $3 AND mode = $4 AND status = 'PENDING'",
        (status, now, company_id, review.mode),
    )


def review_insert(company_id: str, review: Review, now: str) -> Statement:
    return insert(
        "kyc_reviews",
        {
            "id": new_id("kyr"),
            "company_id": company_id,
            "mode": review.mode,
            "status": review.status,
            "reason": review.reason,
            "reviewed_by": review.reviewed_by,
            "reviewed_at": now,
        },
    )


def operator_request_insert(
    request_id: str, company_id: str, kind: str, payload: dict[str, Any], by: str, now: str
) -> Statement:
    return insert(
        "operator_requests",
        {
            "id": request_id,
            "company_id": company_id,
            "kind": kind,
            "payload": orjson.dumps(payload).decode(),
            "requested_by": by,
            "requested_at": now,
            "done_at": None,
            "outcome": None,
        },
    )


def operator_request_done(request_id: str, outcome: dict[str, Any], now: str) -> Statement:
    """Marks the request done once; a second node's attempt (a shard that moved) matches no
    row and changes nothing."""
    return Statement(
        "UPDATE operator_requests SET done_at = $1, outcome = $2 WHERE id = $3 AND done_at IS NULL",
        (now, orjson.dumps(outcome).decode(), request_id),
        expect_rows=1,
    )
