"""`GET /merchant/events?objectId=`: the events about one object, as a payment's detail in the
dashboard shows them (its own events and its refunds'), on both database backends; and
`GET /merchant/events/{id}/deliveries`: each event's deliveries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.bootstrap import Overrides
from mps.domain.clock import utcnow
from tests.helpers import (
    Member,
    assert_envelope,
    create_payment,
    eventually,
    pending_payment,
    sign_up,
)
from tests.money import owner_with_paid_payment, refund
from tests.receiver import Receiver

pytestmark = pytest.mark.both_backends


async def _events(
    client: TestClient[Any, Any], member: Member, **params: str
) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/merchant/events", params=params, headers=member.headers)
    body = await response.json()
    assert response.status == 200, body
    found: list[dict[str, Any]] = body["data"]
    return found


async def test_a_payments_events_are_its_own_and_its_refunds_and_no_other_payments(
    client: TestClient[Any, Any],
) -> None:
    # given a paid payment refunded in part, and another payment of the same company
    member, paid = await owner_with_paid_payment(client, "2500")
    refunded = await refund(client, member, paid["id"], "1000")
    assert refunded.status == 201, await refunded.text()
    other = await create_payment(client, member)

    # when the events are listed by each payment's id
    of_paid = await _events(client, member, objectId=paid["id"])
    of_other = await _events(client, member, objectId=other["id"])

    # then each list holds only the events that name that payment, newest first
    assert [e["type"] for e in of_paid] == [
        "refund.created",
        "payment.completed",
        "payment.created",
    ]
    assert of_paid[0]["data"]["object"]["paymentId"] == paid["id"]
    assert all(e["data"]["object"]["id"] == paid["id"] for e in of_paid[1:])
    assert [e["type"] for e in of_other] == ["payment.created"]
    assert of_other[0]["data"]["object"]["id"] == other["id"]


async def test_the_object_filter_pages_by_cursor_and_combines_with_type(
    client: TestClient[Any, Any],
) -> None:
    # given a paid payment with three events
    member, paid = await owner_with_paid_payment(client, "2500")
    assert (await refund(client, member, paid["id"], "500")).status == 201

    # when its events are read two at a time, and only its completion
    first = await client.get(
        "/api/v1/merchant/events",
        params={"objectId": paid["id"], "limit": "2"},
        headers=member.headers,
    )
    page = await first.json()
    rest = await _events(client, member, objectId=paid["id"], cursor=page["nextCursor"])
    completed = await _events(client, member, objectId=paid["id"], type="payment.completed")

    # then the pages hold the three in order, and the type filter narrows the same set
    assert page["hasMore"] is True and len(page["data"]) == 2
    assert [e["type"] for e in page["data"] + rest] == [
        "refund.created",
        "payment.completed",
        "payment.created",
    ]
    assert [e["type"] for e in completed] == ["payment.completed"]


async def test_an_underscore_matches_only_itself_and_a_malformed_id_is_refused(
    client: TestClient[Any, Any],
) -> None:
    # given a payment whose description would match `shop_today` if `_` were a wildcard
    member, payment = await pending_payment(client, description="shopXtoday")

    # when events are asked for that look-alike, for an unknown id and for a malformed one
    alike = await _events(client, member, objectId="shop_today")
    unknown = await _events(client, member, objectId="pay_" + "0" * 24)
    exact = await _events(client, member, objectId=payment["id"])
    malformed = await client.get(
        "/api/v1/merchant/events",
        params={"objectId": '"%'},
        headers=member.headers,
    )

    # then neither finds anything, the payment's own id finds its event, and the malformed
    # one is refused with the field named
    assert alike == [] and unknown == []
    assert [e["type"] for e in exact] == ["payment.created"]
    body = await malformed.json()
    assert_envelope(body, 400)
    assert [e["field"] for e in body["errors"]] == ["objectId"]


async def test_an_events_deliveries_list_each_delivery_and_replay_of_it_alone(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    async with Receiver() as receiver:
        # given an endpoint for every event, and two payments whose creation it was sent
        client: TestClient[Any, Any] = await aiohttp_client(
            make_app(Overrides(clock=utcnow), webhook_retry_scale=0.0001)
        )
        member = await sign_up(client)
        created = await client.post(
            "/api/v1/merchant/webhooks",
            json={"url": receiver.url("/hooks"), "events": ["*"]},
            headers=member.headers,
        )
        assert created.status == 201, await created.text()
        endpoint = (await created.json())["id"]
        first = await create_payment(client, member)
        await create_payment(client, member)
        event = (await _events(client, member, objectId=first["id"]))[0]
        path = f"/api/v1/merchant/events/{event['id']}/deliveries"

        async def delivered(count: int) -> list[dict[str, Any]]:
            response = await client.get(path, headers=member.headers)
            assert response.status == 200, await response.text()
            rows: list[dict[str, Any]] = (await response.json())["data"]
            done = [r for r in rows if r["status"] == "SUCCEEDED"]
            return rows if len(done) == count else []

        # when its delivery has succeeded, and the event is replayed
        before = await eventually(lambda: delivered(1), what="the first delivery")
        replayed = await client.post(
            f"/api/v1/merchant/events/{event['id']}/replay", headers=member.headers
        )
        assert replayed.status == 200, await replayed.text()
        after = await eventually(lambda: delivered(2), what="the replay's delivery")
        unknown = await client.get(
            "/api/v1/merchant/events/evt_000000000000000000000000/deliveries",
            headers=member.headers,
        )

    # then the event's deliveries are its own (newest first: the replay), to the endpoint
    assert [d["eventId"] for d in before] == [event["id"]]
    assert [d["eventId"] for d in after] == [event["id"], event["id"]]
    assert {d["endpointId"] for d in after} == {endpoint}
    assert after[1]["id"] == before[0]["id"]
    assert [d["replay"] for d in after] == [True, False]
    assert_envelope(await unknown.json(), 404)
