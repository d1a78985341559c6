"""Admission control at the front door (mps.http.admission): past MPS_MAX_IN_FLIGHT requests
at once, a node answers the next one 503 overloaded with Retry-After, at once and in the error
envelope, while the requests it admitted go on to be served and stored; health probes and
requests passed by another node of the cluster are never refused.

Each test holds the admitted requests in flight with a database whose commits wait for the test
(tests/fakes.py GatedDatabase), so which requests are admitted and which refused is a fact the
test can wait for, not a race it hopes to win."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestClient

from mps.bootstrap import Overrides
from mps.cluster.forwarding import Passed
from mps.config import load_settings
from mps.domain.ids import request_id
from mps.domain.shards import SHARD_COUNT
from mps.http.admission import ADMISSION
from mps.http.keys import SERVICES
from mps.persistence.database import Database
from tests.cluster import OwnClusterNode, serve_passed_requests
from tests.conftest import Clock
from tests.fakes import GatedDatabase
from tests.helpers import Member, assert_envelope, eventually, sign_up

PAYMENTS = "/api/v1/merchant/payments"
AMOUNT = {"amountMinor": "2500", "currency": "USD"}


class Gate:
    """The gated database of the app a test makes, once the app has opened it."""

    def __init__(self) -> None:
        self.opened: list[GatedDatabase] = []

    def wrap(self, real: Database) -> Database:
        self.opened.append(GatedDatabase(real))
        return self.opened[0]

    def close(self) -> None:
        self.opened[0].hold.clear()

    def open(self) -> None:
        for database in self.opened:
            database.hold.set()


@pytest.fixture
def gate(aiohttp_client: Callable[..., Any]) -> Iterator[Gate]:
    """Depends on aiohttp_client so that it is torn down first: a test that fails with the gate
    closed opens it, or the app's shutdown would wait for its held commits for ever."""
    gate = Gate()
    yield gate
    gate.open()


GatedNode = Callable[[int], Awaitable[tuple[web.Application, TestClient[Any, Any], Member]]]


@pytest.fixture
def gated_node(
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
    clock: Clock,
    gate: Gate,
) -> GatedNode:
    """Starts a node that serves `max_in_flight` requests at once (0: no bound), with a member
    signed up on it: the app, its client and the member. From then on its commits wait until
    the test opens the gate."""

    async def start(max_in_flight: int) -> tuple[web.Application, TestClient[Any, Any], Member]:
        app = make_app(Overrides(clock=clock, wrap_database=gate.wrap), max_in_flight=max_in_flight)
        client: TestClient[Any, Any] = await aiohttp_client(app)
        member = await sign_up(client)
        gate.close()
        return app, client, member

    return start


async def _hold_creates(
    client: TestClient[Any, Any], member: Member, count: int
) -> list[asyncio.Task[ClientResponse]]:
    """`count` creates sent at once, as tasks: the test's gate keeps the admitted ones in flight."""
    return [
        asyncio.create_task(client.post(PAYMENTS, json=AMOUNT, headers=member.headers))
        for _ in range(count)
    ]


async def _assert_overloaded(response: ClientResponse) -> None:
    assert response.status == 503, await response.text()
    assert response.headers["Retry-After"] == "1"
    assert response.headers["X-Request-Id"].startswith("req_")
    assert_envelope(await response.json(), 503, "overloaded")


async def _stored_ids(client: TestClient[Any, Any], member: Member) -> set[str]:
    response = await client.get(PAYMENTS, params={"limit": "100"}, headers=member.headers)
    assert response.status == 200, await response.text()
    return {payment["id"] for payment in (await response.json())["data"]}


async def test_a_burst_beyond_the_limit_is_refused_at_once_while_the_admitted_requests_are_stored(
    gated_node: GatedNode, gate: Gate
) -> None:
    # given a node that serves 3 requests at once, whose commits wait until the test lets them
    app, client, member = await gated_node(3)
    admission = app[ADMISSION]

    # when a burst of 8 creates arrives
    burst = await _hold_creates(client, member, 8)

    # then 5 are answered while the 3 admitted ones are still in flight (the gate holds them)
    await eventually(
        lambda: _settled(sum(task.done() for task in burst) == 5),
        what="5 of the burst answered",
    )
    assert (admission.refused, admission.in_flight) == (5, 3)
    refused = [task for task in burst if task.done()]
    admitted = [task for task in burst if not task.done()]
    assert len(refused) == 5
    for task in refused:
        await _assert_overloaded(task.result())

    # when the commits go through
    gate.open()
    answers = [await task for task in admitted]

    # then every admitted create was acknowledged, and each one acknowledged is stored
    assert [answer.status for answer in answers] == [201, 201, 201]
    acknowledged = {(await answer.json())["id"] for answer in answers}
    assert await _stored_ids(client, member) == acknowledged
    # and the node admits requests again once its places are free
    assert admission.in_flight == 0
    again = await client.post(PAYMENTS, json=AMOUNT, headers=member.headers)
    assert again.status == 201, await again.text()


async def test_health_probes_are_answered_while_the_node_is_at_its_limit(
    gated_node: GatedNode, gate: Gate
) -> None:
    # given a node that serves one request at once, and a create holding that place
    app, client, member = await gated_node(1)
    [create] = await _hold_creates(client, member, 1)
    await eventually(lambda: _settled(app[ADMISSION].in_flight == 1), what="the create in flight")

    # when the probes and another request arrive
    live = await client.get("/api/v1/health/live")
    ready = await client.get("/api/v1/health/ready")
    health = await client.get("/api/v1/health")
    listing = await client.get(PAYMENTS, headers=member.headers)

    # then the probes are answered as usual, and only the other request is refused
    assert live.status == 200, await live.text()
    assert ready.status == 200, await ready.text()
    assert health.status == 200, await health.text()
    await _assert_overloaded(listing)
    gate.open()
    assert (await create).status == 201


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_request_passed_by_another_node_is_served_while_the_node_is_at_its_limit(
    own_cluster_node: OwnClusterNode, clock: Clock, gate: Gate
) -> None:
    # given a node of a cluster that serves one request at once, owning every shard
    async with own_cluster_node(
        overrides=Overrides(clock=clock, wrap_database=gate.wrap), max_in_flight=1
    ) as (client, cluster):
        app = client.app
        assert app is not None
        try:
            peer = await serve_passed_requests(client)
            shards = app[SERVICES].shards
            await eventually(
                lambda: _settled(len(shards.owned) == SHARD_COUNT), what="every shard owned"
            )
            member = await sign_up(client)
            # and a create holding its one place
            gate.close()
            [create] = await _hold_creates(client, member, 1)
            await eventually(
                lambda: _settled(app[ADMISSION].in_flight == 1), what="the create in flight"
            )

            # when a request of the client's arrives, and one another node admitted and passed here
            direct = await client.get(PAYMENTS, headers=member.headers)
            rid = request_id()
            passed, not_run = await cluster.peers.exchange(
                peer,
                Passed(
                    method="GET",
                    path=PAYMENTS,
                    headers=[("Authorization", f"Bearer {member.token}")],
                    body=b"",
                    client="203.0.113.9",
                    request_id=rid,
                ),
                within=10,
            )

            # then the client's own is refused, and the passed one is served
            await _assert_overloaded(direct)
            assert (passed.status, not_run) == (200, ""), passed.body
            assert orjson.loads(passed.body)["requestId"] == rid
            gate.open()
            assert (await create).status == 201
        finally:
            # Before the node stops: its shutdown would wait for a held commit for ever.
            gate.open()


async def test_a_limit_of_0_admits_every_request(gated_node: GatedNode, gate: Gate) -> None:
    # given a node without a bound, whose commits wait until the test lets them
    app, client, member = await gated_node(0)

    # when a burst of 20 creates arrives
    burst = await _hold_creates(client, member, 20)

    # then all of them are in flight at once, and all are acknowledged once the commits go
    await eventually(lambda: _settled(app[ADMISSION].in_flight == 20), what="20 in flight")
    gate.open()
    assert [(await task).status for task in burst] == [201] * 20
    assert app[ADMISSION].refused == 0


def test_max_in_flight_comes_from_the_environment_and_is_128_by_default(tmp_path: Path) -> None:
    env = {"MPS_DATA_DIR": str(tmp_path)}

    assert load_settings([], env).max_in_flight == 128
    assert load_settings([], {**env, "MPS_MAX_IN_FLIGHT": "64"}).max_in_flight == 64
    assert load_settings([], {**env, "MPS_MAX_IN_FLIGHT": "0"}).max_in_flight == 0


async def _settled(value: bool) -> bool:
    return value
