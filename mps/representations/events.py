"""An event as clients see it, in the API and in every delivery (decisions 10)."""

from __future__ import annotations

from typing import Any

import orjson

from mps.persistence.statements import Row

__all__ = ["event_body", "event_view"]


def event_view(row: Row) -> dict[str, Any]:
    """The stored event with its `sequence`: one more than the company's previous event in this
    mode, so a receiver can tell from the events alone whether it missed one."""
    view: dict[str, Any] = orjson.loads(row["data"])
    view["sequence"] = row["sequence"]
    return view


def event_body(row: Row) -> bytes:
    """The bytes a delivery POSTs (and signs)."""
    return orjson.dumps(event_view(row))
