"""Health from real probes (decisions 14), in development and in production mode."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.bootstrap import Overrides, build_app
from mps.config import Settings
from mps.http.keys import SERVICES
from mps.persistence.statements import Statement
from tests.cluster import delete_cluster_queues, new_cluster_name, serve_passed_requests
from tests.conftest import Clock
from tests.helpers import Member, create_payment, pay, pending_payment, post_as, sign_up


async def test_health_probes_the_database_and_broker(client: TestClient[Any, Any]) -> None:
    response = await client.get("/api/v1/health")

    body = await response.json()
    assert response.status == 200
    assert body["status"] == "up"
    assert body["services"]["database"] == {"status": "up", "detail": "probe succeeded"}
    assert body["services"]["broker"]["status"] == "up"
    assert body["services"]["fx"]["status"] == "disabled"
    expected = {
        "database",
        "broker",
        "objectStorage",
        "ledger",
        "settlement",
        "reconciliation",
        "fx",
        "identityVerification",
        "notifications",
        "webhooks",
    }
    assert set(body["services"]) == expected


async def test_webhooks_health_reports_the_backlog_and_degrades_when_deliveries_wait(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    # given an endpoint nobody listens on, and an event for it
    member = await sign_up(client)
    response = await post_as(
        client,
        member,
        "/api/v1/merchant/webhooks",
        {"url": "http://127.0.0.1:9/hooks", "events": ["*"]},
    )
    assert response.status == 201
    await create_payment(client, member)
    healthy = (await (await client.get("/api/v1/health")).json())["services"]["webhooks"]

    # when its retry has been due for ten minutes
    await wait_until_delivery_attempted(client, member)
    clock.advance(minutes=10)
    late = (await (await client.get("/api/v1/health")).json())["services"]["webhooks"]

    # then the probe said so from storage
    assert healthy["status"] == "up"
    assert late["status"] == "degraded"
    assert "1 deliveries due" in late["detail"]


async def wait_until_delivery_attempted(client: TestClient[Any, Any], member: Member) -> None:
    endpoints = await (await client.get("/api/v1/merchant/webhooks", headers=member.headers)).json()
    path = f"/api/v1/merchant/webhooks/{endpoints['data'][0]['id']}/deliveries"
    rows: list[Any] = []
    for _ in range(500):
        rows = (await (await client.get(path, headers=member.headers)).json())["data"]
        if rows and rows[0]["attempts"] >= 1:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the delivery was never attempted: {rows}")


async def test_live_and_ready(client: TestClient[Any, Any]) -> None:
    live = await client.get("/api/v1/health/live")
    ready = await client.get("/api/v1/health/ready")

    assert live.status == 200
    assert ready.status == 200
    assert (await ready.json())["shards"] == 64


async def test_health_is_down_when_the_database_is_gone(client: TestClient[Any, Any]) -> None:
    await client.app[SERVICES].database.close()

    health = await client.get("/api/v1/health")
    ready = await client.get("/api/v1/health/ready")

    body = await health.json()
    assert health.status == 503
    assert body["status"] == "down"
    assert body["services"]["database"]["status"] == "down"
    assert ready.status == 503


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_production_mode_on_postgres_and_rabbitmq(
    aiohttp_client: Callable[..., Any], settings: Settings, clock: Clock, amqp_url: str
) -> None:
    # given a production server on the real Postgres and RabbitMQ, a cluster of one node
    name = new_cluster_name()
    app: web.Application = build_app(
        replace(settings, mode="production", broker_url=amqp_url, cluster_name=name),
        Overrides(clock=clock),
    )
    client: TestClient[Any, Any] = await aiohttp_client(app)
    await serve_passed_requests(client)

    # when
    health = await client.get("/api/v1/health")
    mailbox = await client.get("/api/v1/dev/mailbox", params={"to": "ann@example.com"})
    explorer = await client.get("/api/docs")

    # then the broker round trip went through RabbitMQ and the dev mailbox does not exist
    body = await health.json()
    assert health.status == 200, body
    assert body["services"]["broker"]["status"] == "up"
    assert body["services"]["database"]["status"] == "up"
    assert mailbox.status == 404
    assert explorer.status == 404
    # and the node serves every shard, having joined the cluster
    ready = await client.get("/api/v1/health/ready")
    assert ready.status == 200, await ready.text()
    assert body["node"]["clustered"] is True
    await client.close()
    delete_cluster_queues(amqp_url, name)


async def _health_from(
    client: TestClient[Any, Any], peer: str, token: str | None, host: str = "localhost:8080"
) -> Any:
    """Serve GET /api/v1/health to a request that appears to come from `peer`, through the real
    app's middleware and route, without any network traffic."""
    from unittest.mock import Mock

    import orjson
    from aiohttp.test_utils import make_mocked_request

    from mps.http.middlewares import envelope_middleware

    transport = Mock()
    transport.get_extra_info.side_effect = lambda name, default=None: (
        (peer, 40000) if name == "peername" else default
    )
    headers = {"Host": host, **({"Authorization": f"Bearer {token}"} if token else {})}
    probe = make_mocked_request("GET", "/api/v1/health", app=client.app)
    match = await client.app.router.resolve(probe)
    match.add_app(client.app)
    request = make_mocked_request(
        "GET",
        "/api/v1/health",
        headers=headers,
        app=client.app,
        transport=transport,
        match_info=match,
    )
    response = await envelope_middleware(request, match.handler)
    assert isinstance(response, web.Response) and isinstance(response.body, bytes)
    return orjson.loads(response.body)


async def test_health_details_only_for_loopback_or_a_valid_session(
    client: TestClient[Any, Any],
) -> None:
    from tests.helpers import sign_up

    member = await sign_up(client)

    stranger = await _health_from(client, "203.0.113.5", None)
    forged = await _health_from(client, "203.0.113.5", "not-a-token")
    signed_in = await _health_from(client, "203.0.113.5", member.token)
    local = await _health_from(client, "127.0.0.1", None)
    rebound = await _health_from(client, "127.0.0.1", None, host="attacker.example")

    assert "detail" not in stranger["services"]["database"]
    assert "detail" not in forged["services"]["database"]
    assert signed_in["services"]["database"]["detail"] == "probe succeeded"
    assert local["services"]["database"]["detail"] == "probe succeeded"
    assert "detail" not in rebound["services"]["database"]


async def test_money_services_report_from_real_checks(client: TestClient[Any, Any]) -> None:
    _, payment = await pending_payment(client)
    assert (await pay(client, payment["reference"])).status == 200

    body = await (await client.get("/api/v1/health")).json()

    services = body["services"]
    assert services["ledger"]["status"] == "up", services["ledger"]
    assert "balance" in services["ledger"]["detail"]
    assert services["settlement"]["status"] == "up", services["settlement"]
    assert services["reconciliation"]["status"] == "up", services["reconciliation"]


async def test_reconciliation_degrades_health_and_names_a_mismatch(
    client: TestClient[Any, Any],
) -> None:
    # given a paid payment whose ledger credit was tampered with in storage
    _, payment = await pending_payment(client)
    assert (await pay(client, payment["reference"])).status == 200
    services = client.app[SERVICES]
    await services.actors.commit(
        Statement(
            "UPDATE payments SET amount_minor = amount_minor + 1 WHERE id = $1", (payment["id"],)
        )
    )

    # when the reconciliation runs
    await services.reconciliation.tick()
    body = await (await client.get("/api/v1/health")).json()

    # then health shows the mismatch, and the ledger itself still balances
    state = body["services"]["reconciliation"]
    assert state["status"] == "degraded" and "payments collected" in state["detail"]
    assert body["services"]["ledger"]["status"] == "up"
    assert body["status"] == "degraded"


async def test_unbalanced_ledger_takes_health_down(client: TestClient[Any, Any]) -> None:
    _, payment = await pending_payment(client)
    assert (await pay(client, payment["reference"])).status == 200
    services = client.app[SERVICES]
    await services.actors.commit(
        Statement(
            "UPDATE ledger_postings SET amount_minor = amount_minor + 1 WHERE account = 'available'"
        )
    )
    await services.reconciliation.tick()

    response = await client.get("/api/v1/health")

    body = await response.json()
    assert response.status == 503
    assert body["status"] == "down" and body["services"]["ledger"]["status"] == "down"


async def test_a_first_reconciliation_still_running_degrades_health_but_does_not_take_it_down(
    client: TestClient[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a pass that takes longer than health may wait (a million payments on a slow disk)
    reconciliation = client.app[SERVICES].reconciliation
    await reconciliation.latest()  # the pass made at start is over
    release = asyncio.Event()
    original = reconciliation.run_once

    async def slow_pass() -> Any:
        await release.wait()
        return await original()

    monkeypatch.setattr("mps.actors.schedulers.reconciliation.FIRST_PASS_WAIT", 0.1)
    monkeypatch.setattr(reconciliation, "run_once", slow_pass)
    reconciliation.last = None
    reconciliation._passed.clear()  # as just after a start

    running = await (await client.get("/api/v1/health")).json()
    release.set()
    await reconciliation.tick()
    finished = await (await client.get("/api/v1/health")).json()

    # then health waits for it without failing, and says so
    assert running["status"] == "degraded" and running["ok"] is True
    assert "still running" in running["services"]["reconciliation"]["detail"]
    assert running["services"]["ledger"]["status"] == "up"
    assert "first pass" in running["services"]["ledger"]["detail"]
    assert finished["services"]["reconciliation"]["status"] == "up"
