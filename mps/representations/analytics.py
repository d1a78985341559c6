"""Analytics as clients see them (decisions 13): amounts in minor units as strings, days as ISO
dates, rates as fractions from 0 to 1 to four decimals."""

from __future__ import annotations

from typing import Any

from mps.domain.analytics import Conversion, Period, Point, StatusSummary

__all__ = ["conversion_json", "series_json", "status_json"]


def series_json(currency: str, points: list[Point]) -> dict[str, Any]:
    return {
        "currency": currency,
        "series": [
            {
                "date": point.bucket.isoformat(),
                "revenueMinor": str(point.revenue_minor),
                "paymentCount": point.payment_count,
                "failedCount": point.failed_count,
                "failedVolumeMinor": str(point.failed_volume_minor),
            }
            for point in points
        ],
    }


def status_json(summary: StatusSummary) -> dict[str, Any]:
    return {
        "currency": summary.currency,
        "statusCounts": summary.status_counts,
        "amountMinor": str(summary.amount_minor),
        "count": summary.count,
    }


def _period_json(period: Period) -> dict[str, Any]:
    return {
        "from": period.window.start.isoformat(),
        "to": period.window.end.isoformat(),
        "created": period.created,
        "paid": period.paid,
        "rate": round(period.rate, 4),
    }


def conversion_json(result: Conversion) -> dict[str, Any]:
    return {
        "currency": result.currency,
        "current": _period_json(result.current),
        "previous": _period_json(result.previous),
        "changePoints": result.change_points,
    }
