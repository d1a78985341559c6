"""A rolling upgrade's middle, on real nodes: the previous release and this one serve as one
cluster on one Postgres schema and one RabbitMQ, and pass each other requests straight over their
peer listeners (docs/operations.md, "Upgrades").

The previous release is the project as it was before the newest commit that changed the service
(`mps/`), taken from its history and run from a folder of its own with this venv. Its peer
protocol names no version, which this release reads as version 1 (mps.cluster.versions). Creates
for a company the old node owns are sent through the new one and the other way round, answered
and readable on both, and replayed under their key through the other node; then the rolling
step: the old node stops (SIGTERM: it hands its shards over) and a second node of this release
takes its place, while creates go on, each retried under its key until it is acknowledged, and
every acknowledged one is stored once.

Then the rule's other side: a node passes nothing to a peer that speaks only versions it does not
(a release two apart), and answers 503 with Retry-After instead, saying why once; a peer listener
refuses a request in a version its node does not speak; and the rule on its values.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.request import urlopen

import aiohttp
import asyncpg
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.cluster.forwarding import Passed
from mps.cluster.membership import Heartbeat
from mps.cluster.peers import UNSPOKEN, PeerClient, PeerKey
from mps.cluster.versions import SPOKEN, V1, VERSION, Versions, header_version
from mps.domain.ids import request_id
from mps.domain.shards import SHARD_COUNT
from mps.http.keys import SERVICES
from tests.cluster import (
    CLUSTER_SECRET,
    LocalCluster,
    NodeMember,
    delete_cluster_queues,
    new_cluster_name,
    serve_passed_requests,
    sign_up_on,
)
from tests.conftest import PG_URL
from tests.helpers import eventually, sign_up
from tests.server import RUN_PY, release_before

# The tests on real nodes, on the test Postgres.
on_postgres = pytest.mark.parametrize("backend", ["postgres"], indirect=True)

API = "/api/v1"
AMOUNT = {"amountMinor": "2500", "currency": "USD"}
# The nodes of the upgrade: the previous release's, this release's, and the one of this release
# that takes the old node's place.
OLD, NEW, NEXT = 0, 1, 2
# What a node logs of a peer with which it shares no protocol version.
NO_VERSION_IN_COMMON = "no version in common"


@pytest.fixture
def previous_release(tmp_path: Path) -> Path:
    """The project as it was before the newest commit that changed the service."""
    return release_before(tmp_path / "previous", "mps")


def _metric(base_url: str, name: str, **labels: str) -> float:
    """The sum of a node's samples of `name` carrying `labels` (its /metrics, from loopback)."""
    with urlopen(f"{base_url}/metrics", timeout=5) as response:
        text = response.read().decode()
    wanted = [f'{key}="{value}"' for key, value in labels.items()]
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith((f"{name}{{", f"{name} ")) and all(w in line for w in wanted)
    )


def _health(base_url: str) -> dict[str, Any]:
    with urlopen(f"{base_url}{API}/health", timeout=5) as response:
        return dict(orjson.loads(response.read())["node"])


def _until_each_has_heard_the_others_shards(urls: list[str], within: float = 20.0) -> None:
    """Wait until each node's membership holds every other node's heartbeat as of its current
    shards: a node passes a request over the peer link only to an owner whose heartbeat named
    the shard, and balancing (the broker's consumers) can be done before that heartbeat
    arrives."""
    deadline = time.monotonic() + within
    while True:
        nodes = [_health(url) for url in urls]
        shards = {node["id"]: node["shards"] for node in nodes}
        if all(
            {seen["id"]: seen["shards"] for seen in node["nodesSeen"]}
            == {other: count for other, count in shards.items() if other != node["id"]}
            for node in nodes
        ):
            return
        assert time.monotonic() < deadline, f"heartbeats not heard within {within}s: {nodes}"
        time.sleep(0.1)


async def _stored(database_url: str, company: str) -> list[str]:
    """The ids of the company's payments, as committed."""
    schema = database_url.split("schema=", 1)[1]
    conn = await asyncpg.connect(PG_URL, server_settings={"search_path": schema})
    try:
        rows = await conn.fetch("SELECT id FROM payments WHERE company_id = $1", company)
    finally:
        await conn.close()
    return [row["id"] for row in rows]


def _as_stored(payment: dict[str, Any]) -> dict[str, Any]:
    """A payment as read, without what the reading node adds of its own: the request's id, and
    the pay link on the node's public address (each test node has its own)."""
    return {k: v for k, v in payment.items() if k not in ("requestId", "payUrl")}


async def _create(
    http: aiohttp.ClientSession, base: str, member: NodeMember, key: str
) -> tuple[aiohttp.ClientResponse, bytes]:
    headers = member.headers(**{"Idempotency-Key": key})
    async with http.post(f"{base}{API}/merchant/payments", json=AMOUNT, headers=headers) as r:
        return r, await r.read()


@on_postgres
async def test_the_previous_release_and_this_one_pass_each_other_requests_through_a_rolling_step(
    previous_release: Path,
    tmp_path: Path,
    empty_database_url: str,
    amqp_url: str,
    http: aiohttp.ClientSession,
) -> None:
    cluster = LocalCluster(
        tmp_path,
        3,
        empty_database_url,
        amqp_url,
        run_py=[previous_release / "run.py", RUN_PY, RUN_PY],
        started=1,
    )
    with cluster:
        # given a node of the previous release serving, on the schema it migrated, and a node of
        # this release joining it, as the first step of a roll does
        await asyncio.to_thread(cluster.nodes[NEW].start)
        await asyncio.to_thread(cluster.wait_balanced, 30.0, [OLD, NEW])
        old, new = cluster.nodes[OLD].base_url, cluster.nodes[NEW].base_url
        await asyncio.to_thread(_until_each_has_heard_the_others_shards, [old, new])
        # Signing up through a node puts the company in one of that node's shards.
        ann = await sign_up_on(http, old, "ann@example.com")
        bo = await sign_up_on(http, new, "bo@example.com")
        assert cluster.owner_of(ann.company, [OLD, NEW]) == OLD
        assert cluster.owner_of(bo.company, [OLD, NEW]) == NEW
        asks = [_metric(url, "mps_cluster_broker_asks_total") for url in (old, new)]
        ran = [_metric(url, "mps_peer_requests_total", outcome="ran") for url in (old, new)]

        # when each node is sent creates for the company the other one owns
        acknowledged: dict[str, list[str]] = {ann.company: [], bo.company: []}
        firsts: dict[str, tuple[str, bytes]] = {}
        for member, through, other in ((ann, new, old), (bo, old, new)):
            for n in range(5):
                key = f"{member.company}-{n}"
                response, body = await _create(http, through, member, key)
                assert response.status == 201, body
                acknowledged[member.company].append(orjson.loads(body)["id"])
                firsts[key] = (other, body)

        # then every one was answered by its owner, over the peer listeners, not the broker
        assert [_metric(url, "mps_cluster_broker_asks_total") for url in (old, new)] == asks
        assert _metric(old, "mps_peer_requests_total", outcome="ran") >= ran[0] + 5
        assert _metric(new, "mps_peer_requests_total", outcome="ran") >= ran[1] + 5
        # and each payment reads the same through both nodes
        for member in (ann, bo):
            for payment in acknowledged[member.company]:
                read = []
                for url in (old, new):
                    async with http.get(
                        f"{url}{API}/merchant/payments/{payment}", headers=member.headers()
                    ) as r:
                        assert r.status == 200, await r.text()
                        read.append(_as_stored(await r.json()))
                assert read[0] == read[1] and read[0]["id"] == payment
        # and a keyed replay through the other node is answered with the same body
        for member in (ann, bo):
            key = f"{member.company}-0"
            other, first = firsts[key]
            response, body = await _create(http, other, member, key)
            assert response.status == 201, body
            assert response.headers.get("Idempotent-Replayed") == "true"
            assert body == first

        # when the old node is stopped (SIGTERM: it hands its shards over, then exits) and a
        # second node of this release starts in its place, while creates go on through the
        # nodes of this release, each retried under its key until it is acknowledged
        serving = [NEW]
        refusals: list[tuple[int, str | None, bytes]] = []
        stop = asyncio.Event()

        async def creates(member: NodeMember, worker: int) -> None:
            n = 0
            while not stop.is_set():
                n += 1
                key = f"step-{worker}-{n}"
                for attempt in range(300):
                    url = cluster.nodes[serving[(n + attempt) % len(serving)]].base_url
                    response, body = await _create(http, url, member, key)
                    if response.status == 201:
                        acknowledged[member.company].append(orjson.loads(body)["id"])
                        break
                    refusals.append((response.status, response.headers.get("Retry-After"), body))
                    await asyncio.sleep(0.1)
                else:
                    pytest.fail(f"{key} was not acknowledged after 300 tries")

        async def more_acknowledged(than: int) -> bool:
            return sum(len(ids) for ids in acknowledged.values()) >= than + 10

        workers = [
            asyncio.ensure_future(creates(member, w)) for w, member in enumerate((ann, bo, ann, bo))
        ]
        before = sum(len(ids) for ids in acknowledged.values())
        await eventually(lambda: more_acknowledged(before), within=30, what="ten more creates")
        status = await asyncio.to_thread(cluster.nodes[OLD].stop, 30.0)
        assert status == 0, cluster.nodes[OLD].log_text()[-3000:]
        await asyncio.to_thread(cluster.nodes[NEXT].start)
        serving.append(NEXT)
        await asyncio.to_thread(cluster.wait_balanced, 30.0, [NEW, NEXT])
        rolled = sum(len(ids) for ids in acknowledged.values())
        await eventually(lambda: more_acknowledged(rolled), within=30, what="ten more creates")
        stop.set()
        await asyncio.gather(*workers)

        # then every create was answered: acknowledged, or refused as unavailable with
        # Retry-After and acknowledged under its key later
        assert all(status == 503 and after for status, after, _ in refusals), refusals[:5]
        # and every acknowledged create is stored, once
        for company, ids in acknowledged.items():
            assert len(ids) == len(set(ids))
            assert sorted(await _stored(empty_database_url, company)) == sorted(ids)
        # and no node found a peer it could not talk to
        for node in cluster.nodes:
            assert NO_VERSION_IN_COMMON not in node.log_text()


# --- a peer of a release two apart ------------------------------------------------------------


@on_postgres
async def test_a_node_passes_nothing_to_a_peer_speaking_only_versions_it_does_not_and_answers_503(
    node_and_one_beside: tuple[LocalCluster, TestClient[Any, Any]], http: aiohttp.ClientSession
) -> None:
    # A run.py node of this release asks; the in-process node, made to speak what a release to
    # come would, owns.
    asker, owner = node_and_one_beside
    node = owner.app[SERVICES].cluster
    assert node is not None
    # given a company the in-process node owns
    member = await sign_up(owner, "future@example.com")
    assert node.router.owns(member.company_id)
    # when that node speaks only a version of a release to come, and says so in its heartbeats
    node.protocol = Versions(99, 99)
    server = asker.nodes[0]

    async def warned() -> bool:
        return NO_VERSION_IN_COMMON in server.log_text()

    await eventually(warned, within=10, what="the asker's warning")
    asks = _metric(server.base_url, "mps_cluster_broker_asks_total")
    # and creates for the company reach the run.py node
    answers = []
    for key in ("future-1", "future-2"):
        headers = {**member.headers, "Idempotency-Key": key}
        async with http.post(
            f"{server.base_url}{API}/merchant/payments", json=AMOUNT, headers=headers
        ) as r:
            answers.append((r.status, r.headers.get("Retry-After"), (await r.json())["message"]))

    # then each is answered 503 with Retry-After, sent neither to the peer nor through the broker
    assert [(status, after) for status, after, _ in answers] == [(503, "1"), (503, "1")]
    assert "release" in answers[0][2]
    assert _metric(server.base_url, "mps_cluster_broker_asks_total") == asks
    listed = await owner.get(f"{API}/merchant/payments", headers=member.headers)
    assert (await listed.json())["data"] == []
    # and the run.py node named the peer and its versions in a WARNING, once
    warnings = [line for line in server.log_text().splitlines() if NO_VERSION_IN_COMMON in line]
    assert len(warnings) == 1, warnings
    assert "WARNING" in warnings[0] and node.node_id in warnings[0] and "version 99" in warnings[0]


@pytest.fixture
async def lone_node(
    amqp_url: str,
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
) -> AsyncIterator[TestClient[Any, Any]]:
    """An in-process node, alone in a cluster of its own, once it owns every shard."""
    name = new_cluster_name()
    client = await aiohttp_client(
        make_app(
            broker_url=amqp_url,
            cluster_name=name,
            node_id=f"{name}-lone",
            cluster_secret=CLUSTER_SECRET.encode(),
            rate_limit_scale=0.0,
        )
    )
    try:
        await serve_passed_requests(client)
        node = client.app[SERVICES].cluster
        assert node is not None

        async def owns_every_shard() -> bool:
            return len(node.router.owned) == SHARD_COUNT

        await eventually(owns_every_shard, within=20, what="the node owning every shard")
        yield client
    finally:
        await client.close()
        delete_cluster_queues(amqp_url, name)


@on_postgres
async def test_a_peer_listener_refuses_a_request_in_a_version_its_node_does_not_speak(
    lone_node: TestClient[Any, Any],
) -> None:
    node = lone_node.app[SERVICES].cluster
    assert node is not None and node.peer_address is not None
    member = await sign_up(lone_node, "later@example.com")
    passed = Passed(
        method="POST",
        path=f"{API}/merchant/payments",
        headers=[("Authorization", f"Bearer {member.token}"), ("Content-Type", "application/json")],
        body=orjson.dumps(AMOUNT),
        client="203.0.113.9",
        request_id=request_id(),
    )
    client = PeerClient(PeerKey(CLUSTER_SECRET.encode()))
    try:
        # when a node of a release to come sends a signed create, in its own version, to the
        # peer listener of the company's owner
        answer, not_run = await client.exchange(node.peer_address, passed, within=10, version=99)
    finally:
        await client.close()

    # then it is refused unrun, and no payment was created
    assert (answer.status, not_run) == (403, UNSPOKEN)
    listed = await lone_node.get(f"{API}/merchant/payments", headers=member.headers)
    assert (await listed.json())["data"] == []


# --- the rule ---------------------------------------------------------------------------------


def test_two_nodes_talk_at_the_highest_version_both_speak_and_at_none_without_a_common_one() -> (
    None
):
    assert Versions(1, 2).agree(Versions(2, 3)) == 2
    assert Versions(2, 3).agree(Versions(1, 2)) == 2
    assert Versions(1, 4).agree(Versions(2, 3)) == 3
    assert Versions(1, 2).agree(Versions(3, 4)) is None
    # this release talks to the one before versions, at version 1
    assert SPOKEN.agree(V1) == 1


def test_a_heartbeat_a_request_or_a_frame_that_names_no_version_is_version_1() -> None:
    # as the release before versions sends them
    beat = Heartbeat.from_json({"node": "old", "owned": [3], "draining": False, "peer": "h:1"}, 0)
    head = orjson.dumps({"m": "GET", "p": "/x", "h": [], "c": None, "r": "req_1", "d": None})
    frame = struct.pack(">I", len(head)) + head

    assert beat.protocol == V1
    assert header_version({}) == 1
    assert Passed.read(frame)[1] == 1
    # and what names something else is no version at all, so nothing is passed to it
    assert Heartbeat.from_json({"node": "x", "protocol": "new"}, 0).protocol.agree(SPOKEN) is None
    assert header_version({VERSION: "two"}) is None
