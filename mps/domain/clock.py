"""Time as the contract writes it: ISO 8601 UTC with milliseconds and `Z`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """2026-11-22T04:38:00.123Z; fixed width, so stored strings also sort by time."""
    return (
        moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


def parse_iso(text: str) -> datetime:
    """Parse an ISO date or timestamp; a date means its first millisecond, a naive time is UTC."""
    if len(text) == 10:
        day = date.fromisoformat(text)
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def range_end(text: str) -> datetime:
    """The last millisecond a `to` bound includes: a date means its whole day."""
    if len(text) == 10:
        return parse_iso(text) + timedelta(days=1) - timedelta(milliseconds=1)
    return parse_iso(text)
