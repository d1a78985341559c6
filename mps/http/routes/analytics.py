"""Analytics (interface 4, decisions 13): revenue and failure series, status distribution and
conversion, per currency, read from the per-day rollups (mps.domain.analytics)."""

from __future__ import annotations

from datetime import date
from typing import Any

from mps.domain import analytics
from mps.domain.analytics import Window
from mps.domain.payments import STATUSES
from mps.errors import FieldError, ValidationFailed
from mps.http.replies import Aggregate, Resource
from mps.http.resources import named, per_currency
from mps.http.routes.payments import CURRENCY_FILTER
from mps.http.routing import Call, Handler, Route
from mps.http.schema import Array, Enum, Int, Moment, Num, Obj, Schema, Str
from mps.persistence.queries import analytics as q
from mps.representations.analytics import conversion_json, series_json, status_json

__all__ = ["ROUTES"]

_DAY_NOTE = "Analytics count whole UTC days: a timestamp stands for its day."
WINDOW = {
    "from": Moment(description=f"First day, included (default: 29 days before to). {_DAY_NOTE}"),
    "to": Moment(description=f"Last day, included (default: today, UTC). {_DAY_NOTE}"),
    "currency": CURRENCY_FILTER,
}
INTERVAL = Enum(
    list(analytics.INTERVALS),
    description="Bucket size: day, ISO week (named by its Monday) or calendar month "
    "(named by its first day). Default day.",
)


def _window(call: Call) -> Window:
    query = call.query
    start = query.get("from")
    end = query.get("to")
    today = call.services.clock().date()
    try:
        return Window.of(
            date.fromisoformat(start[:10]) if start else None,
            date.fromisoformat(end[:10]) if end else None,
            today,
        )
    except ValueError as exc:
        raise ValidationFailed([FieldError("from" if start else "to", str(exc))]) from exc


async def _rows(call: Call, start: date, end: date) -> list[analytics.DayFigures]:
    session = call.session
    return await q.days(
        call.services.database,
        session.company_id,
        session.mode,
        start,
        end,
        call.query.get("currency"),
    )


def _currencies(call: Call, rows: list[analytics.DayFigures]) -> list[str]:
    """The filter's currency, or every currency with figures in the rows, in code order."""
    wanted = call.query.get("currency")
    if wanted is not None:
        return [wanted]
    return sorted({row.currency for row in rows if any(row.counts.values())})


def _reply(call: Call, items: list[dict[str, Any]]) -> Resource | Aggregate:
    """One object for a currency filter; otherwise the per-currency list."""
    if call.query.get("currency") is not None:
        return Resource(items[0])
    return Aggregate(items)


async def revenue_series(call: Call) -> Resource | Aggregate:
    window = _window(call)
    interval = call.query.get("interval") or "day"
    rows = await _rows(call, window.start, window.end)
    found = analytics.series(rows, window, interval, _currencies(call, rows))
    return _reply(call, [series_json(currency, points) for currency, points in found.items()])


async def payment_statuses(call: Call) -> Resource | Aggregate:
    window = _window(call)
    rows = await _rows(call, window.start, window.end)
    summaries = analytics.status_summary(rows, _currencies(call, rows))
    return _reply(call, [status_json(summary) for summary in summaries])


async def conversion_rate(call: Call) -> Resource | Aggregate:
    window = _window(call)
    rows = await _rows(call, window.previous().start, window.end)
    results = analytics.conversion(rows, window, _currencies(call, rows))
    return _reply(call, [conversion_json(result) for result in results])


def _out(fields: dict[str, Schema], description: str = "") -> Obj:
    """A response object: every field present."""
    return Obj(fields, required=list(fields), description=description, allow_unknown=True)


_MONEY = Str(pattern=r"[0-9]+")  # described per field by the glossary
_DATE = Str(format="date")
SERIES = _out(
    {
        "currency": Str(),
        "series": Array(
            _out(
                {
                    "date": Str(format="date", description="The bucket's first day."),
                    "revenueMinor": Str(
                        pattern=r"[0-9]+", description="Paid in the bucket (gross)."
                    ),
                    "paymentCount": Int(description="Payments paid in the bucket."),
                    "failedCount": Int(description="Declined checkouts in the bucket."),
                    "failedVolumeMinor": Str(
                        pattern=r"[0-9]+", description="The declined checkouts' amounts."
                    ),
                }
            )
        ),
    }
)
STATUS_SUMMARY = _out(
    {
        "currency": Str(),
        "statusCounts": _out(
            dict.fromkeys(STATUSES, Int()),
            "Payments created in the window, by their current status.",
        ),
        "amountMinor": _MONEY,
        "count": Int(),
    }
)
_PERIOD = _out(
    {
        "from": _DATE,
        "to": _DATE,
        "created": Int(description="Payments created in the period."),
        "paid": Int(description="Of those, the ones paid (refunded or reversed since included)."),
        "rate": Num(minimum=0, maximum=1, description="paid / created, 0 when none were created."),
    }
)
CONVERSION = _out(
    {
        "currency": Str(),
        "current": _PERIOD,
        "previous": _PERIOD,
        "changePoints": Num(description="current.rate - previous.rate, in percentage points."),
    }
)


def _report(
    path: str, handler: Handler, summary: str, query: dict[str, Schema], name: str, item: Obj
) -> Route:
    """A GET of a per-currency report (the component `name`) on the payments of a window."""
    return Route(
        "GET",
        path,
        handler,
        summary,
        "analytics",
        scope="analytics:read",
        query=Obj(query),
        response=per_currency(named(name, item)),
    )


ROUTES = [
    _report(
        "/merchant/analytics",
        revenue_series,
        "Revenue, payment and failed-volume series",
        {**WINDOW, "interval": INTERVAL},
        "AnalyticsSeries",
        SERIES,
    ),
    _report(
        "/merchant/analytics/payments",
        payment_statuses,
        "Status distribution and volume of the payments created in a window",
        WINDOW,
        "AnalyticsStatusSummary",
        STATUS_SUMMARY,
    ),
    _report(
        "/merchant/analytics/conversion",
        conversion_rate,
        "Conversion against the prior period of equal length",
        WINDOW,
        "AnalyticsConversion",
        CONVERSION,
    ),
]
