"""What a handler returns; `mps.http.render` turns it into a response for the negotiated version."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Aggregate", "Page", "Reply", "Resource"]


@dataclass(frozen=True, slots=True)
class Resource:
    """One resource: its fields at top level next to ok and requestId."""

    fields: dict[str, Any]
    status: int = 200


@dataclass(frozen=True, slots=True)
class Page:
    """A cursor-paginated list, newest first."""

    items: list[dict[str, Any]]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class Aggregate:
    """Stats, balances and timelines: `{ok, requestId, data}` without a cursor."""

    data: Any


Reply = Resource | Page | Aggregate
