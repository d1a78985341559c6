"""Time as the contract writes it: ISO 8601 UTC with milliseconds and `Z`.

Every instant the service holds lies within the years 0001 to 9999 in UTC: what `datetime` can
represent, and what the fixed-width stored form can write. Text naming an instant outside that
range is refused with ValueError, like any other text that is not a date.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """2026-11-22T04:38:00.123Z; fixed width (years before 1000 keep their leading zeros), so
    stored strings also sort by time."""
    utc = moment.astimezone(UTC).replace(tzinfo=None)
    return utc.isoformat(timespec="milliseconds") + "Z"


def parse_iso(text: str) -> datetime:
    """Parse an ISO date or timestamp; a date means its first millisecond, a naive time is UTC."""
    if len(text) == 10:
        day = date.fromisoformat(text)
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError as exc:
        # 0001-01-01T00:00+01:00 is in year 0 in UTC, 9999-12-31T23:00-02:00 in year 10000.
        msg = "is outside the years 0001 to 9999 in UTC"
        raise ValueError(msg) from exc


def range_end(text: str) -> datetime:
    """The last millisecond a `to` bound includes: a date means its whole day."""
    if len(text) == 10:
        day = date.fromisoformat(text)
        # Built directly rather than as the next midnight less a millisecond: 9999-12-31 has no
        # next day.
        return datetime(day.year, day.month, day.day, 23, 59, 59, 999_000, tzinfo=UTC)
    return parse_iso(text)
