"""How the hosted pages write a date: one form for every page, so an invitation's expiry and an
invoice's due date read alike."""

from __future__ import annotations

from datetime import date

__all__ = ["day_text"]

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def day_text(text: str) -> str:
    """'2026-03-05' or '2026-03-05T10:00:00.000Z' -> '5 Mar 2026'; the same in every locale, and
    unambiguous where 03/05 would not be. Text that is no date is shown as it is."""
    try:
        day = date.fromisoformat(text[:10])
    except ValueError:
        return text
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"
