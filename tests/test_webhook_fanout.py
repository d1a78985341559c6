"""The webhook fan-out's shortcut for companies with no endpoints (mps.actors.webhooks.deliveries):
their events are not read whole, unless one is about a payment with its own webhookUrl, and an
endpoint created a moment ago gets the events committed after it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.actors.webhooks.deliveries import Deliveries
from mps.bootstrap import Overrides
from mps.domain.clock import utcnow
from mps.http.keys import SERVICES
from mps.persistence.database import Database
from mps.persistence.statements import Row
from mps.webhooks.topology import Committed, EventBatch
from tests.fakes import WrappedDatabase
from tests.helpers import Member, create_payment, sign_up
from tests.receiver import Receiver

pytestmark = pytest.mark.both_backends

# Webhook retries in milliseconds rather than minutes.
SCALE = 0.0001


class EventReads(WrappedDatabase):
    """Records the id of every event row a read by id hands back."""

    def __init__(self, real: Database) -> None:
        super().__init__(real)
        self.read_whole: list[str] = []

    async def _fetch(self, sql: str, *params: Any) -> list[Row]:
        rows = await self.real.fetch(sql, *params)
        if " FROM events WHERE id " in sql:
            self.read_whole += [str(row["id"]) for row in rows]
        return rows


@dataclass
class Shop:
    client: TestClient[Any, Any]
    member: Member
    receiver: Receiver
    reads: EventReads

    @property
    def deliveries(self) -> Deliveries:
        return self.client.app[SERVICES].webhooks.deliveries

    async def event_of(self, payment: dict[str, Any]) -> str:
        """The id of the payment's payment.created event."""
        rows = await self.client.app[SERVICES].database.fetch(
            "SELECT id, data FROM events WHERE company_id = $1 AND type = 'payment.created'",
            self.member.company_id,
        )
        [event_id] = [r["id"] for r in rows if payment["id"] in r["data"]]
        return str(event_id)

    async def fan_out(self, event_id: str) -> int:
        """Fan the event out as a consumer of its batch would; how many first attempts it
        started (none for a delivery the service's own consumer made first)."""
        batch = EventBatch((Committed(event_id, self.member.company_id, "test"),))
        return len(await self.deliveries.fan_out(batch))

    async def stored_deliveries(self, event_id: str) -> int:
        count: int = await self.client.app[SERVICES].database.fetchval(
            "SELECT COUNT(*) FROM webhook_deliveries WHERE event_id = $1", event_id
        )
        return count


@pytest.fixture
async def shop(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> AsyncIterator[Shop]:
    wrapped: list[EventReads] = []

    def wrap(real: Database) -> Database:
        wrapped.append(EventReads(real))
        return wrapped[0]

    async with Receiver() as receiver:
        app = make_app(Overrides(clock=utcnow, wrap_database=wrap), webhook_retry_scale=SCALE)
        client: TestClient[Any, Any] = await aiohttp_client(app)
        member = await sign_up(client)
        yield Shop(client, member, receiver, wrapped[0])


async def test_the_fan_out_does_not_read_the_events_of_a_company_without_endpoints(
    shop: Shop,
) -> None:
    # given a company with no webhook endpoint, and a payment it created
    payment = await create_payment(shop.client, shop.member)
    event_id = await shop.event_of(payment)

    # when the payment's event is fanned out
    made = await shop.fan_out(event_id)

    # then nothing was delivered, and the event's row never left the database
    assert made == 0
    assert await shop.stored_deliveries(event_id) == 0
    assert event_id not in shop.reads.read_whole


async def test_a_payment_with_its_own_url_gets_its_events_when_its_company_has_no_endpoints(
    shop: Shop,
) -> None:
    # given a company with no webhook endpoint, and a payment with its own webhookUrl, and one
    # whose metadata merely has a key of that name
    own = await create_payment(
        shop.client, shop.member, webhookUrl=shop.receiver.url("/own"), description="own"
    )
    named = await create_payment(
        shop.client, shop.member, customMetadata={"webhookUrl": "https://example.com/"}
    )

    # when their events are fanned out (here, and by the service's own consumer)
    own_event, named_event = await shop.event_of(own), await shop.event_of(named)
    await shop.fan_out(own_event)
    await shop.fan_out(named_event)

    # then the payment's own URL gets its event (once stored; delivered at least once, so a
    # slow answer may bring it again, but never another event), and the other payment's goes
    # nowhere
    requests = await shop.receiver.wait_for(1, path="/own")
    assert {request.event["id"] for request in requests} == {own_event}
    assert {request.event["data"]["object"]["id"] for request in requests} == {own["id"]}
    assert await shop.stored_deliveries(own_event) == 1
    assert await shop.stored_deliveries(named_event) == 0


async def test_an_endpoint_created_just_now_gets_the_events_committed_after_it(
    shop: Shop,
) -> None:
    # given a company whose event was fanned out while it had no endpoint
    before = await create_payment(shop.client, shop.member, description="before")
    assert await shop.fan_out(await shop.event_of(before)) == 0

    # when it creates an endpoint, and then a payment
    response = await shop.client.post(
        "/api/v1/merchant/webhooks",
        json={"url": shop.receiver.url("/hooks"), "events": ["payment.created"]},
        headers=shop.member.headers,
    )
    assert response.status == 201, await response.text()
    after = await create_payment(shop.client, shop.member, description="after")

    # then the endpoint gets the later payment's event (through the service's own relay and
    # fan-out), and not the earlier one's
    [request] = await shop.receiver.wait_for(1, path="/hooks")
    assert request.event["data"]["object"]["id"] == after["id"]
    assert await shop.stored_deliveries(await shop.event_of(before)) == 0
