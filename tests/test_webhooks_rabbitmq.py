"""Webhooks through real RabbitMQ and Postgres: the broker carries the retries (delay queues) and
the dead letters, and no event is lost when the service is killed mid-way (decisions 10)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import aio_pika
import aiohttp
import asyncpg
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from standardwebhooks.webhooks import Webhook

from mps.bootstrap import Overrides, build_app
from mps.config import Settings
from mps.domain.clock import utcnow
from mps.webhooks import verify_signature
from tests.cluster import (
    LocalCluster,
    delete_cluster_queues,
    new_cluster_name,
    serve_passed_requests,
    sign_up_on,
)
from tests.conftest import PG_URL
from tests.helpers import Member, create_payment, sign_up
from tests.receiver import Receiver, Reply

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)

API = "/api/v1"


@pytest.fixture
async def on_rabbitmq(
    aiohttp_client: Callable[..., Any], settings: Settings, amqp_url: str
) -> AsyncIterator[tuple[TestClient[Any, Any], str]]:
    name = new_cluster_name()
    app: web.Application = build_app(
        replace(settings, broker_url=amqp_url, cluster_name=name, webhook_retry_scale=0.0002),
        Overrides(clock=utcnow),
    )
    client: TestClient[Any, Any] = await aiohttp_client(app)
    await serve_passed_requests(client)
    try:
        yield client, name
    finally:
        await client.close()
        delete_cluster_queues(amqp_url, name)


async def _endpoint(client: TestClient[Any, Any], member: Member, url: str) -> Any:
    response = await client.post(
        f"{API}/merchant/webhooks", json={"url": url, "events": ["*"]}, headers=member.headers
    )
    assert response.status == 201, await response.text()
    return await response.json()


async def _deliveries(client: TestClient[Any, Any], member: Member, endpoint_id: str) -> Any:
    response = await client.get(
        f"{API}/merchant/webhooks/{endpoint_id}/deliveries", headers=member.headers
    )
    return (await response.json())["data"]


async def _settled(
    client: TestClient[Any, Any], member: Member, endpoint_id: str, within: float = 30
) -> Any:
    deadline = time.monotonic() + within
    while True:
        rows = await _deliveries(client, member, endpoint_id)
        if rows and all(r["status"] in ("SUCCEEDED", "DEAD") for r in rows):
            return rows
        assert time.monotonic() < deadline, rows
        await asyncio.sleep(0.1)


async def test_deliveries_go_through_rabbitmq_and_retry_through_its_delay_queues(
    on_rabbitmq: tuple[TestClient[Any, Any], str],
) -> None:
    # given an endpoint on a node whose broker is RabbitMQ, whose receiver fails twice
    client, _ = on_rabbitmq
    async with Receiver() as receiver:
        receiver.answers = [500, 503]
        member = await sign_up(client)
        endpoint = await _endpoint(client, member, receiver.url())

        # when a payment is created
        await create_payment(client, member)
        requests = await receiver.wait_for(3, within=20)

        # then the third attempt of the same event succeeded, signed as the first was
        [delivery] = await _settled(client, member, endpoint["id"])
        assert delivery["status"] == "SUCCEEDED" and delivery["attempts"] == 3
        assert len({r.event["id"] for r in requests}) == 1
        last = requests[-1]
        assert verify_signature(last.body, last.headers["X-Service-Signature"], endpoint["secret"])
        Webhook(endpoint["secret"]).verify(last.body, last.headers)


async def test_a_dead_delivery_is_parked_in_rabbitmqs_dead_letter_queue(
    on_rabbitmq: tuple[TestClient[Any, Any], str], amqp_url: str
) -> None:
    # given an endpoint whose receiver refuses one delivery for good
    client, name = on_rabbitmq
    async with Receiver() as receiver:
        receiver.answers = [Reply(400, {"webhook-delivery": "abort"})]
        member = await sign_up(client)
        endpoint = await _endpoint(client, member, receiver.url())

        # when its event is delivered
        await create_payment(client, member)
        [delivery] = await _settled(client, member, endpoint["id"])

    # then it is DEAD, and its dead letter waits in the broker
    assert delivery["status"] == "DEAD"
    connection = await aio_pika.connect(amqp_url)
    try:
        channel = await connection.channel()
        queue = await channel.declare_queue(f"{name}.webhooks.dead", passive=True)
        message = await queue.get(timeout=5)
        assert message is not None and delivery["id"].encode() in message.body
        await message.ack()
    finally:
        await connection.close()


async def test_every_event_is_delivered_after_kills_between_commit_publish_and_delivery(
    tmp_path: Path, empty_database_url: str, amqp_url: str
) -> None:
    # given one node on Postgres and RabbitMQ, and a slow receiver (so that at any moment some
    # events are committed but not published, and some published but not delivered)
    schema = empty_database_url.split("schema=", 1)[1]
    env = {"MPS_WEBHOOK_RETRY_SCALE": "0.001"}
    async with Receiver() as receiver, aiohttp.ClientSession() as http:
        receiver.otherwise = Reply(200, delay=0.05)
        with LocalCluster(tmp_path, 1, empty_database_url, amqp_url, env=env) as cluster:
            node = cluster.nodes[0]
            await asyncio.to_thread(cluster.wait_balanced)
            base = node.base_url
            member = await sign_up_on(http, base, "kim@example.com")
            headers = member.headers()
            async with http.post(
                f"{base}{API}/merchant/webhooks",
                json={"url": receiver.url(), "events": ["*"]},
                headers=headers,
            ) as r:
                assert r.status == 201

            # when payments are created while the node is killed, three times over
            lost_publishes = lost_deliveries = 0
            for _ in range(3):
                stop = asyncio.Event()
                creating = [
                    asyncio.ensure_future(_create_until(stop, http, base, headers))
                    for _ in range(8)
                ]
                await asyncio.sleep(0.5)
                await asyncio.to_thread(node.kill)
                stop.set()
                await asyncio.gather(*creating, return_exceptions=True)
                waiting = await _fetch(
                    schema,
                    "SELECT COUNT(*) AS n FROM events WHERE dispatched_at IS NULL",
                )
                undelivered = await _fetch(
                    schema,
                    "SELECT COUNT(*) AS n FROM events e WHERE dispatched_at IS NOT NULL AND "
                    "NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id "
                    "AND d.status = 'SUCCEEDED')",
                )
                lost_publishes += waiting[0]["n"]
                lost_deliveries += undelivered[0]["n"]
                await asyncio.to_thread(node.start)
                await asyncio.to_thread(cluster.wait_balanced)

            # then after the last restart every committed event reaches the receiver
            committed = {r["id"] for r in await _fetch(schema, "SELECT id FROM events")}
            deadline = time.monotonic() + 60
            while not committed <= {r.event["id"] for r in receiver.received}:
                assert time.monotonic() < deadline, "events never delivered"
                await asyncio.sleep(0.2)

    # and the kills did land in both windows
    assert lost_publishes > 0, "no kill fell between a commit and its publish"
    assert lost_deliveries > 0, "no kill fell between a publish and its delivery"


async def _create_until(
    stop: asyncio.Event, http: aiohttp.ClientSession, base: str, headers: dict[str, str]
) -> None:
    while not stop.is_set():
        async with http.post(
            f"{base}{API}/merchant/payments",
            json={"amountMinor": "1000", "currency": "USD"},
            headers=headers,
        ) as r:
            await r.read()


async def _fetch(schema: str, sql: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(PG_URL, server_settings={"search_path": schema})
    try:
        return await conn.fetch(sql)
    finally:
        await conn.close()
