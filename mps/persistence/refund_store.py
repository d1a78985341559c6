"""Refunds as rows: the mapping both ways, the statements their payment's actor commits, and the
events that report them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from mps.domain.refunds import Refund
from mps.persistence.database import Database
from mps.persistence.outbox import event_insert, event_row
from mps.persistence.statements import Row, Statement, insert, versioned_update

__all__ = [
    "pending_refunds",
    "refund_events",
    "refund_from_row",
    "refund_insert",
    "refund_update",
]


def refund_from_row(row: Row) -> Refund:
    return Refund(
        id=row["id"],
        company_id=row["company_id"],
        mode=row["mode"],
        payment_id=row["payment_id"],
        version=row["version"],
        status=row["status"],
        amount_minor=row["amount_minor"],
        currency=row["currency"],
        reason=row["reason"],
        failure_reason=row["failure_reason"],
        from_pending_minor=row["from_pending_minor"],
        process_after=row["process_after"],
        completed_at=row["completed_at"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _columns(refund: Refund) -> dict[str, Any]:
    return {
        "status": refund.status,
        "failure_reason": refund.failure_reason,
        "completed_at": refund.completed_at,
        "updated_at": refund.updated_at,
    }


def refund_insert(refund: Refund) -> Statement:
    return insert(
        "refunds",
        {
            "id": refund.id,
            "company_id": refund.company_id,
            "mode": refund.mode,
            "payment_id": refund.payment_id,
            "version": refund.version,
            "amount_minor": refund.amount_minor,
            "currency": refund.currency,
            "reason": refund.reason,
            "from_pending_minor": refund.from_pending_minor,
            "process_after": refund.process_after,
            "created_at": refund.created_at,
            **_columns(refund),
        },
    )


def refund_update(before: Refund, after: Refund) -> Statement:
    return versioned_update("refunds", "id", after.id, before.version, _columns(after))


async def pending_refunds(db: Database, company_id: str, payment_id: str) -> list[Refund]:
    """The payment's PENDING refunds, for its actor's activation."""
    rows = await db.fetch(
        "SELECT * FROM refunds WHERE payment_id = $1 AND company_id = $2 AND status = 'PENDING'",
        payment_id,
        company_id,
    )
    return [refund_from_row(row) for row in rows]


def refund_events(
    refund: Refund, types: Iterable[str], obj: dict[str, Any]
) -> tuple[list[Statement], list[dict[str, Any]]]:
    """The outbox inserts for the refund's events, each carrying `obj` (the refund as the API
    shows it, rendered by the caller), and the bodies a client will see."""
    rows = [
        event_row(
            company_id=refund.company_id,
            mode=refund.mode,
            event_type=event_type,
            created_at=refund.updated_at,
            obj=obj,
        )
        for event_type in types
    ]
    return [event_insert(r) for r in rows], [orjson.loads(r["data"]) for r in rows]
