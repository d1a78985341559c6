"""Webhook endpoints and deliveries (decisions 10), against a real receiver on loopback.

The app runs on the real clock here: retries wait in real time, on a schedule scaled down by
MPS_WEBHOOK_RETRY_SCALE."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from standardwebhooks.webhooks import Webhook

from mps.adapters.broker import MemoryBroker
from mps.bootstrap import Overrides
from mps.config import Settings
from mps.domain.clock import iso, utcnow
from mps.domain.webhooks import RETRY_OFFSETS
from mps.http.keys import SERVICES
from mps.persistence.statements import Statement
from mps.persistence.webhook_store import delivery_insert
from mps.webhooks import verify_signature
from mps.webhooks.signing import secret_key
from mps.webhooks.topology import AttemptJob
from tests.conftest import Clock
from tests.fakes import wait_until
from tests.helpers import (
    Member,
    assert_refused,
    create_payment,
    created,
    eventually,
    sign_in,
    sign_up,
)
from tests.receiver import Receiver, Reply

# 1 min -> 6 ms ... 24 h -> 8.6 s: the whole schedule in about 13 s.
SCALE = 0.0001
DEFAULT_CONCURRENCY = Settings.webhook_concurrency


@dataclass
class Hooked:
    client: TestClient[Any, Any]
    member: Member
    receiver: Receiver

    async def endpoint(
        self,
        path: str = "/hooks",
        events: list[str] | None = None,
        answers: list[Any] | None = None,
    ) -> Any:
        """A new endpoint at the receiver's `path`, for `events` (all unless given); the
        receiver gives `answers` in turn from now on, if given."""
        body = {"url": self.receiver.url(path), "events": events or ["*"]}
        endpoint = await created(self.client, self.member, "/api/v1/merchant/webhooks", body)
        if answers is not None:
            self.receiver.answers = answers
        return endpoint

    async def get(self, path: str) -> Any:
        response = await self.client.get(f"/api/v1{path}", headers=self.member.headers)
        assert response.status == 200, await response.text()
        return await response.json()

    async def post(self, path: str, body: Any = None) -> Any:
        return await self.client.post(f"/api/v1{path}", json=body, headers=self.member.headers)

    async def deliveries(self, endpoint_id: str) -> list[dict[str, Any]]:
        page = await self.get(f"/merchant/webhooks/{endpoint_id}/deliveries")
        rows: list[dict[str, Any]] = page["data"]
        return rows

    async def settled(
        self, endpoint_id: str, count: int, within: float = 20.0
    ) -> list[dict[str, Any]]:
        """The endpoint's deliveries once `count` of them are SUCCEEDED or DEAD."""
        deadline = time.monotonic() + within
        while True:
            rows = await self.deliveries(endpoint_id)
            done = [r for r in rows if r["status"] in ("SUCCEEDED", "DEAD")]
            if len(done) >= count:
                return rows
            if time.monotonic() > deadline:
                raise AssertionError(f"deliveries not settled in time: {rows}")
            await asyncio.sleep(0.05)

    async def attempt_messages(self) -> deque[bytes]:
        """Every attempt message the broker routes from now on, in the order it routes them:
        a queue bound beside the consumers' that nobody consumes (the in-process broker keeps
        its messages, as it keeps dead letters)."""
        services = self.client.app[SERVICES]
        broker = services.broker
        assert isinstance(broker, MemoryBroker)
        queue = f"test.seen.{uuid.uuid4().hex}"
        await broker.declare(queue, services.webhooks.topology.attempts)
        return broker.parked[queue]

    async def routed(self, seen: deque[bytes], delay: float) -> None:
        """Wait until every attempt message published so far with at most `delay` seconds of
        delay is in `seen`. A sentinel published now with `delay` is routed after all of them:
        the in-process broker holds a delayed message as a timer of the event loop, which fires
        its timers in the order of their deadlines, and theirs came first. (The sentinel names
        no delivery: its consumer finds none and drops it.)"""
        services = self.client.app[SERVICES]
        sentinel = AttemptJob(f"whd_sentinel{uuid.uuid4().hex}", 1, 0, "sentinel").encode()
        await services.broker.publish(services.webhooks.topology.attempts, sentinel, delay=delay)
        await wait_until(lambda: sentinel in seen, within=10.0)


@pytest.fixture
async def hooked(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> AsyncIterator[Hooked]:
    async with Receiver() as receiver:
        app = make_app(Overrides(clock=utcnow), webhook_retry_scale=SCALE)
        client: TestClient[Any, Any] = await aiohttp_client(app)
        member = await sign_up(client)
        yield Hooked(client, member, receiver)


def _expected_signature(secret: str, timestamp: str, body: bytes) -> str:
    """HMAC-SHA256 over "{t}.{body}" with the secret's 32 bytes, computed here on its own."""
    signed = timestamp.encode() + b"." + body
    return hmac.new(secret_key(secret), signed, hashlib.sha256).hexdigest()


# -- endpoints ----------------------------------------------------------------------------------


async def test_endpoint_is_created_with_its_secret_shown_once(hooked: Hooked) -> None:
    # given a registered endpoint
    created = await hooked.endpoint(events=["payment.completed", "invoice.*"])

    # when it is read back, alone and in the list
    fetched = await hooked.get(f"/merchant/webhooks/{created['id']}")
    listed = await hooked.get("/merchant/webhooks")

    # then only the create showed the secret
    assert created["id"].startswith("whe_")
    assert created["secret"].startswith("whsec_") and len(secret_key(created["secret"])) == 32
    assert created["status"] == "enabled" and created["livemode"] is False
    assert created["events"] == ["payment.completed", "invoice.*"]
    assert "secret" not in fetched and fetched["url"] == created["url"]
    assert [e["id"] for e in listed["data"]] == [created["id"]]
    assert "secret" not in listed["data"][0]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://example.com/hooks", "events": ["*"]}, "url"),
        ({"url": "http://user:pw@example.com/hooks", "events": ["*"]}, "url"),
        ({"url": "https://example.com/hooks", "events": ["payment.exploded"]}, "events[0]"),
        ({"url": "https://example.com/hooks", "events": []}, "events"),
        ({"url": "https://example.com/hooks"}, "events"),
    ],
)
async def test_endpoint_is_refused_with_400_when_its_url_or_events_are_wrong(
    hooked: Hooked, body: dict[str, Any], field: str
) -> None:
    # when an endpoint is registered with a bad field
    response = await hooked.post("/merchant/webhooks", body)

    # then it is refused, saying which, and nothing was created
    payload = await assert_refused(response, 400, "validation_error")
    assert field in [e["field"] for e in payload["errors"]]
    assert (await hooked.get("/merchant/webhooks"))["data"] == []


async def test_endpoint_can_be_changed_disabled_and_deleted(hooked: Hooked) -> None:
    # given an endpoint
    endpoint = await hooked.endpoint()
    path = f"/api/v1/merchant/webhooks/{endpoint['id']}"
    headers = hooked.member.headers

    # when it is changed, disabled, then deleted
    changed = await hooked.client.patch(
        path, json={"events": ["payment.created"], "description": "orders"}, headers=headers
    )
    disabled = await hooked.client.patch(path, json={"status": "disabled"}, headers=headers)
    deleted = await hooked.client.delete(path, headers=headers)
    gone = await hooked.client.get(path, headers=headers)

    # then each change shows, and a deleted endpoint is gone
    assert changed.status == 200
    assert (await changed.json())["events"] == ["payment.created"]
    assert (await disabled.json())["status"] == "disabled"
    assert (await deleted.json())["deleted"] is True
    assert gone.status == 404


async def test_another_companys_endpoints_and_events_are_not_found(hooked: Hooked) -> None:
    # given an endpoint and an event of one company, and a member of another
    endpoint = await hooked.endpoint()
    await create_payment(hooked.client, hooked.member)
    event = (await hooked.get("/merchant/events"))["data"][0]
    other = await sign_up(hooked.client, "eve@example.com", "Eve Corp")

    # when the other company asks for them, or to change them
    paths = [
        ("GET", f"/api/v1/merchant/webhooks/{endpoint['id']}"),
        ("GET", f"/api/v1/merchant/webhooks/{endpoint['id']}/deliveries"),
        ("POST", f"/api/v1/merchant/webhooks/{endpoint['id']}/rotate-secret"),
        ("DELETE", f"/api/v1/merchant/webhooks/{endpoint['id']}"),
        ("GET", f"/api/v1/merchant/events/{event['id']}"),
        ("POST", f"/api/v1/merchant/events/{event['id']}/replay"),
    ]
    statuses = [
        (await hooked.client.request(method, path, headers=other.headers)).status
        for method, path in paths
    ]

    # then none of it exists for them, and their lists are empty
    assert statuses == [404] * len(paths)
    other_events = await hooked.client.get("/api/v1/merchant/events", headers=other.headers)
    assert (await other_events.json())["data"] == []


# -- delivery and signatures -------------------------------------------------------------------


async def test_delivery_is_signed_so_an_independent_hmac_and_standard_webhooks_verify_it(
    hooked: Hooked,
) -> None:
    # given an endpoint
    endpoint = await hooked.endpoint()
    secret = endpoint["secret"]

    # when a payment is created
    payment = await create_payment(hooked.client, hooked.member)
    [request] = await hooked.receiver.wait_for(1)

    # then the receiver got its payment.created event, signed over exactly the bytes sent
    event = request.event
    assert event["type"] == "payment.created"
    assert event["data"]["object"]["id"] == payment["id"]
    assert event["sequence"] == 1
    headers = request.headers
    timestamp, signature = headers["X-Service-Signature"].split(",")
    assert signature == "v1=" + _expected_signature(secret, timestamp[2:], request.body)
    assert verify_signature(request.body, headers["X-Service-Signature"], secret)
    Webhook(secret).verify(request.body, headers)
    assert headers["webhook-id"] == event["id"] == headers["X-Service-Event-Id"]
    assert headers["X-Service-Delivery-Id"].startswith("whd_")
    assert headers["X-Service-Attempt"] == "1"
    assert abs(int(timestamp[2:]) - time.time()) < 60
    [delivery] = await hooked.settled(endpoint["id"], 1)
    assert delivery["status"] == "SUCCEEDED" and delivery["attempts"] == 1


async def test_a_cookie_a_receiver_sets_is_never_sent_back(hooked: Hooked) -> None:
    # given a receiver, known by a name (cookies of a bare address are never kept anyway),
    # that answers its first delivery by setting a cookie
    response = await hooked.post(
        "/merchant/webhooks",
        {"url": f"http://localhost:{hooked.receiver.port}/hooks", "events": ["*"]},
    )
    assert response.status == 201, await response.text()
    hooked.receiver.answers = [Reply(200, headers={"Set-Cookie": "session=abc; Path=/"})]

    # when two events are delivered
    await create_payment(hooked.client, hooked.member)
    await hooked.receiver.wait_for(1)
    await create_payment(hooked.client, hooked.member)

    # then the second delivery carries no cookie
    arrived = await hooked.receiver.wait_for(2)
    assert "Cookie" not in arrived[1].headers


async def test_endpoint_receives_only_the_event_types_it_subscribed_to(hooked: Hooked) -> None:
    # given one endpoint for payment.cancelled only, one for every payment event
    await hooked.endpoint("/cancelled", ["payment.cancelled"])
    await hooked.endpoint("/payments", ["payment.*"])

    # when a payment is created, then cancelled
    payment = await create_payment(hooked.client, hooked.member)
    cancelled = await hooked.post(f"/merchant/payments/{payment['id']}/cancel")
    assert cancelled.status == 200

    # then each got what it asked for
    await hooked.receiver.wait_for(1, path="/cancelled")
    await hooked.receiver.wait_for(2, path="/payments")
    assert hooked.receiver.types("/cancelled") == ["payment.cancelled"]
    assert sorted(hooked.receiver.types("/payments")) == ["payment.cancelled", "payment.created"]


async def test_payments_own_webhook_url_gets_its_events_signed_with_the_default_secret(
    hooked: Hooked,
) -> None:
    # given a company endpoint, and a payment with its own webhookUrl
    company = await hooked.endpoint("/company")
    payment = await create_payment(
        hooked.client, hooked.member, webhookUrl=hooked.receiver.url("/own")
    )

    # when its event is delivered
    [request] = await hooked.receiver.wait_for(1, path="/own")

    # then it went to the payment's URL instead of the company's endpoint, signed with the
    # default secret
    default = (await hooked.get("/merchant/webhooks/default-secret"))["secret"]
    assert request.event["data"]["object"]["id"] == payment["id"]
    assert verify_signature(request.body, request.headers["X-Service-Signature"], default)
    # and the company's endpoint gets no delivery of it: the fan-out stores every delivery of
    # an event in one commit before it makes any first attempt, so once the POST to the
    # payment's URL arrived, a delivery to the endpoint would be stored (and only a stored
    # delivery is ever POSTed)
    assert await hooked.deliveries(company["id"]) == []
    assert hooked.receiver.at("/company") == []


async def test_rotated_secret_signs_beside_the_old_one_during_the_overlap(hooked: Hooked) -> None:
    # given an endpoint whose secret was rotated
    endpoint = await hooked.endpoint()
    rotated = await hooked.post(f"/merchant/webhooks/{endpoint['id']}/rotate-secret")
    assert rotated.status == 200
    fresh = (await rotated.json())["secret"]
    assert fresh != endpoint["secret"]

    # when an event is delivered
    await create_payment(hooked.client, hooked.member)
    [request] = await hooked.receiver.wait_for(1)

    # then the header carries both signatures, new first, and either secret verifies it
    header = request.headers["X-Service-Signature"]
    t, new, old = header.split(",")
    assert new == "v1=" + _expected_signature(fresh, t[2:], request.body)
    assert old == "v1=" + _expected_signature(endpoint["secret"], t[2:], request.body)
    Webhook(fresh).verify(request.body, request.headers)
    Webhook(endpoint["secret"]).verify(request.body, request.headers)
    assert (await rotated.json())["previousSecretExpiresAt"] is not None


# -- retries ------------------------------------------------------------------------------------


async def test_delivery_is_retried_until_the_receiver_recovers(hooked: Hooked) -> None:
    # given an endpoint whose receiver fails twice, then recovers
    endpoint = await hooked.endpoint(answers=[500, 500])

    # when an event is delivered
    await create_payment(hooked.client, hooked.member)
    requests = await hooked.receiver.wait_for(3)

    # then the third attempt succeeded, the attempts are numbered, and the log shows each answer
    [delivery] = await hooked.settled(endpoint["id"], 1)
    assert delivery["status"] == "SUCCEEDED" and delivery["attempts"] == 3
    assert [r.headers["X-Service-Attempt"] for r in requests] == ["1", "2", "3"]
    assert len({r.event["id"] for r in requests}) == 1
    detail = await hooked.get(f"/merchant/webhooks/deliveries/{delivery['id']}")
    assert [a["statusCode"] for a in detail["attemptLog"]] == [500, 500, 200]


async def test_a_retry_arriving_before_the_previous_attempt_is_recorded_waits_for_it(
    hooked: Hooked,
) -> None:
    # given a delivery made once, whose record is then put back to show no attempt yet (as it
    # is between the previous attempt's POST and its record: the retry is published first)
    endpoint = await hooked.endpoint()
    await create_payment(hooked.client, hooked.member)
    [delivery] = await hooked.settled(endpoint["id"], 1)
    services = hooked.client.app[SERVICES]
    await services.database.write(
        [
            (
                Statement(
                    "UPDATE webhook_deliveries SET status = 'RETRYING', attempts = 0 WHERE id = $1",
                    (delivery["id"],),
                ),
            )
        ]
    )
    deliveries = services.webhooks.deliveries
    now_ms = round(utcnow().timestamp() * 1000)

    # when the message for attempt 2 arrives
    await deliveries.attempt(AttemptJob(delivery["id"], 2, now_ms, endpoint["id"]))

    # then it POSTed nothing (a POST is made, and answered, within the call)
    assert len(hooked.receiver.received) == 1

    # when the previous attempt's outcome is then recorded (it failed; attempt 2 is due)
    await services.database.write(
        [
            (
                Statement(
                    "UPDATE webhook_deliveries SET attempts = 1 WHERE id = $1",
                    (delivery["id"],),
                ),
            )
        ]
    )

    # then the waiting message makes attempt 2, under its own number, and nothing was POSTed
    # under the previous attempt's number meanwhile: the message is one, put back to wait each
    # time it came too early, so any POST it made while waiting arrived before this one (and,
    # being recorded, would have ended the delivery before attempt 2)
    requests = await hooked.receiver.wait_for(2)
    assert [r.headers["X-Service-Attempt"] for r in requests] == ["1", "2"]
    [after] = await hooked.settled(endpoint["id"], 1)
    assert after["status"] == "SUCCEEDED" and after["attempts"] == 2


async def test_delivery_is_dead_after_the_last_attempt_of_the_schedule(hooked: Hooked) -> None:
    # given an endpoint whose receiver always fails
    endpoint = await hooked.endpoint()
    hooked.receiver.otherwise = Reply(500)

    # when an event is delivered
    await create_payment(hooked.client, hooked.member)

    # then after eight attempts the delivery is DEAD, parked as a dead letter
    [delivery] = await hooked.settled(endpoint["id"], 1, within=40)
    assert delivery["status"] == "DEAD" and delivery["attempts"] == 8
    assert len(hooked.receiver.received) == 8
    broker = hooked.client.app[SERVICES].broker
    parked = getattr(broker, "parked", {})
    assert any(delivery["id"].encode() in m for q in parked.values() for m in q)


async def test_gone_receiver_disables_the_endpoint_and_ends_the_delivery(hooked: Hooked) -> None:
    # given a receiver that answers 410 Gone
    endpoint = await hooked.endpoint()
    hooked.receiver.otherwise = Reply(410)

    # when an event is delivered
    await create_payment(hooked.client, hooked.member)

    # then the delivery is DEAD at once and the endpoint disabled
    [delivery] = await hooked.settled(endpoint["id"], 1)
    assert delivery["status"] == "DEAD" and delivery["attempts"] == 1
    after = await hooked.get(f"/merchant/webhooks/{endpoint['id']}")
    assert after["status"] == "disabled" and "410" in after["disabledReason"]


async def test_receivers_retry_after_is_honoured_when_longer_than_the_schedule(
    hooked: Hooked,
) -> None:
    # given a receiver that is throttling: 429 with Retry-After of 1 s, far past the scaled
    # schedule's first wait (6 ms)
    endpoint = await hooked.endpoint(answers=[Reply(429, {"Retry-After": "1"})])

    # when an event is delivered
    await create_payment(hooked.client, hooked.member)
    first, second = await hooked.receiver.wait_for(2)

    # then the second attempt waited for it
    assert second.at - first.at >= 0.95
    await hooked.settled(endpoint["id"], 1)


async def test_receiver_can_stop_the_retries_of_a_delivery_with_the_abort_header(
    hooked: Hooked,
) -> None:
    # given a receiver that refuses one delivery for good, and every attempt message watched
    endpoint = await hooked.endpoint(answers=[Reply(400, {"webhook-delivery": "abort"})])
    seen = await hooked.attempt_messages()

    # when an event is delivered
    await create_payment(hooked.client, hooked.member)

    # then it is not retried
    [delivery] = await hooked.settled(endpoint["id"], 1)
    assert delivery["status"] == "DEAD" and delivery["attempts"] == 1
    # and no retry was published: one would be published before the outcome was recorded,
    # delayed by the schedule's first wait, so it is routed by the time a sentinel published
    # now with that delay is (every retry travels as an attempt message)
    await hooked.routed(seen, RETRY_OFFSETS[0].total_seconds() * SCALE)
    assert [m for m in seen if delivery["id"].encode() in m] == []
    assert len(hooked.receiver.received) == 1
    assert (await hooked.get(f"/merchant/webhooks/{endpoint['id']}"))["status"] == "enabled"


async def test_slow_endpoint_does_not_delay_another(hooked: Hooked) -> None:
    # given an endpoint whose receiver takes 3 s per request, and a quick one
    await hooked.endpoint("/slow")
    await hooked.endpoint("/quick")
    hooked.receiver.by_path["/slow"] = lambda: Reply(200, delay=3.0)

    # when 20 events are delivered to both
    for _ in range(20):
        await create_payment(hooked.client, hooked.member)

    # then the quick endpoint has all 20 before the slow one answered any: every slow request
    # that arrived is still being answered (a quick one is answered without a wait, so only
    # slow ones are ever in flight while the test looks)
    await hooked.receiver.wait_for(20, path="/quick", within=10)
    slow = hooked.receiver.at("/slow")
    assert hooked.receiver.in_flight == len(slow) > 0
    assert len(slow) <= DEFAULT_CONCURRENCY


async def test_an_endpoint_gets_at_most_the_configured_number_of_posts_at_once(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given a node that sends at most 3 POSTs at once to one endpoint, and a slow receiver
    async with Receiver() as receiver:
        app = make_app(Overrides(clock=utcnow), webhook_retry_scale=SCALE, webhook_concurrency=3)
        hooked = Hooked(client := await aiohttp_client(app), await sign_up(client), receiver)
        await hooked.endpoint("/slow")
        receiver.by_path["/slow"] = lambda: Reply(200, delay=0.3)

        # when 9 events are delivered to it
        for _ in range(9):
            await create_payment(hooked.client, hooked.member)

        # then all arrive, never more than 3 of them at once
        await receiver.wait_for(9, path="/slow", within=10)
        assert receiver.most_in_flight == 3


# -- replay and recovery ------------------------------------------------------------------------


async def test_replay_of_a_delivery_sends_its_event_again_as_a_new_delivery(
    hooked: Hooked,
) -> None:
    # given a delivery that died (410 would disable; 400 with abort ends it)
    endpoint = await hooked.endpoint(answers=[Reply(400, {"webhook-delivery": "abort"})])
    await create_payment(hooked.client, hooked.member)
    [dead] = await hooked.settled(endpoint["id"], 1)

    # when it is replayed
    response = await hooked.post(f"/merchant/webhooks/deliveries/{dead['id']}/replay")

    # then a new delivery carries the same event, and succeeds
    replay = await response.json()
    assert response.status == 200, replay
    assert replay["id"] != dead["id"] and replay["eventId"] == dead["eventId"]
    assert replay["replay"] is True
    first, second = await hooked.receiver.wait_for(2)
    assert first.event["id"] == second.event["id"]
    assert first.headers["X-Service-Delivery-Id"] != second.headers["X-Service-Delivery-Id"]
    rows = await hooked.settled(endpoint["id"], 2)
    assert sorted(r["status"] for r in rows) == ["DEAD", "SUCCEEDED"]


async def test_replay_of_an_event_delivers_it_to_every_endpoint_subscribed_now(
    hooked: Hooked,
) -> None:
    # given an event delivered to one endpoint, and a second endpoint registered since
    await hooked.endpoint("/first")
    await create_payment(hooked.client, hooked.member)
    await hooked.receiver.wait_for(1, path="/first")
    await hooked.endpoint("/second")
    event = (await hooked.get("/merchant/events"))["data"][0]

    # when the event is replayed
    response = await hooked.post(f"/merchant/events/{event['id']}/replay")

    # then both endpoints get it
    replayed = await response.json()
    assert response.status == 200, replayed
    assert len(replayed["deliveries"]) == 2
    await hooked.receiver.wait_for(2, path="/first")
    [second] = await hooked.receiver.wait_for(1, path="/second")
    assert second.event["id"] == event["id"]


async def test_recover_resends_only_the_deliveries_that_did_not_succeed(hooked: Hooked) -> None:
    # given an endpoint that took two events and refused one for good
    endpoint = await hooked.endpoint(answers=[200, Reply(400, {"webhook-delivery": "abort"}), 200])
    for _ in range(3):
        await create_payment(hooked.client, hooked.member)
        await hooked.settled(endpoint["id"], len(hooked.receiver.received))
    rows = await hooked.settled(endpoint["id"], 3)
    [failed] = [r for r in rows if r["status"] == "DEAD"]

    # when the endpoint is recovered from a minute ago
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))
    response = await hooked.post(f"/merchant/webhooks/{endpoint['id']}/recover", {"since": since})

    # then only the failed event is sent again: the recovery stored its deliveries before it
    # answered, so the endpoint's deliveries now are all it will ever attempt
    recovery = await response.json()
    assert response.status == 202, recovery
    assert recovery["deliveries"] == 1 and recovery["hasMore"] is False
    before = {r["id"] for r in rows}
    [resent] = [r for r in await hooked.deliveries(endpoint["id"]) if r["id"] not in before]
    assert resent["eventId"] == failed["eventId"]
    requests = await hooked.receiver.wait_for(4)
    assert requests[3].event["id"] == failed["eventId"]
    # and once every one of them has ended, none has an attempt left to make
    await hooked.settled(endpoint["id"], 4)
    assert len(hooked.receiver.received) == 4


# -- events ---------------------------------------------------------------------------------


async def test_events_are_listed_newest_first_and_filtered_by_type(hooked: Hooked) -> None:
    # given a created payment and a cancelled one
    first = await create_payment(hooked.client, hooked.member)
    await hooked.post(f"/merchant/payments/{first['id']}/cancel")

    # when the events are listed, all and by type
    every = (await hooked.get("/merchant/events"))["data"]
    cancelled = (await hooked.get("/merchant/events?type=payment.cancelled"))["data"]
    one = await hooked.get(f"/merchant/events/{every[0]['id']}")

    # then
    assert [e["type"] for e in every] == ["payment.cancelled", "payment.created"]
    assert [e["sequence"] for e in every] == [2, 1]
    assert [e["id"] for e in cancelled] == [every[0]["id"]]
    assert one["id"] == every[0]["id"] and one["data"]["object"]["status"] == "CANCELLED"
    assert one["apiVersion"] == "v2" and one["livemode"] is False


@pytest.mark.both_backends
async def test_event_sequence_has_no_gap_or_repeat_under_concurrent_commits_and_a_restart(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given a company creating 60 payments at once
    client: TestClient[Any, Any] = await aiohttp_client(make_app())
    member = await sign_up(client)
    await asyncio.gather(*(create_payment(client, member) for _ in range(60)))
    await client.close()

    # when the service restarts on the same database and 20 more come
    # (the member's session survives the restart)
    client = await aiohttp_client(make_app())
    await asyncio.gather(*(create_payment(client, member) for _ in range(20)))

    # then the events are numbered 1 to 80, once each
    sequences: list[int] = []
    cursor: str | None = None
    while True:
        params = {"limit": "100", **({"cursor": cursor} if cursor else {})}
        response = await client.get(
            "/api/v1/merchant/events", params=params, headers=member.headers
        )
        page = await response.json()
        sequences += [e["sequence"] for e in page["data"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert sorted(sequences) == list(range(1, 81))


async def test_sandbox_webhook_ping_is_delivered(hooked: Hooked) -> None:
    # given an endpoint for pings, and a test secret key
    await hooked.endpoint(events=["webhook.ping"])
    created = await hooked.post("/merchant/api-keys", {"name": "ci", "scopes": ["settings:write"]})
    key = (await created.json())["key"]

    # when the sandbox sends a ping
    response = await hooked.client.post(
        "/api/v1/developer/sandbox/webhook.ping",
        json={},
        headers={"Authorization": f"Bearer {key}"},
    )

    # then it is answered with the event, and delivered
    body = await response.json()
    assert response.status == 200, body
    assert body["kind"] == "webhook.ping" and body["event"]["type"] == "webhook.ping"
    [request] = await hooked.receiver.wait_for(1)
    assert request.event["id"] == body["event"]["id"]


async def test_endpoint_failing_for_five_days_is_disabled_with_an_event_and_a_mail_to_owners(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> None:
    # given an endpoint whose receiver fails everything, on the test clock
    async with Receiver() as receiver:
        receiver.otherwise = Reply(500)
        client: TestClient[Any, Any] = await aiohttp_client(make_app())
        member = await sign_up(client)
        hooked = Hooked(client, member, receiver)
        endpoint = await hooked.endpoint()
        await create_payment(client, member)

        async def attempted() -> bool:
            return any(d["attempts"] for d in await hooked.deliveries(endpoint["id"]))

        # until its first attempt is recorded, on the clock as it is
        await eventually(attempted, every=0.02, what="the first attempt recorded")

        # when it still fails five days later (the member signs in again by then)
        clock.advance(days=5, minutes=1)
        member = await sign_in(client, member)
        hooked.member = member
        await create_payment(client, member)
        await receiver.wait_for(2)

        # then it is disabled, the company got an event, and its owner a mail
        async def disabled_endpoint() -> Any:
            found = await hooked.get(f"/merchant/webhooks/{endpoint['id']}")
            return found if found["status"] == "disabled" else None

        after = await eventually(disabled_endpoint, what="the endpoint disabled")
        assert "5 days" in after["disabledReason"]
        disabled = await hooked.get("/merchant/events?type=webhook.endpoint_disabled")
        assert [e["data"]["object"]["endpointId"] for e in disabled["data"]] == [endpoint["id"]]
        mails = await hooked.get(f"/dev/mailbox?to={member.email}")
        assert any("webhook endpoint was disabled" in m["subject"] for m in mails["data"])


async def test_sweep_sends_again_a_delivery_whose_message_was_lost(hooked: Hooked) -> None:
    # given a delivery stored as due ten minutes ago whose broker message never existed
    endpoint = await hooked.endpoint()
    await create_payment(hooked.client, hooked.member)
    await hooked.receiver.wait_for(1)
    services = hooked.client.app[SERVICES]
    [original] = await hooked.deliveries(endpoint["id"])
    lost = services.webhooks.deliveries.replay_row(
        {
            "event_id": original["eventId"],
            "event_type": original["eventType"],
            "company_id": hooked.member.company_id,
            "mode": "test",
            "endpoint_id": endpoint["id"],
            "target": endpoint["id"],
        },
        endpoint["url"],
        "replay:lost",
    )
    lost["next_attempt_at"] = iso(utcnow() - timedelta(minutes=10))
    await services.actors.commit(delivery_insert(lost))

    # when the sweep runs
    found = await services.webhooks.deliveries.sweep(None, timedelta(minutes=5))

    # then the lost delivery is made
    assert found == 1
    await hooked.receiver.wait_for(2)
    rows = await hooked.settled(endpoint["id"], 2)
    assert {r["status"] for r in rows} == {"SUCCEEDED"}
