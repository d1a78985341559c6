"""An event as clients see it, in the API and in every delivery (decisions 10)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["event_body", "event_view"]


def event_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """The stored event with its `sequence`: one more than the company's previous event in this
    mode, so a receiver can tell from the events alone whether it missed one."""
    view: dict[str, Any] = orjson.loads(row["data"])
    view["sequence"] = row["sequence"]
    return view


def event_body(row: Mapping[str, Any]) -> bytes:
    """The bytes a delivery POSTs (and signs)."""
    return orjson.dumps(event_view(row))
