"""Outbox rows: every event is inserted by the same write unit as the change it reports."""

from __future__ import annotations

from typing import Any

import orjson

from mps.domain.ids import new_id

__all__ = ["event_row"]

API_VERSION = "v2"


def event_row(
    *, company_id: str, mode: str, event_type: str, created_at: str, obj: dict[str, Any]
) -> dict[str, Any]:
    event_id = new_id("evt")
    body = {
        "id": event_id,
        "type": event_type,
        "createdAt": created_at,
        "livemode": mode == "live",
        "apiVersion": API_VERSION,
        "data": {"object": obj},
    }
    return {
        "id": event_id,
        "company_id": company_id,
        "mode": mode,
        "type": event_type,
        "created_at": created_at,
        "data": orjson.dumps(body).decode(),
        "dispatched_at": None,
    }
