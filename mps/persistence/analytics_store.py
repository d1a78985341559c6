"""The analytics rollups' writes: what a payment's change adds to `analytics_days`, in the
same unit as the change (mps.domain.analytics says what counts where).

Every delta is the same upsert, so a group commit sends all of a batch's as one `executemany`,
the deltas of one row summed into one (`Statement.summed_after`).
"""

from __future__ import annotations

from mps.domain.analytics import COUNTERS, DayDelta, payment_deltas
from mps.domain.payments import Payment
from mps.persistence.statements import Statement, insert

__all__ = ["rollup_statements"]

_KEY = ("company_id", "mode", "currency", "day")
_UPSERT = (
    f"INSERT INTO analytics_days ({', '.join((*_KEY, *COUNTERS))}) "
    f"VALUES ({', '.join(f'${i}' for i in range(1, len(_KEY) + len(COUNTERS) + 1))}) "
    "ON CONFLICT (company_id, mode, day, currency) DO UPDATE SET "
    + ", ".join(f"{c} = analytics_days.{c} + excluded.{c}" for c in COUNTERS)
)


def _upsert(delta: DayDelta) -> Statement:
    counts = [delta.counts.get(counter, 0) for counter in COUNTERS]
    return Statement(
        _UPSERT,
        (delta.company_id, delta.mode, delta.currency, delta.day, *counts),
        summed_after=len(_KEY),
    )


def rollup_statements(
    before: Payment | None, after: Payment, *, declined: bool = False
) -> list[Statement]:
    """The rollup upserts of `before` becoming `after` (None: created), and the decline's own
    row when the change was a declined checkout."""
    statements = [_upsert(d) for d in payment_deltas(before, after, declined=declined)]
    if declined:
        statements.append(
            insert(
                "payment_declines",
                {
                    "id": f"{after.id}:{after.version}",
                    "payment_id": after.id,
                    "company_id": after.company_id,
                    "mode": after.mode,
                    "currency": after.currency,
                    "amount_minor": after.amount_minor,
                    "declined_at": after.updated_at,
                },
            )
        )
    return statements
