"""Events (decisions 10): the company's event log for this mode (all of it, or the events about
one object), an event's deliveries, and replaying one."""

from __future__ import annotations

from typing import Any

from mps.actors.company import RecordDeliveries
from mps.domain.ids import new_id
from mps.domain.webhooks import known_event_type
from mps.errors import FieldError
from mps.http.pagination import PAGE_FIELDS, PAGE_QUERY
from mps.http.replies import Page, Resource
from mps.http.resources import EVENT, EVENT_FIELDS, WEBHOOK_DELIVERY, page, resource
from mps.http.routes._scoped import one_in_mode, page_in_mode
from mps.http.routes.payments import DATE_RANGE, range_filter
from mps.http.routing import Call, RouteFamily
from mps.http.schema import Array, Obj, Str
from mps.persistence.queries import events as q
from mps.persistence.queries import webhooks as webhook_q
from mps.persistence.statements import Row
from mps.representations.events import event_view
from mps.representations.webhooks import delivery_view

__all__ = ["ROUTES"]

# A prefixed id (decisions 0): letters, an underscore, letters and digits.
OBJECT_ID = r"[a-z]+_[0-9A-Za-z]+"


def _known_type(query: dict[str, Any]) -> list[FieldError]:
    # An unknown type would only ever answer an empty page, as a typo does.
    event_type = query.get("type")
    if event_type is not None and not known_event_type(event_type.lower()):
        return [FieldError("type", "is not an event type (see the webhook event catalog)")]
    return []


async def list_events(call: Call) -> Page:
    start, end = range_filter(call.query)
    event_type = call.query.get("type")
    return await page_in_mode(
        call,
        call.merchant,
        q.list_events,
        event_view,
        event_type=event_type.lower() if event_type else None,
        created_from=start,
        created_to=end,
        mentioning=call.query.get("objectId"),
    )


async def _event(call: Call) -> Row:
    return await one_in_mode(call, call.merchant, q.event, "No such event")


async def get_event(call: Call) -> Resource:
    return Resource(event_view(await _event(call)))


async def event_deliveries(call: Call) -> Page:
    event = await _event(call)
    return await page_in_mode(
        call, call.merchant, webhook_q.deliveries_of_event, delivery_view, event_id=event["id"]
    )


async def replay_event(call: Call) -> Resource:
    """A new delivery of the event to each target subscribed now (decisions 10)."""
    event = await _event(call)
    services = call.services
    deliveries = services.webhooks.deliveries
    rows = await deliveries.targets(event, f"replay:{new_id('whd')}")
    view = event_view(event)

    def present(replayed: tuple[Row, ...]) -> Resource:
        return Resource({**view, "deliveries": [delivery_view(r) for r in replayed]})

    await services.shards.ask_company(
        call.merchant.company_id,
        RecordDeliveries(tuple(rows), idempotency=call.idempotent(present)),
    )
    await deliveries.publish_first_attempts(rows)
    return present(tuple(rows))


_events = RouteFamily("events", read="settings:read", write="settings:write")

ROUTES = [
    _events.get(
        "/merchant/events",
        list_events,
        "The company's events in this mode, newest first (kept 30 days)",
        query=Obj(
            {
                **PAGE_FIELDS,
                "type": Str(min_length=1, max_length=100, description="Only events of this type."),
                "objectId": Str(
                    max_length=64,
                    pattern=OBJECT_ID,
                    message="must be an id such as pay_…",
                ),
                **DATE_RANGE,
            },
            rules=[_known_type],
        ),
        response=page(EVENT),
    ),
    _events.get("/merchant/events/{id}", get_event, "An event", response=resource(EVENT)),
    _events.get(
        "/merchant/events/{id}/deliveries",
        event_deliveries,
        "The event's deliveries (to each endpoint and each replay), newest first",
        query=PAGE_QUERY,
        response=page(WEBHOOK_DELIVERY),
    ),
    _events.post(
        "/merchant/events/{id}/replay",
        replay_event,
        "Deliver an event again to every endpoint subscribed to it now",
        response=resource({**EVENT_FIELDS, "deliveries": Array(WEBHOOK_DELIVERY)}),
    ),
]
