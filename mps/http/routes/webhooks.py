"""Webhook endpoints, their deliveries, replays and recovery (decisions 10)."""

from __future__ import annotations

from typing import Any

from mps.actors.company import (
    CreateEndpoint,
    DeleteEndpoint,
    RecordDeliveries,
    RotateEndpointSecret,
    UpdateEndpoint,
)
from mps.actors.webhooks.deliveries import default_secret
from mps.domain.ids import new_id
from mps.domain.webhooks import DELIVERY_STATES, known_subscription
from mps.errors import Conflict, FieldError, ValidationFailed
from mps.http.idempotency import presented
from mps.http.pagination import PAGE_FIELDS, PAGE_QUERY, page_request
from mps.http.replies import Page, Resource
from mps.http.resources import (
    ENDPOINT_STATUS,
    WEBHOOK_ATTEMPT,
    WEBHOOK_DELIVERY,
    WEBHOOK_DELIVERY_FIELDS,
    WEBHOOK_ENDPOINT,
    WEBHOOK_ENDPOINT_FIELDS,
    deleted,
    page,
    resource,
)
from mps.http.routes._scoped import one_in_mode, page_in_mode
from mps.http.routing import Call, RouteFamily
from mps.http.schema import Array, Bool, Enum, Int, Moment, Obj, Str
from mps.http.targets import checked_url
from mps.persistence.queries import webhooks as q
from mps.persistence.statements import Row
from mps.representations.webhooks import attempt_view, delivery_view, endpoint_view

__all__ = ["ROUTES"]

# A recovery re-sends at most this many deliveries per request; `hasMore` says to ask again.
RECOVER_LIMIT = 1000


def _events_known(body: dict[str, Any]) -> list[FieldError]:
    return [
        FieldError(
            f"events[{i}]", f"{name!r} is not an event type, a family such as 'invoice.*', or '*'"
        )
        for i, name in enumerate(body.get("events") or [])
        if not known_subscription(name)
    ]


def _created(result: tuple[Row, str]) -> Resource:
    row, secret = result
    return Resource({**endpoint_view(row), "secret": secret}, 201)


def _rotated(result: tuple[Row, str]) -> Resource:
    row, secret = result
    return Resource({**endpoint_view(row), "secret": secret})


async def _endpoint(call: Call) -> Row:
    """The endpoint as stored now, or 404. A change sent to the company actor carries this copy
    to name the row and for its audit entry only: another request may change the endpoint before
    the actor's turn, so the actor builds no write from it and answers with the row as
    committed (mps.actors.company.webhooks)."""
    return await one_in_mode(call, call.session, q.endpoint, "No such webhook endpoint")


async def create_endpoint(call: Call) -> Resource:
    session, body, services = call.session, call.body, call.services
    url = checked_url(call, body["url"])
    stored = await q.count_endpoints(services.database, session.company_id, session.mode)
    idem = call.idempotent(_created)
    result = await services.shards.ask_company(
        session.company_id,
        CreateEndpoint(
            mode=session.mode,
            url=url,
            events=tuple(dict.fromkeys(body["events"])),
            description=body.get("description"),
            stored_count=stored,
            idempotency=idem,
            audit=call.audit(),
        ),
    )
    return presented(idem, result, _created)


async def list_endpoints(call: Call) -> Page:
    return await page_in_mode(call, call.session, q.list_endpoints, endpoint_view)


async def get_endpoint(call: Call) -> Resource:
    return Resource(endpoint_view(await _endpoint(call)))


async def update_endpoint(call: Call) -> Resource:
    body = call.body
    changes: dict[str, Any] = {}
    if "url" in body:
        changes["url"] = checked_url(call, body["url"])
    if "events" in body:
        changes["events"] = tuple(dict.fromkeys(body["events"]))
    if "description" in body:
        changes["description"] = body["description"]
    if "status" in body:
        changes["status"] = body["status"]
    endpoint = await _endpoint(call)
    row = await call.services.shards.ask_company(
        call.session.company_id, UpdateEndpoint(endpoint, changes, audit=call.audit())
    )
    return Resource(endpoint_view(row))


async def delete_endpoint(call: Call) -> Resource:
    endpoint = await _endpoint(call)
    row = await call.services.shards.ask_company(
        call.session.company_id, DeleteEndpoint(endpoint, call.audit())
    )
    return Resource({**endpoint_view(row), "deleted": True})


async def rotate_secret(call: Call) -> Resource:
    endpoint = await _endpoint(call)
    idem = call.idempotent(_rotated)
    result = await call.services.shards.ask_company(
        call.session.company_id, RotateEndpointSecret(endpoint, call.audit(), idempotency=idem)
    )
    return presented(idem, result, _rotated)


async def endpoint_deliveries(call: Call) -> Page:
    endpoint = await _endpoint(call)
    rows, cursor = await q.deliveries_of_endpoint(
        call.services.database,
        call.session.company_id,
        endpoint["id"],
        call.query.get("status"),
        page_request(call.query),
    )
    return Page([delivery_view(r) for r in rows], cursor)


async def _delivery(call: Call) -> Row:
    return await one_in_mode(call, call.session, q.delivery_of_company, "No such webhook delivery")


async def get_delivery(call: Call) -> Resource:
    row = await _delivery(call)
    attempts = await q.attempts(call.services.database, row["id"])
    return Resource({**delivery_view(row), "attemptLog": [attempt_view(a) for a in attempts]})


async def _replays(call: Call, originals: list[Row], origin: str) -> list[Row]:
    """New deliveries repeating `originals` (to each one's endpoint as it is now), committed
    with the request's key and handed to the dispatcher."""
    services, session = call.services, call.session
    # Read once per endpoint: a recovery repeats up to a thousand deliveries of one.
    endpoints: dict[str, Row | None] = {}
    rows: list[Row] = []
    for original in originals:
        url = original["url"]
        endpoint_id = original["endpoint_id"]
        if endpoint_id is not None:
            if endpoint_id not in endpoints:
                endpoints[endpoint_id] = await q.endpoint(
                    services.database, session.company_id, session.mode, endpoint_id
                )
            endpoint = endpoints[endpoint_id]
            if endpoint is None:
                continue
            url = endpoint["url"]
        rows.append(services.webhooks.deliveries.replay_row(original, url, origin))
    return rows


async def replay_delivery(call: Call) -> Resource:
    original = await _delivery(call)
    rows = await _replays(call, [original], f"replay:{new_id('whd')}")
    if not rows:
        raise Conflict("The delivery's endpoint was deleted")
    services = call.services
    await services.shards.ask_company(
        call.session.company_id,
        RecordDeliveries(
            tuple(rows), idempotency=call.idempotent(lambda rs: Resource(delivery_view(rs[0])))
        ),
    )
    await services.webhooks.deliveries.publish_first_attempts(rows)
    return Resource(delivery_view(rows[0]))


async def recover(call: Call) -> Resource:
    endpoint = await _endpoint(call)
    services, body = call.services, call.body
    since = body["since"]
    until = body.get("until") or services.webhooks.deliveries.now_iso()
    if since > until:
        raise ValidationFailed([FieldError("since", "must not be after until")])
    failed = await q.failed_deliveries(
        services.database, call.session.company_id, endpoint["id"], since, until, RECOVER_LIMIT + 1
    )
    has_more = len(failed) > RECOVER_LIMIT
    failed = failed[:RECOVER_LIMIT]
    recovery = new_id("rcv")
    rows = await _replays(call, failed, f"recover:{recovery}")

    def present(_rows: Any) -> Resource:
        return Resource(
            {
                "id": recovery,
                "endpointId": endpoint["id"],
                "since": since,
                "until": until,
                "deliveries": len(rows),
                "hasMore": has_more,
            },
            202,
        )

    await services.shards.ask_company(
        call.session.company_id, RecordDeliveries(tuple(rows), idempotency=call.idempotent(present))
    )
    # The deliveries are stored; sending them is the dispatcher's background work.
    services.webhooks.in_background(services.webhooks.deliveries.publish_first_attempts(rows))
    return present(rows)


async def get_default_secret(call: Call) -> Resource:
    session, services = call.session, call.services
    secret = await default_secret(
        services.actors, services.keyring, session.company_id, session.mode
    )
    return Resource({"secret": secret, "livemode": session.mode == "live"})


_EVENTS = Array(Str(min_length=1, max_length=100), min_items=1, max_items=100)
_ENDPOINT_BODY = {
    "url": Str(min_length=1, max_length=2048),
    "events": _EVENTS,
    "description": Str(max_length=500, nullable=True),
}

_webhooks = RouteFamily("webhooks", read="settings:read", write="settings:write")

ROUTES = [
    _webhooks.post(
        "/merchant/webhooks",
        create_endpoint,
        "Register a webhook endpoint; its signing secret is shown once",
        status=201,
        body=Obj(_ENDPOINT_BODY, required=["url", "events"], rules=[_events_known]),
        response=resource({**WEBHOOK_ENDPOINT_FIELDS, "secret": Str()}),
        commits_key=True,
    ),
    _webhooks.get(
        "/merchant/webhooks",
        list_endpoints,
        "List webhook endpoints of this mode",
        query=PAGE_QUERY,
        response=page(WEBHOOK_ENDPOINT),
    ),
    # Before /merchant/webhooks/{id}, which would otherwise take "default-secret" as an id.
    _webhooks.get(
        "/merchant/webhooks/default-secret",
        get_default_secret,
        "The secret that signs deliveries to a payment's own webhookUrl",
        scope="settings:write",
        response=resource({"secret": Str(), "livemode": Bool()}),
    ),
    _webhooks.get(
        "/merchant/webhooks/deliveries/{id}",
        get_delivery,
        "A delivery, with every attempt",
        response=resource({**WEBHOOK_DELIVERY_FIELDS, "attemptLog": Array(WEBHOOK_ATTEMPT)}),
    ),
    _webhooks.post(
        "/merchant/webhooks/deliveries/{id}/replay",
        replay_delivery,
        "Send a delivery's event again, as a new delivery",
        response=resource(WEBHOOK_DELIVERY),
    ),
    _webhooks.get(
        "/merchant/webhooks/{id}",
        get_endpoint,
        "A webhook endpoint",
        response=resource(WEBHOOK_ENDPOINT),
    ),
    _webhooks.patch(
        "/merchant/webhooks/{id}",
        update_endpoint,
        "Change a webhook endpoint's URL, events, description or status",
        body=Obj(
            {**_ENDPOINT_BODY, "status": ENDPOINT_STATUS},
            rules=[
                _events_known,
                lambda b: [] if b else [FieldError("body", "name a field to change")],
            ],
        ),
        response=resource(WEBHOOK_ENDPOINT),
    ),
    _webhooks.delete(
        "/merchant/webhooks/{id}",
        delete_endpoint,
        "Delete a webhook endpoint",
        response=deleted(WEBHOOK_ENDPOINT_FIELDS),
    ),
    _webhooks.post(
        "/merchant/webhooks/{id}/rotate-secret",
        rotate_secret,
        "A new signing secret; the old one keeps signing for 24 hours",
        response=resource({**WEBHOOK_ENDPOINT_FIELDS, "secret": Str()}),
        commits_key=True,
    ),
    _webhooks.get(
        "/merchant/webhooks/{id}/deliveries",
        endpoint_deliveries,
        "The endpoint's deliveries, newest first",
        query=Obj({**PAGE_FIELDS, "status": Enum(list(DELIVERY_STATES))}),
        response=page(WEBHOOK_DELIVERY),
    ),
    _webhooks.post(
        "/merchant/webhooks/{id}/recover",
        recover,
        "Send again every delivery of the endpoint that did not succeed in a window",
        status=202,
        body=Obj(
            {"since": Moment(), "until": Moment(end_of_day=True)},
            required=["since"],
        ),
        response=resource(
            {
                "id": Str(),
                "endpointId": Str(),
                "since": Str(),
                "until": Str(),
                "deliveries": Int(),
                "hasMore": Bool(),
            }
        ),
    ),
]
