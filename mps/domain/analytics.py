"""Analytics (decisions 13) as pure functions: what a payment's change adds to the per-day
rollups, and how the rollups of a window become series, status counts and conversion.

Vocabulary:
    day       a UTC calendar day, the rollups' grain; a timestamp in a range counts its day
    window    the days from `from` to `to`, both included
    bucket    a day, an ISO week (Monday first) or a calendar month, named by its first day;
              the first and last bucket of a window may be partial
    created   payments created in the window (a multi-use link is not a payment; each paid
              child of one is)
    paid      for series: payments paid on the day (gross, refunds not deducted); for
              conversion: of the payments created in the window, those that were paid
              (whatever happened to them since: refunded and reversed ones were paid)
    failed    declined checkouts, counted on the day of the decline in the payment's currency

Never blended across currencies (interface 1.5): every figure belongs to one currency.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import TYPE_CHECKING

from mps.domain.payments import STATUSES

if TYPE_CHECKING:
    from mps.domain.payments import Payment

__all__ = [
    "COUNTERS",
    "INTERVALS",
    "MAX_WINDOW_DAYS",
    "PAID_STATUSES",
    "STATUS_COUNTERS",
    "Conversion",
    "DayDelta",
    "DayFigures",
    "Window",
    "buckets",
    "conversion",
    "payment_deltas",
    "series",
    "status_summary",
]

INTERVALS = ("day", "week", "month")
# Nothing the service holds is older; the prior period of a window from here stays a real date.
EARLIEST = date(1970, 1, 1)
# Longer windows are refused (400): about three years of days is the most a chart can show.
MAX_WINDOW_DAYS = 1100
DEFAULT_WINDOW_DAYS = 30

STATUS_COUNTERS = {status: f"status_{status.lower()}" for status in STATUSES}
COUNTERS = (
    "created_count",
    "created_minor",
    "paid_count",
    "paid_minor",
    "failed_count",
    "failed_minor",
    *STATUS_COUNTERS.values(),
)
# A payment created in the window converted when it reached one of these.
PAID_STATUSES = frozenset({"PAID", "PARTIAL_REFUND", "REFUNDED", "REVERSED"})


@dataclass(frozen=True)
class DayDelta:
    """What one change adds to one rollup row (negative for a status a payment left)."""

    company_id: str
    mode: str
    currency: str
    day: str
    counts: Mapping[str, int]


def payment_deltas(before: Payment | None, after: Payment, *, declined: bool) -> list[DayDelta]:
    """The rollup changes of one payment going from `before` (None: new) to `after`.

    A multi-use link is counted for its declines only: its paid children are the payments.
    """
    deltas: dict[str, dict[str, int]] = {}

    def add(stamp: str, counter: str, value: int) -> None:
        day = deltas.setdefault(stamp[:10], {})
        day[counter] = day.get(counter, 0) + value

    counted = not after.allow_multiple
    if counted and before is None:
        add(after.created_at, "created_count", 1)
        add(after.created_at, "created_minor", after.amount_minor)
        add(after.created_at, STATUS_COUNTERS[after.status], 1)
    elif counted and before is not None and before.status != after.status:
        add(after.created_at, STATUS_COUNTERS[before.status], -1)
        add(after.created_at, STATUS_COUNTERS[after.status], 1)
    if after.paid_at is not None and (before is None or before.paid_at is None):
        add(after.paid_at, "paid_count", 1)
        add(after.paid_at, "paid_minor", after.amount_minor)
    if declined:
        add(after.updated_at, "failed_count", 1)
        add(after.updated_at, "failed_minor", after.amount_minor)
    return [
        DayDelta(after.company_id, after.mode, after.currency, day, counts)
        for day, counts in sorted(deltas.items())
        if any(counts.values())
    ]


@dataclass(frozen=True)
class Window:
    start: date
    end: date  # included

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    def previous(self) -> Window:
        """The window of equal length that ends the day before this one starts."""
        end = self.start - timedelta(days=1)
        return Window(end - timedelta(days=self.days - 1), end)

    @classmethod
    def of(cls, start: date | None, end: date | None, today: date) -> Window:
        """The window a request names: by default the last 30 days up to today; ValueError,
        saying why, when it runs backwards or is too long."""
        if end is None:
            end = max(today, start) if start is not None else today
        if end < EARLIEST:
            msg = f"the range must end on or after {EARLIEST.isoformat()}"
            raise ValueError(msg)
        if start is None:
            start = max(EARLIEST, end - timedelta(days=DEFAULT_WINDOW_DAYS - 1))
        window = cls(start, end)
        if start < EARLIEST:
            msg = f"the range must start on or after {EARLIEST.isoformat()}"
            raise ValueError(msg)
        if start > end:
            msg = "from must not be after to"
            raise ValueError(msg)
        if window.days > MAX_WINDOW_DAYS:
            msg = f"the range may span at most {MAX_WINDOW_DAYS} days"
            raise ValueError(msg)
        return window


@dataclass(frozen=True)
class DayFigures:
    """One rollup row as read: a currency's figures for one day."""

    currency: str
    day: date
    counts: Mapping[str, int]


def bucket_of(day: date, interval: str) -> date:
    if interval == "week":
        return day - timedelta(days=day.weekday())
    if interval == "month":
        return day.replace(day=1)
    return day


def buckets(window: Window, interval: str) -> list[date]:
    """The first day of every bucket that meets the window, in order."""
    found: list[date] = []
    for offset in range(window.days):
        bucket = bucket_of(window.start + timedelta(days=offset), interval)
        if not found or found[-1] != bucket:
            found.append(bucket)
    return found


def _by_currency(rows: Iterable[DayFigures]) -> dict[str, list[DayFigures]]:
    grouped: dict[str, list[DayFigures]] = {}
    for row in rows:
        grouped.setdefault(row.currency, []).append(row)
    return grouped


def _total(rows: Iterable[DayFigures], counter: str) -> int:
    return sum(row.counts.get(counter, 0) for row in rows)


@dataclass(frozen=True)
class Point:
    bucket: date
    revenue_minor: int = 0
    payment_count: int = 0
    failed_count: int = 0
    failed_volume_minor: int = 0


def series(
    rows: Sequence[DayFigures], window: Window, interval: str, currencies: Sequence[str]
) -> dict[str, list[Point]]:
    """Per currency, one point per bucket of the window, zero where nothing happened."""
    starts = buckets(window, interval)
    result: dict[str, list[Point]] = {}
    grouped = _by_currency(rows)
    for currency in currencies:
        points: dict[date, list[DayFigures]] = {start: [] for start in starts}
        for row in grouped.get(currency, []):
            points[bucket_of(row.day, interval)].append(row)
        result[currency] = [
            Point(
                start,
                revenue_minor=_total(day_rows, "paid_minor"),
                payment_count=_total(day_rows, "paid_count"),
                failed_count=_total(day_rows, "failed_count"),
                failed_volume_minor=_total(day_rows, "failed_minor"),
            )
            for start, day_rows in points.items()
        ]
    return result


@dataclass(frozen=True)
class StatusSummary:
    currency: str
    count: int
    amount_minor: int
    status_counts: dict[str, int] = field(default_factory=dict)


def status_summary(rows: Sequence[DayFigures], currencies: Sequence[str]) -> list[StatusSummary]:
    """Per currency, the payments created in the window: how many, for how much, and where
    each stands now."""
    grouped = _by_currency(rows)
    return [
        StatusSummary(
            currency,
            count=_total(grouped.get(currency, []), "created_count"),
            amount_minor=_total(grouped.get(currency, []), "created_minor"),
            status_counts={
                status: _total(grouped.get(currency, []), counter)
                for status, counter in STATUS_COUNTERS.items()
            },
        )
        for currency in currencies
    ]


@dataclass(frozen=True)
class Period:
    window: Window
    created: int
    paid: int

    @property
    def rate(self) -> float:
        return self.paid / self.created if self.created else 0.0


@dataclass(frozen=True)
class Conversion:
    currency: str
    current: Period
    previous: Period

    @property
    def change_points(self) -> float:
        """The difference of the rates in percentage points, to two decimals."""
        return round((self.current.rate - self.previous.rate) * 100, 2)


def _period(rows: Iterable[DayFigures], window: Window) -> Period:
    inside = [row for row in rows if window.start <= row.day <= window.end]
    paid = sum(_total(inside, STATUS_COUNTERS[status]) for status in PAID_STATUSES)
    return Period(window, created=_total(inside, "created_count"), paid=paid)


def conversion(
    rows: Sequence[DayFigures], window: Window, currencies: Sequence[str]
) -> list[Conversion]:
    """Per currency, the window's conversion beside that of the window of equal length before
    it; `rows` cover both."""
    grouped = _by_currency(rows)
    return [
        Conversion(
            currency,
            _period(grouped.get(currency, []), window),
            _period(grouped.get(currency, []), window.previous()),
        )
        for currency in currencies
    ]
