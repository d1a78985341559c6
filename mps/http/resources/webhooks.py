"""The schemas of events and of their delivery: webhook endpoints, deliveries and attempts."""

from __future__ import annotations

from mps.http.resources.common import ENDPOINT_STATUS, NULL_STR, TIME, named
from mps.http.schema import Anything, Array, Bool, Enum, Int, Map, Obj, Schema, Str

__all__ = [
    "EVENT",
    "EVENT_FIELDS",
    "WEBHOOK_ATTEMPT",
    "WEBHOOK_DELIVERY",
    "WEBHOOK_DELIVERY_FIELDS",
    "WEBHOOK_ENDPOINT",
    "WEBHOOK_ENDPOINT_FIELDS",
]

WEBHOOK_ENDPOINT_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "url": Str(),
    "description": NULL_STR,
    "events": Array(Str()),
    "status": ENDPOINT_STATUS,
    "disabledReason": NULL_STR,
    "livemode": Bool(),
    "previousSecretExpiresAt": Str(format="date-time", nullable=True),
    "createdAt": TIME,
    "updatedAt": TIME,
}


WEBHOOK_ENDPOINT = named("WebhookEndpoint", WEBHOOK_ENDPOINT_FIELDS)


WEBHOOK_DELIVERY_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "eventId": Str(),
    "eventType": Str(),
    "endpointId": NULL_STR,
    "url": Str(),
    "status": Enum(["PENDING", "SUCCEEDED", "RETRYING", "DEAD"]),
    "attempts": Int(),
    "nextAttemptAt": Str(format="date-time", nullable=True),
    "lastAttemptAt": Str(format="date-time", nullable=True),
    "lastStatusCode": Int(nullable=True),
    "lastError": NULL_STR,
    "replay": Bool(),
    "livemode": Bool(),
    "createdAt": TIME,
    "updatedAt": TIME,
}


WEBHOOK_DELIVERY = named("WebhookDelivery", WEBHOOK_DELIVERY_FIELDS)


WEBHOOK_ATTEMPT = named(
    "WebhookAttempt",
    {
        "attempt": Int(),
        "at": TIME,
        "statusCode": Int(nullable=True),
        "error": NULL_STR,
        "durationMs": Int(),
    },
    answered=False,
)


EVENT_FIELDS: dict[str, Schema] = {
    "id": Str(),
    "type": Str(),
    "createdAt": TIME,
    "livemode": Bool(),
    "apiVersion": Str(),
    "sequence": Int(description="One more than the previous event of this company and mode."),
    "data": Obj({"object": Map(values=Anything())}, required=["object"]),
}


EVENT = named("Event", EVENT_FIELDS)
