"""Refunds as rows: the mapping both ways, the statements their payment's actor commits, and the
events that report them."""

from __future__ import annotations

from mps.domain.refunds import Refund
from mps.errors import StaleWrite
from mps.persistence.database import Database
from mps.persistence.rows import columns, from_row, to_row
from mps.persistence.statements import Row, Statement, placeholders, versioned_update

__all__ = [
    "RefundExceedsPayment",
    "pending_refunds",
    "refund_from_row",
    "refund_insert",
    "refund_update",
]


def refund_from_row(row: Row) -> Refund:
    return from_row(Refund, row)


# What settling a refund may change.
_CHANGING = ("status", "failure_reason", "completed_at", "updated_at")


class RefundExceedsPayment(StaleWrite):
    """A new refund's row was refused: with the payment's refunds stored and PENDING, it would
    take more than the payment has left to refund. The payment's actor decided it from memory
    that storage contradicts (a commit of unknown outcome landed after all); the unit rolled
    back whole."""


def refund_insert(refund: Refund) -> Statement:
    """The new refund's row, inserted only while what the payment has left to refund, as
    stored (collected, less refunded, less what its PENDING refunds hold), covers it: storage's
    own guard against refunding more than was collected, whatever the actor's memory held.
    Otherwise the unit fails with `RefundExceedsPayment`.

    One writer per database commits a shard's units one batch after another, and a shard's
    new owner waits for the old owner's batch (its fence), so the stored refunds this reads are
    every one that can commit before it."""
    row = to_row(refund)
    values = placeholders(len(row))
    payment, amount = len(row) + 1, len(row) + 2
    sql = (
        f"INSERT INTO refunds ({', '.join(row)}) SELECT {values} "
        f"WHERE (SELECT amount_minor - amount_refunded_minor FROM payments WHERE id = ${payment})"
        " - (SELECT COALESCE(SUM(amount_minor), 0) FROM refunds"
        f" WHERE payment_id = ${payment} AND status = 'PENDING') >= ${amount}"
    )
    return Statement(
        sql,
        (*row.values(), refund.payment_id, refund.amount_minor),
        expect_rows=1,
        stale_error=RefundExceedsPayment,
    )


def refund_update(before: Refund, after: Refund) -> Statement:
    return versioned_update("refunds", "id", after.id, before.version, columns(after, _CHANGING))


async def pending_refunds(db: Database, company_id: str, payment_id: str) -> list[Refund]:
    """The payment's PENDING refunds, for its actor's activation."""
    rows = await db.fetch(
        "SELECT * FROM refunds WHERE payment_id = $1 AND company_id = $2 AND status = 'PENDING'",
        payment_id,
        company_id,
    )
    return [refund_from_row(row) for row in rows]
