"""Requests passed straight to the owner's peer listener (mps.cluster.peers): one HTTP exchange
on a kept-alive connection, the broker kept out of it; the listener serves only what a node of
the cluster signed; and an owner that dies with the request in hand costs the client a 503 with
Retry-After, after which the keyed retry is answered once.

An owner of the test's company is a real run.py node (so it can be paused and killed); the node
the client asks is in-process, so the test can watch what it sends.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp
import pytest
from aiohttp.test_utils import TestClient

from mps.cluster.forwarding import PEER_SIGNATURE
from mps.cluster.node import ClusterNode
from mps.cluster.peers import REFUSED
from mps.http.keys import SERVICES
from tests.cluster import LocalCluster, sign_up_on
from tests.helpers import Member, eventually

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)

API = "/api/v1"
AMOUNT = {"amountMinor": "2500", "currency": "USD"}
T = TypeVar("T")


@dataclass
class OwnerAndAsker:
    owner: LocalCluster  # one run.py node, owning the member's company
    asker: TestClient[Any, Any]
    member: Member

    @property
    def node(self) -> ClusterNode:
        node = self.asker.app[SERVICES].cluster
        assert node is not None
        return node

    async def create(self, key: str | None = None) -> aiohttp.ClientResponse:
        headers = dict(self.member.headers)
        if key is not None:
            headers["Idempotency-Key"] = key
        return await self.asker.post(f"{API}/merchant/payments", json=AMOUNT, headers=headers)


@pytest.fixture
async def owner_and_asker(
    node_and_one_beside: tuple[LocalCluster, TestClient[Any, Any]],
) -> OwnerAndAsker:
    owner, asker = node_and_one_beside
    node = asker.app[SERVICES].cluster
    assert node is not None
    async with aiohttp.ClientSession() as http:
        # Signing up through a node puts the company in one of that node's shards.
        member = await sign_up_on(http, owner.urls()[0], "peers@example.com")
        token, company = member.token, member.company
    assert not node.router.owns(company)

    async def owner_heard() -> bool:
        index = node.router.index(company)
        return node.membership.peer_of(index, time.monotonic()) is not None

    await eventually(owner_heard, within=10, what="the owner's peer listener is known")
    return OwnerAndAsker(owner, asker, Member(token, company, "", "peers@example.com"))


def bytes_waiting_at(port: int) -> int:
    """Bytes received on established TCP connections to local `port` and not read yet by the
    process listening there (Linux: /proc/net/tcp*)."""
    waiting = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                local, state, queues = fields[1], fields[3], fields[4]
                if int(local.rsplit(":", 1)[1], 16) == port and state == "01":
                    waiting += int(queues.split(":")[1], 16)
    return waiting


async def test_a_request_passed_on_goes_straight_to_the_owner_not_through_the_broker(
    owner_and_asker: OwnerAndAsker,
) -> None:
    node = owner_and_asker.node
    asked, sent = node.asked, node.peers.sent

    # when the member creates a payment through the node that does not own the company
    response = await owner_and_asker.create()

    # then the owner created it, and the request went to its peer listener, not to a queue
    assert response.status == 201, await response.text()
    assert node.peers.sent == sent + 1
    assert node.asked == asked
    assert node.peers.in_flight == 0


async def test_a_real_node_s_peer_listener_refuses_what_no_node_signed_and_runs_nothing(
    owner_and_asker: OwnerAndAsker,
) -> None:
    owner, member = owner_and_asker.owner, owner_and_asker.member
    # when a client that is not a node sends a create to the owner's peer listener, unsigned
    # and with a signature of its own
    answers = []
    async with aiohttp.ClientSession() as http:
        for extra in ({}, {PEER_SIGNATURE: f"{int(time.time())} {'0' * 64}"}):
            async with http.post(
                f"{owner.peer_url(0)}{API}/merchant/payments",
                json=AMOUNT,
                headers={**member.headers, **extra},
            ) as r:
                answers.append((r.status, r.headers.get("X-Mps-Not-Run")))

    # then both are refused, and no payment was created
    assert answers == [(403, REFUSED), (403, REFUSED)]
    listed = await owner_and_asker.asker.get(f"{API}/merchant/payments", headers=member.headers)
    assert (await listed.json())["data"] == []


async def test_an_owner_killed_with_a_passed_request_in_hand_answers_503_then_the_keyed_retry_once(
    owner_and_asker: OwnerAndAsker,
) -> None:
    owner, node = owner_and_asker.owner, owner_and_asker.node
    # given a kept-alive connection to the owner's peer listener (a first create through it)
    first = await owner_and_asker.create()
    assert first.status == 201, await first.text()
    first_id = (await first.json())["id"]
    # and a create passed to the owner, whose bytes wait in its socket (the owner is paused,
    # so this is the moment of a request in hand: sent, not answered)
    owner.pause(0)
    create = asyncio.ensure_future(owner_and_asker.create("killed-mid-request"))

    async def in_hand() -> bool:
        return bytes_waiting_at(owner.peer_ports[0]) > 0

    await eventually(in_hand, within=10, what="the create reached the owner's socket")

    # when the owner is killed
    killed_at = time.monotonic()
    await asyncio.to_thread(owner.nodes[0].kill)

    # then the client gets 503 with Retry-After at once, not at the hop's deadline
    refused = await create
    assert refused.status == 503, await refused.text()
    assert refused.headers["Retry-After"] == "1"
    assert time.monotonic() - killed_at < node.timings.forward_within / 2
    assert node.peers.in_flight == 0

    # and the keyed retry is served once the shard has a new owner, and answered alike after
    ids = []

    async def retried() -> bool:
        response = await owner_and_asker.create("killed-mid-request")
        assert response.status in (201, 503), await response.text()
        if response.status == 201:
            ids.append((await response.json())["id"])
        return len(ids) == 2

    await eventually(retried, within=30, what="two keyed retries served")
    assert ids[0] == ids[1]
    listed = await owner_and_asker.asker.get(
        f"{API}/merchant/payments", headers=owner_and_asker.member.headers
    )
    assert sorted(p["id"] for p in (await listed.json())["data"]) == sorted([ids[0], first_id])
