"""Analytics reads: the rollup rows of one company and mode over a window of days, scoped in the
SQL itself. A window of a year is at most 366 rows per currency, read by primary key."""

from __future__ import annotations

from datetime import date

from mps.domain.analytics import COUNTERS, DayFigures
from mps.persistence.database import Database

__all__ = ["days"]


async def days(
    db: Database, company_id: str, mode: str, start: date, end: date, currency: str | None
) -> list[DayFigures]:
    """The rollup rows from `start` to `end` (both included), of one currency when given."""
    sql = (
        f"SELECT currency, day, {', '.join(COUNTERS)} FROM analytics_days "
        "WHERE company_id = $1 AND mode = $2 AND day >= $3 AND day <= $4"
    )
    params: list[object] = [company_id, mode, start.isoformat(), end.isoformat()]
    if currency is not None:
        sql += " AND currency = $5"
        params.append(currency)
    rows = await db.fetch(sql + " ORDER BY day, currency", *params)
    return [
        DayFigures(
            row["currency"],
            date.fromisoformat(row["day"]),
            {counter: int(row[counter]) for counter in COUNTERS},
        )
        for row in rows
    ]
