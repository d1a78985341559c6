"""Checkout attempts as rows (0013_checkout_attempts.sql): what a payment's actor commits before
it asks the processor, settles with the booking of the answer, and finds again after a fault.

An attempt is committed IN_FLIGHT in a unit of its own before its authorization is asked for,
and settled by a guarded update (`WHERE status = 'IN_FLIGHT'`) in the unit that books the
answer: two bookings of one answer cannot both commit. An IN_FLIGHT row is an authorization
whose answer is not booked yet; the payment's actor settles it from the processor's memory
(`Processor.recall`) when it next activates.
"""

from __future__ import annotations

from dataclasses import dataclass

from mps.errors import StaleWrite
from mps.persistence.database import Database, IntegrityConflict
from mps.persistence.rows import from_row, to_row
from mps.persistence.statements import Row, Statement, insert

__all__ = [
    "IN_FLIGHT",
    "AttemptSettled",
    "AttemptTaken",
    "StoredAttempt",
    "attempt_by_retry_key",
    "attempt_insert",
    "attempt_settle",
    "unsettled_attempts",
    "unsettled_payments",
]

IN_FLIGHT = "IN_FLIGHT"
# How an attempt ended: booked as a payment; declined (a payment.failed was committed); never
# charged (the processor took no authorization under its key).
SETTLED = ("APPROVED", "DECLINED", "VOID")


class AttemptTaken(IntegrityConflict):
    """A new attempt's retry key is held by an attempt of the same payment that is in flight or
    was approved: the shopper's retry is that attempt, not a new one. Nothing was stored."""


class AttemptSettled(StaleWrite):
    """The attempt was settled already (by another incarnation of its payment's actor): the
    unit that would have booked it a second time rolled back."""


@dataclass(frozen=True)
class StoredAttempt:
    id: str
    company_id: str
    payment_id: str
    retry_key: str | None
    child_id: str | None
    email: str | None
    phone: str | None
    status: str
    created_at: str


def _attempt(row: Row) -> StoredAttempt:
    return from_row(StoredAttempt, row)


def attempt_insert(attempt: StoredAttempt) -> Statement:
    # Every attempt is inserted IN_FLIGHT, whatever `attempt` says.
    columns = to_row(attempt, status=IN_FLIGHT, updated_at=attempt.created_at)
    row = insert("checkout_attempts", columns)
    return Statement(row.sql, row.params, conflict_error=AttemptTaken)


def attempt_settle(attempt_id: str, status: str, now: str) -> Statement:
    """Settle an IN_FLIGHT attempt; the unit fails with AttemptSettled if it is not. An attempt
    that charged nothing gives up its retry key, so the shopper's next try is a new attempt."""
    assert status in SETTLED
    keep = "retry_key" if status == "APPROVED" else "NULL"
    return Statement(
        f"UPDATE checkout_attempts SET status = $1, updated_at = $2, retry_key = {keep} "
        "WHERE id = $3 AND status = 'IN_FLIGHT'",
        (status, now, attempt_id),
        expect_rows=1,
        stale_error=AttemptSettled,
    )


async def unsettled_attempts(db: Database, company_id: str, payment_id: str) -> list[StoredAttempt]:
    """A payment's IN_FLIGHT attempts, oldest first, for its actor's activation."""
    rows = await db.fetch(
        "SELECT * FROM checkout_attempts WHERE payment_id = $1 AND company_id = $2 "
        "AND status = 'IN_FLIGHT' ORDER BY created_at, id",
        payment_id,
        company_id,
    )
    return [_attempt(r) for r in rows]


async def attempt_by_retry_key(
    db: Database, company_id: str, payment_id: str, retry_key: str
) -> StoredAttempt | None:
    row = await db.fetchrow(
        "SELECT * FROM checkout_attempts WHERE payment_id = $1 AND retry_key = $2 "
        "AND company_id = $3",
        payment_id,
        retry_key,
        company_id,
    )
    return _attempt(row) if row is not None else None


async def unsettled_payments(db: Database, before: str, limit: int) -> list[Row]:
    """(company_id, payment_id) of payments holding an attempt IN_FLIGHT since before `before`:
    their actors are woken so that activation settles it (mps.actors.schedulers.expiry)."""
    return await db.fetch(
        "SELECT DISTINCT company_id, payment_id FROM checkout_attempts "
        "WHERE status = 'IN_FLIGHT' AND created_at < $1 ORDER BY company_id, payment_id LIMIT $2",
        before,
        limit,
    )
