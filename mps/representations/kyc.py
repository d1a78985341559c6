"""Identity verification as clients see it (decisions 12). The storage key, the uploader and
the company are never shown."""

from __future__ import annotations

from typing import Any

from mps.domain.kyc import KycDocument

__all__ = ["document_json", "status_json"]


def document_json(document: KycDocument) -> dict[str, Any]:
    return {
        "id": document.id,
        "type": document.type,
        "status": document.status,
        "fileName": document.file_name,
        "contentType": document.content_type,
        "sizeBytes": document.size_bytes,
        "sha256": document.sha256,
        "createdAt": document.created_at,
        "reviewedAt": document.reviewed_at,
    }


def status_json(
    mode: str, status: str, review: dict[str, Any] | None, documents: int
) -> dict[str, Any]:
    return {
        "mode": mode,
        "status": status,
        "documentCount": documents,
        "reason": review["reason"] if review is not None and status == "REJECTED" else None,
        "reviewedAt": review["reviewed_at"] if review is not None else None,
    }
