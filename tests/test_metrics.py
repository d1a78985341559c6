"""Prometheus metrics (mps.metrics): what is counted, what is read at scrape time, and where
`GET /metrics` answers (loopback in development, its own port in production)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import urlopen

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from prometheus_client.parser import text_string_to_metric_families

from mps.actors.directory import ActorDirectory
from mps.actors.persistence import Commit, PersistenceActor
from mps.actors.runtime import AsyncioActor, ask, stop
from mps.bootstrap import Overrides
from mps.config import ConfigError, load_settings
from mps.persistence.database import Database
from mps.persistence.statements import Row, insert
from tests.conftest import Clock
from tests.fakes import WrappedDatabase, wait_until
from tests.helpers import assert_envelope, create_payment, free_port, sign_up
from tests.server import RunningServer

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


async def scrape(client: TestClient[Any, Any]) -> Samples:
    response = await client.get("/metrics")
    assert response.status == 200, await response.text()
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return parse(await response.text())


# What is counted


async def test_a_request_is_counted_under_its_canonical_route_and_status(
    client: TestClient[Any, Any],
) -> None:
    # given a payment, read once by its id, and a path no route serves
    member = await sign_up(client)
    payment = await create_payment(client, member)
    read = await client.get(f"/api/v1/merchant/payments/{payment['id']}", headers=member.headers)
    assert read.status == 200
    missing = await client.get(f"/api/v1/nothing/{payment['id']}")
    assert missing.status == 404

    # when
    response = await client.get("/metrics")
    text = await response.text()
    samples = parse(text)

    # then each is counted under the route as declared, never under the path it was asked by
    route = "/api/v1/merchant/payments/{id}"
    assert value(samples, "mps_http_requests_total", route=route, method="GET", status="200") == 1
    assert value(samples, "mps_http_request_seconds_count", route=route, method="GET") == 1
    latency = value(samples, "mps_http_request_seconds_sum", route=route, method="GET")
    assert latency is not None and 0 < latency < 10
    unmatched = {"route": "unmatched", "method": "GET", "status": "404"}
    assert value(samples, "mps_http_requests_total", **unmatched) == 1
    assert payment["id"] not in text


async def test_a_method_no_route_knows_is_counted_as_other(client: TestClient[Any, Any]) -> None:
    # when a client invents methods
    for method in ("PROPFIND", "LOCK"):
        response = await client.request(method, "/api/v1/health")
        assert response.status == 405

    # then they share one series, so made-up methods cannot multiply them
    samples = await scrape(client)
    other = {"route": "unmatched", "method": "other", "status": "405"}
    assert value(samples, "mps_http_requests_total", **other) == 2


async def test_a_group_commit_shows_in_the_batch_histogram(client: TestClient[Any, Any]) -> None:
    # given
    member = await sign_up(client)
    before = await scrape(client)

    # when a payment is created (one committed unit)
    await create_payment(client, member)

    # then
    after = await scrape(client)
    commits = (value(after, "mps_group_commit_units_count") or 0) - (
        value(before, "mps_group_commit_units_count") or 0
    )
    units = (value(after, "mps_group_commit_units_sum") or 0) - (
        value(before, "mps_group_commit_units_sum") or 0
    )
    assert commits >= 1
    assert units >= commits
    seconds = value(after, "mps_group_commit_seconds_count")
    assert seconds == value(after, "mps_group_commit_units_count")


@pytest.mark.both_backends
async def test_the_writer_reports_each_group_commit_with_its_size(database: Database) -> None:
    # given a writer that reports to a list
    observed: list[tuple[int, float]] = []
    writer = PersistenceActor.start(database, observe=lambda n, s: observed.append((n, s)))
    now = "2026-01-01T00:00:00.000Z"

    def new_user(user_id: str) -> Commit:
        row = {"id": user_id, "email": f"{user_id}@example.com", "name": None, "created_at": now}
        return Commit((insert("users", row),))

    try:
        # when three writes queue up together, then one more follows alone
        futures = [writer.ask(new_user(f"usr_{i}"), block=False) for i in range(3)]
        async with asyncio.timeout(10):
            await asyncio.gather(*futures)
            await ask(writer, new_user("usr_alone"))
    finally:
        await stop(writer)

    # then one report per commit, with the units it held
    assert [units for units, _ in observed] == [3, 1]
    assert all(0 < seconds < 10 for _, seconds in observed)


async def test_a_rate_limit_refusal_is_counted_by_the_limit_name(
    client: TestClient[Any, Any],
) -> None:
    # given a user who has created the ten API keys a minute allows
    member = await sign_up(client)
    body = {"name": "k", "scopes": ["analytics:read"]}
    for _ in range(10):
        made = await client.post("/api/v1/merchant/api-keys", json=body, headers=member.headers)
        assert made.status == 201

    # when two more are refused
    for _ in range(2):
        refused = await client.post("/api/v1/merchant/api-keys", json=body, headers=member.headers)
        assert refused.status == 429

    # then
    samples = await scrape(client)
    assert value(samples, "mps_rate_limit_refusals_total", limit="api-key-create") == 2


# What is read at scrape time


async def test_scrape_reports_active_actors_and_owned_shards(client: TestClient[Any, Any]) -> None:
    # given one company signed up (its actor is active)
    await sign_up(client)

    # when
    samples = await scrape(client)

    # then
    assert value(samples, "mps_actors_active", kind="company") == 1
    assert value(samples, "mps_actor_mailbox_depth", kind="company") == 0
    assert value(samples, "mps_actors_active", kind="payment") is not None
    assert value(samples, "mps_shards_owned") == 64
    assert value(samples, "mps_shard_epoch", shard="0") == 0
    assert value(samples, "mps_shard_epoch", shard="63") == 0


class _Held(AsyncioActor):
    """Answers each message once `gate` is set, so messages queue behind the first."""

    def __init__(self, gate: asyncio.Event) -> None:
        super().__init__()
        self.gate = gate

    async def receive(self, message: Any) -> Any:
        await self.gate.wait()
        return message


async def test_directory_stats_count_messages_waiting_behind_a_busy_actor() -> None:
    # given an actor busy with its first message
    gate = asyncio.Event()
    directory: ActorDirectory[str, _Held] = ActorDirectory(
        "held", lambda _key: _Held(gate), capacity=10, idle_after=60.0
    )
    try:
        asks = [asyncio.ensure_future(directory.ask("a", n)) for n in range(3)]

        # when the actor has taken the first message
        await wait_until(lambda: directory.stats() == (1, 2))
        gate.set()
        answers = await asyncio.wait_for(asyncio.gather(*asks), 5)

        # then two messages waited behind it, and none once it has answered
        assert answers == [0, 1, 2]
        assert directory.stats() == (1, 0)
    finally:
        await directory.close()


async def test_outbox_lag_is_the_age_of_the_oldest_undispatched_event(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    # given nothing in the outbox yet
    empty = await scrape(client)
    member = await sign_up(client)
    await create_payment(client, member)

    # when a minute and a half passes with its events undispatched
    clock.advance(seconds=90)
    samples = await scrape(client)

    # then
    assert value(empty, "mps_outbox_lag_seconds") == 0
    lag = value(samples, "mps_outbox_lag_seconds")
    assert lag is not None and 90 <= lag < 95


class _OutboxNeverAnswers(WrappedDatabase):
    async def _fetch(self, sql: str, *params: Any) -> list[Row]:
        if "dispatched_at IS NULL" in sql:
            await asyncio.Event().wait()
        return await super()._fetch(sql, *params)


async def test_outbox_lag_is_minus_one_when_the_database_does_not_answer_in_time(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> None:
    # given a database whose outbox read never returns
    app = make_app(Overrides(clock=clock, wrap_database=_OutboxNeverAnswers))
    client: TestClient[Any, Any] = await aiohttp_client(app)

    # when
    started = time.monotonic()
    samples = await scrape(client)

    # then the scrape answers within its deadline (1 s), without the lag
    assert time.monotonic() - started < 5
    assert value(samples, "mps_outbox_lag_seconds") == -1
    assert value(samples, "mps_shards_owned") == 64


# Where it is served


async def test_metrics_is_404_to_a_host_that_is_not_loopback_in_development(
    client: TestClient[Any, Any],
) -> None:
    # when a page rebound to 127.0.0.1 asks under its own name
    rebound = await client.get("/metrics", headers={"Host": "attacker.example"})
    direct = await client.get("/metrics", headers={"Host": "localhost:8080"})

    # then it gets the 404 of an unknown route; loopback gets the metrics
    assert rebound.status == 404
    assert_envelope(await rebound.json(), 404)
    assert direct.status == 200
    assert "mps_http_requests_total" in await direct.text()


async def test_metrics_is_absent_from_the_production_app(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given the app as production builds it, asked from loopback
    client: TestClient[Any, Any] = await aiohttp_client(make_app(mode="production"))

    # when
    response = await client.get("/metrics")

    # then
    assert response.status == 404
    assert_envelope(await response.json(), 404)


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_production_serves_metrics_on_its_metrics_port_and_not_on_the_public_one(
    tmp_path: Path, database_url: str, amqp_url: str
) -> None:
    # given run.py in production with a metrics port
    metrics_port = free_port()
    env = {
        "MPS_MODE": "production",
        "MPS_DATABASE_URL": database_url,
        "MPS_BROKER_URL": amqp_url,
        "MPS_SESSION_SECRET": "metrics-test-session-secret-0123456789",
        "MPS_ENCRYPTION_KEY": "metrics-test-encryption-key-0123456789",
        "MPS_SMTP_URL": "smtp://127.0.0.1:1",
        "MPS_METRICS_PORT": str(metrics_port),
    }
    with RunningServer(tmp_path, env=env) as server:
        # when
        with pytest.raises(HTTPError) as public:
            urlopen(f"{server.base_url}/metrics", timeout=10)
        with urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as response:
            text = response.read().decode()
        with pytest.raises(HTTPError) as other:
            urlopen(f"http://127.0.0.1:{metrics_port}/api/v1/health", timeout=10)

    # then the public listener has no such route; the metrics port serves it and nothing else
    public.value.close()
    other.value.close()
    assert public.value.code == 404
    assert other.value.code == 404
    samples = parse(text)
    live = {"route": "/api/v1/health/live", "method": "GET", "status": "200"}
    assert (value(samples, "mps_http_requests_total", **live) or 0) >= 1
    # How many depends on the cluster's assignment; the figure is there.
    assert value(samples, "mps_shards_owned") is not None


def test_metrics_port_must_be_a_port_number_other_than_the_service_port(
    tmp_path: Path,
) -> None:
    env = {"MPS_DATA_DIR": str(tmp_path / "var")}

    assert load_settings([], env).metrics_port is None
    assert load_settings(["--metrics-port", "9464"], env).metrics_port == 9464
    chosen = load_settings([], {**env, "MPS_METRICS_PORT": "9464", "MPS_METRICS_HOST": "10.0.0.5"})
    assert (chosen.metrics_port, chosen.metrics_host) == (9464, "10.0.0.5")
    for bad in ("0", "65536", "nine", "8080"):
        with pytest.raises(ConfigError, match="MPS_METRICS_PORT"):
            load_settings([], {**env, "MPS_METRICS_PORT": bad})
