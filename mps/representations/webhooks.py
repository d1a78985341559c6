"""Webhook endpoints and deliveries as the API shows them. A secret is never part of a view: it
is added to the one response that shows it (create, rotate)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mps.representations.columns import json_array

__all__ = ["attempt_view", "delivery_view", "endpoint_view"]


def endpoint_view(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "url": row["url"],
        "description": row["description"],
        "events": json_array(row["events"]),
        "status": row["status"],
        "disabledReason": row["disabled_reason"],
        "livemode": row["mode"] == "live",
        # Until then the previous secret signs too (a second v1 in the signature header).
        "previousSecretExpiresAt": row["previous_secret_expires_at"],
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }


def delivery_view(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "eventId": row["event_id"],
        "eventType": row["event_type"],
        "endpointId": row["endpoint_id"],
        "url": row["url"],
        "status": row["status"],
        "attempts": row["attempts"],
        "nextAttemptAt": row["next_attempt_at"]
        if row["status"] in ("PENDING", "RETRYING")
        else None,
        "lastAttemptAt": row["last_attempt_at"],
        "lastStatusCode": row["last_status_code"],
        "lastError": row["last_error"],
        "replay": row["origin"] != "event",
        "livemode": row["mode"] == "live",
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }


def attempt_view(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "attempt": row["attempt"],
        "at": row["at"],
        "statusCode": row["status_code"],
        "error": row["error"],
        "durationMs": row["duration_ms"],
    }
