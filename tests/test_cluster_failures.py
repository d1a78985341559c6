"""A hung peer, as the nodes left see it (mps.cluster.membership, heartbeats, asks): they log at
WARNING that they lost it, naming its node id and peer address, and again as they take each of
its shards; a request passed to it is answered 503 with Retry-After as soon as another node
has taken its shard, not when the wait for its answer runs out; and when it wakes they log that
it is back. An owner that only stalls for a while (shorter than the broker's patience) keeps
its shards, and a request passed to it meanwhile gets its real outcome, once.

The rules of membership run on their own first; then three real run.py nodes, one paused with
SIGSTOP (its kernel still accepts connections, so nothing but the silence of its heartbeats
tells the others).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from mps.actors.shards import Shard, ShardRouter
from mps.cluster.asks import OwnerLost
from mps.cluster.membership import Heartbeat, Membership
from mps.cluster.node import ClusterNode
from mps.cluster.timings import ClusterTimings
from mps.domain.shards import shard_of
from tests.cluster import LocalCluster, company_and_its_owner, sign_up_on
from tests.helpers import eventually

API = "/api/v1"
AMOUNT = {"amountMinor": "2500", "currency": "USD"}
TIMINGS = ClusterTimings()


# --- membership on its own --------------------------------------------------------------------


def _beat(node: str, owned: set[int], at: float, *, draining: bool = False) -> Heartbeat:
    return Heartbeat(node, frozenset(owned), draining, seen_at=at, peer=f"10.0.0.{node[-1]}:7000")


def test_a_node_silent_past_the_timeout_is_reported_gone_once_with_its_last_heartbeat() -> None:
    membership = Membership("node1", 8, timeout=3.5)
    membership.saw(_beat("node2", {0, 1}, at=100.0))

    assert membership.departures(103.0) == []
    [gone] = membership.departures(104.0)
    assert (gone.node, gone.peer, gone.owned) == ("node2", "10.0.0.2:7000", frozenset({0, 1}))
    assert membership.departures(105.0) == []


def test_a_node_heard_again_after_it_was_gone_is_back_with_its_last_heartbeat() -> None:
    membership = Membership("node1", 8, timeout=3.5)
    assert membership.saw(_beat("node2", {0}, at=100.0)) is None
    membership.departures(110.0)

    before = membership.saw(_beat("node2", set(), at=111.0))

    assert before is not None and before.seen_at == 100.0
    assert membership.saw(_beat("node2", set(), at=112.0)) is None


def test_a_shard_taken_from_a_lost_node_names_it_once_and_a_drained_node_never() -> None:
    membership = Membership("node1", 8, timeout=3.5)
    membership.saw(_beat("node2", {0, 1}, at=100.0))
    membership.saw(_beat("node3", {2}, at=100.0, draining=True))
    membership.departures(110.0)

    former = membership.former_owner(0, 110.0)

    assert former is not None and former.node == "node2"
    assert membership.former_owner(0, 111.0) is None  # reported once
    assert membership.former_owner(1, 111.0) is not None
    assert membership.former_owner(2, 111.0) is None  # it handed its shards over


async def test_a_request_this_node_runs_itself_is_not_cut_by_a_stale_claim_of_its_shard() -> None:
    # given a node that asked shard 3's queue twice, and a peer whose last heartbeat (from
    # before it handed shard 3 over, balancing) still claims it
    node = ClusterNode(
        "amqp://127.0.0.1/",
        "node1",
        ShardRouter(8, _no_shard, clustered=True),
        _no_epoch,
        secret=b"s" * 32,
    )
    now = time.monotonic()
    node.membership.saw(_beat("node2", {3}, at=now))
    node.membership.saw(_beat("node3", set(), at=now - 10.0))
    loop = asyncio.get_running_loop()
    asks = {"mine": loop.create_future(), "lost": loop.create_future()}
    # one run by this node itself (it took shard 3 and consumed the request), one by node3,
    # silent past the timeout
    for correlation, runner in (("mine", "node1"), ("lost", "node3")):
        node._replies[correlation] = asks[correlation]
        node._started[correlation] = (runner, now)
        node._shards_asked[correlation] = 3

    # when the heartbeat looks for requests whose owner was lost
    node._fail_orphans(now)

    # then only the one on the silent node is cut short: this node's own answer comes from
    # this process, and the stale claim says nothing about it
    assert not asks["mine"].done()
    assert isinstance(asks["lost"].exception(), OwnerLost)


def _no_shard(index: int, epoch: int | None) -> Shard:
    raise AssertionError(index, epoch)


async def _no_epoch(index: int) -> int:
    raise AssertionError(index)


# --- a real cluster ---------------------------------------------------------------------------


async def _sample(http: aiohttp.ClientSession, base: str, name: str, **labels: str) -> float | None:
    """One sample of a development node's /metrics (served to loopback), the node label aside."""
    async with http.get(f"{base}/metrics") as r:
        assert r.status == 200, await r.text()
        text = await r.text()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found = {k: v for k, v in sample.labels.items() if k != "node"}
            if sample.name == name and found == labels:
                return float(sample.value)
    return None


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_paused_owner_is_logged_lost_and_a_request_passed_to_it_is_answered_503_early(
    three_nodes: LocalCluster, http: aiohttp.ClientSession
) -> None:
    urls = three_nodes.urls()
    member, owner, others = await company_and_its_owner(three_nodes, http, "hal@example.com")
    survivor = others[0]
    lost = f"node{owner + 1}"
    address = f"127.0.0.1:{three_nodes.peer_ports[owner]}"
    headers = member.headers(**{"Idempotency-Key": "hung-owner-1"})

    # given the owner of the company's shard paused
    three_nodes.pause(owner)
    paused_at = time.monotonic()

    # when a create is sent to another node, which passes it to the paused owner
    async with http.post(
        f"{urls[survivor]}{API}/merchant/payments", json=AMOUNT, headers=headers
    ) as r:
        status, retry_after, took = r.status, r.headers.get("Retry-After"), time.monotonic()
        body = await r.json()

    # then it is answered 503 with Retry-After once the owner is taken for gone, well before
    # the wait for the owner's answer would have run out
    assert status == 503, body
    assert retry_after is not None and int(retry_after) > 0
    assert took - paused_at < TIMINGS.forward_within * 0.75, took - paused_at

    # and the node that passed it logs the loss at WARNING, with the peer's id and address
    def logged(index: int, pattern: str) -> bool:
        return re.search(pattern, three_nodes.nodes[index].log_text()) is not None

    lost_line = rf"WARNING mps\.cluster\.node: lost peer node {lost} at {re.escape(address)}"
    await eventually(
        lambda: asyncio.to_thread(logged, survivor, lost_line), within=10.0, what="the loss"
    )

    # and the owner's shards move to the others, each taken with a WARNING naming it
    others = [i for i in range(3) if i != owner]
    await asyncio.to_thread(three_nodes.wait_owned, member.company, others, 30.0)
    new_owner = three_nodes.owner_of(member.company, others)
    shard = shard_of(member.company)
    taken = (
        rf"WARNING mps\.cluster\.node: node node{new_owner + 1} took shard {shard} "
        rf"\(epoch \d+\) of lost peer node {lost} at {re.escape(address)}"
    )
    await eventually(
        lambda: asyncio.to_thread(logged, new_owner, taken), within=10.0, what="the take"
    )

    # and the metrics count the request given up on, and the shards taken from the lost node
    passed = await _sample(http, urls[survivor], "mps_passed_requests_total", outcome="unavailable")
    assert passed == 1
    changes = "mps_cluster_shard_changes_total"
    assert (await _sample(http, urls[new_owner], changes, change="taken_from_lost") or 0) >= 1

    # and the keyed retry is served by the new owner
    async with http.post(
        f"{urls[survivor]}{API}/merchant/payments", json=AMOUNT, headers=headers
    ) as r:
        assert r.status == 201, await r.text()

    # and once the paused node wakes, the others log that it is back
    three_nodes.resume(owner)
    back = rf"WARNING mps\.cluster\.node: peer node {lost} at {re.escape(address)} is back"
    await eventually(
        lambda: asyncio.to_thread(logged, survivor, back), within=20.0, what="the return"
    )
    await asyncio.to_thread(three_nodes.wait_balanced, 30.0)


# A stall of the owner's event loop longer than the node timeout (a node not heard from for
# it is taken for gone) and shorter than the broker's two heartbeats of 3 s: the owner keeps
# its shards and runs the request when it wakes.
STALL = 5.0


@pytest.fixture
def two_nodes(tmp_path: Path, empty_database_url: str, amqp_url: str) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path, 2, empty_database_url, amqp_url, heartbeat=3) as cluster:
        cluster.wait_balanced()
        yield cluster


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_request_passed_to_an_owner_that_stalls_and_wakes_gets_its_real_outcome_once(
    two_nodes: LocalCluster, http: aiohttp.ClientSession
) -> None:
    assert TIMINGS.node_timeout < STALL < TIMINGS.forward_within
    urls = two_nodes.urls()
    member = await sign_up_on(http, urls[0], "stall@example.com")
    owner = two_nodes.owner_of(member.company)
    asker = urls[1 - owner]

    # given the owner's loop stalled past the node timeout, then woken
    two_nodes.pause(owner)

    async def wake() -> None:
        await asyncio.sleep(STALL)  # the stall under test, not a wait for a fact
        two_nodes.resume(owner)

    waking = asyncio.ensure_future(wake())
    try:
        # when a create without an Idempotency-Key is passed to it meanwhile
        async with http.post(
            f"{asker}{API}/merchant/payments", json=AMOUNT, headers=member.headers()
        ) as r:
            status, body = r.status, await r.json()
    finally:
        await waking

    # then the client gets what the owner did, and exactly that one payment exists
    assert status == 201, body
    assert two_nodes.owner_of(member.company) == owner, "the stall moved the shard"
    async with http.get(f"{asker}{API}/merchant/payments", headers=member.headers()) as r:
        payments = (await r.json())["data"]
    assert [p["id"] for p in payments] == [body["id"]]
