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

import aiohttp
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from prometheus_client.parser import text_string_to_metric_families

from mps.actors.directory import ActorDirectory
from mps.actors.persistence import Commit, PersistenceActor
from mps.actors.runtime import AsyncioActor, ask, stop
from mps.bootstrap import Overrides
from mps.config import ConfigError, load_settings
from mps.domain.shards import SHARD_COUNT, shard_of
from mps.persistence.database import Database
from mps.persistence.statements import Row, insert
from tests.cluster import LocalCluster, sign_up_on
from tests.conftest import Clock
from tests.fakes import WrappedDatabase, wait_until
from tests.helpers import (
    assert_refused,
    create_payment,
    free_port,
    pending_payment,
    sign_up,
)
from tests.server import RunningServer

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    """Each sample by its name and labels, the `node` label aside: every sample carries it (a
    test of its own says so), and the others look up the labels that tell series apart."""
    return {
        (sample.name, frozenset((k, v) for k, v in sample.labels.items() if k != "node")): (
            sample.value
        )
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def nodes_named(text: str) -> set[str | None]:
    """The values of the `node` label over every sample (None for a sample without it)."""
    return {
        sample.labels.get("node")
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
    member, payment = await pending_payment(client)
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
    await assert_refused(rebound, 404)
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
    await assert_refused(response, 404)


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


# Who is asking: the node, the process


async def test_every_series_carries_the_node_label_and_the_process_is_measured(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given a node with an id of its own that has answered a request
    client: TestClient[Any, Any] = await aiohttp_client(make_app(node_id="node-7"))
    assert (await client.get("/api/v1/health/live")).status == 200

    # when
    response = await client.get("/metrics")
    text = await response.text()

    # then every sample names the node, those of the process too
    assert nodes_named(text) == {"node-7"}
    samples = parse(text)
    assert (value(samples, "process_cpu_seconds_total") or 0) > 0
    assert (value(samples, "process_resident_memory_bytes") or 0) > 1_000_000
    live = {"route": "/api/v1/health/live", "method": "GET", "status": "200"}
    assert value(samples, "mps_http_requests_total", **live) == 1


async def _json(url: str) -> tuple[int, Any]:
    def get() -> tuple[int, Any]:
        try:
            with urlopen(url, timeout=10) as response:
                return response.status, orjson.loads(response.read())
        except HTTPError as refused:
            with refused:
                return refused.code, orjson.loads(refused.read())

    return await asyncio.to_thread(get)


async def test_the_metrics_port_says_which_node_owns_a_company_and_every_shard(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given a node alone (it owns every shard) with a metrics port
    port = free_port()
    client: TestClient[Any, Any] = await aiohttp_client(
        make_app(node_id="node-3", metrics_port=port)
    )
    member = await sign_up(client)
    operator = f"http://127.0.0.1:{port}"

    # when an operator asks which node owns the company, and for the map of every shard
    status, owner = await _json(f"{operator}/owner/{member.company_id}")
    bad_status, bad = await _json(f"{operator}/owner/not-a-company")
    map_status, shards = await _json(f"{operator}/shards")
    public = await client.get(f"/owner/{member.company_id}")

    # then this node owns it, in the shard the company id falls in
    assert status == 200, owner
    assert owner == {
        "companyId": member.company_id,
        "shard": shard_of(member.company_id),
        "node": "node-3",
        "peer": None,
        "here": True,
        "askedNode": "node-3",
    }
    assert bad_status == 400 and "co_" in bad["message"]
    assert map_status == 200
    assert [s["shard"] for s in shards["shards"]] == list(range(SHARD_COUNT))
    assert {s["node"] for s in shards["shards"]} == {"node-3"}
    # and the public listener has no such route
    assert public.status == 404


# A cluster's figures, on real nodes


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_cluster_nodes_count_passed_requests_and_agree_on_who_owns_a_company(
    tmp_path: Path, empty_database_url: str, amqp_url: str
) -> None:
    # given two nodes, each with a metrics port, and a company one of them owns
    ports = [free_port(), free_port()]
    node_env = [{"MPS_METRICS_PORT": str(port)} for port in ports]
    with LocalCluster(tmp_path, 2, empty_database_url, amqp_url, node_env=node_env) as cluster:
        cluster.wait_balanced()
        async with aiohttp.ClientSession() as http:
            member = await sign_up_on(http, cluster.urls()[0], "mo@example.com")
            owner = cluster.owner_of(member.company)
            other = 1 - owner

            # when a payment is created through the node that does not own the company
            async with http.post(
                f"{cluster.urls()[other]}/api/v1/merchant/payments",
                json={"amountMinor": "2500", "currency": "USD"},
                headers=member.headers(),
            ) as r:
                assert r.status == 201, await r.text()

            # then that node counts one request passed out and answered, the owner one run
            # for a peer, each under its own node label
            async def figures(index: int) -> str:
                async with http.get(f"http://127.0.0.1:{ports[index]}/metrics") as r:
                    return await r.text()

            asked, served = await figures(other), await figures(owner)
        status, answer = await _json(f"http://127.0.0.1:{ports[other]}/owner/{member.company}")

    assert nodes_named(asked) == {f"node{other + 1}"}
    assert nodes_named(served) == {f"node{owner + 1}"}
    asked_samples, served_samples = parse(asked), parse(served)
    assert value(asked_samples, "mps_passed_requests_total", outcome="answered") == 1
    assert value(asked_samples, "mps_passed_request_seconds_count") == 1
    assert value(served_samples, "mps_peer_requests_total", outcome="ran") == 1
    for samples in (asked_samples, served_samples):
        assert value(samples, "mps_cluster_broker_connected") == 1
        assert value(samples, "mps_cluster_peers") == 1
        taken = value(samples, "mps_cluster_shard_changes_total", change="taken") or 0
        assert taken >= SHARD_COUNT // 2
    # and the node that does not own the company names the one that does, and its peer port
    assert status == 200, answer
    assert answer["node"] == f"node{owner + 1}"
    assert answer["peer"] == f"127.0.0.1:{cluster.peer_ports[owner]}"
    assert answer["here"] is False
    assert answer["askedNode"] == f"node{other + 1}"
