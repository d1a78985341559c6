"""Authentication without a database round trip per request, and revocations that still hold:
at once on the node that revokes, and on every other node as soon as the broadcast reaches it
(within a second, interface 2), long before its cache would verify the credential again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.auth.credentials import Credentials
from mps.auth.principals import SessionPrincipal
from mps.http.keys import SERVICES
from mps.persistence.statements import Statement
from tests.cluster import delete_cluster_queues, new_cluster_name, serve_passed_requests
from tests.conftest import Clock
from tests.helpers import Member, eventually, sign_up

ME = "/api/v1/auth/me"


def _credentials(client: TestClient[Any, Any]) -> Credentials:
    return client.app[SERVICES].credentials


async def _status(client: TestClient[Any, Any], token: str, path: str = ME) -> int:
    response = await client.get(path, headers={"Authorization": f"Bearer {token}"})
    return response.status


async def _api_key(client: TestClient[Any, Any], member: Member) -> tuple[str, str]:
    body = {"name": "server", "scopes": ["analytics:read"]}
    response = await client.post("/api/v1/merchant/api-keys", json=body, headers=member.headers)
    assert response.status == 201
    created = await response.json()
    return created["id"], created["key"]


async def _refused_before_revalidation(
    client: TestClient[Any, Any], token: str, path: str = ME
) -> None:
    """Wait until `client`'s node refuses `token`, revoked on another node.

    A node verifies a cached credential again every `revalidate_after` seconds, so it would
    refuse a revoked one by then even if the revocation's broadcast never came: the wait is
    bounded well inside that period, so a refusal seen in it came from the broadcast."""
    within = _credentials(client).revalidate_after / 3

    async def refused() -> bool:
        return await _status(client, token, path) == 401

    await eventually(refused, within=within, every=0.02, what="the revocation on this node")


async def _unverified_session(client: TestClient[Any, Any]) -> tuple[Member, Credentials, int]:
    """A new member, whose session the node has not verified yet; the node's credentials,
    and how many misses they have counted so far."""
    member = await sign_up(client)
    credentials = _credentials(client)
    return member, credentials, credentials.misses


async def test_a_session_is_verified_once_then_served_from_memory(
    client: TestClient[Any, Any],
) -> None:
    member, credentials, misses = await _unverified_session(client)

    statuses = [await _status(client, member.token) for _ in range(20)]

    assert statuses == [200] * 20
    assert credentials.misses == misses + 1
    assert credentials.hits >= 19


async def test_logout_is_refused_at_once_on_the_node_that_served_it(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    assert await _status(client, member.token) == 200  # cached now

    logout = await client.post("/api/v1/auth/logout", headers=member.headers)

    assert logout.status == 200
    assert await _status(client, member.token) == 401


async def test_a_revoked_api_key_is_refused_at_once(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    key_id, key = await _api_key(client, member)
    assert await _status(client, key, "/api/v1/developer/ping") == 200

    revoked = await client.post(
        f"/api/v1/merchant/api-keys/{key_id}/revoke", headers=member.headers
    )

    assert revoked.status == 200
    assert await _status(client, key, "/api/v1/developer/ping") == 401


async def test_a_pinned_version_change_reaches_sessions_already_verified(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    before = await client.get(ME, headers=member.headers)

    changed = await client.patch(
        "/api/v1/merchant/settings", json={"defaultApiVersion": "v1"}, headers=member.headers
    )
    after = await client.get(ME, headers=member.headers)

    assert changed.status == 200
    assert before.headers["X-Api-Version"] == "v2"
    assert after.headers["X-Api-Version"] == "v1"


async def test_a_session_ends_at_its_expiry_even_when_cached(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member = await sign_up(client)
    assert await _status(client, member.token) == 200

    clock.advance(hours=12, seconds=1)

    assert await _status(client, member.token) == 401


async def test_an_entry_is_verified_again_after_the_revalidation_period(
    client: TestClient[Any, Any],
) -> None:
    # given a session verified once, and the row revoked behind the cache's back (as by a
    # node whose broadcast was lost)
    member = await sign_up(client)
    credentials = _credentials(client)
    now = [0.0]
    credentials._monotonic = lambda: now[0]
    assert await _status(client, member.token) == 200
    await client.app[SERVICES].actors.commit(
        Statement("UPDATE sessions SET revoked_at = '2000-01-01T00:00:00.000Z'")
    )

    # when the revalidation period has not passed, and then has
    still = await _status(client, member.token)
    now[0] += credentials.revalidate_after
    later = await _status(client, member.token)

    # then the cache answers until it verifies again, and then refuses
    assert still == 200
    assert later == 401


async def test_a_read_that_raced_a_revocation_is_not_cached(
    client: TestClient[Any, Any],
) -> None:
    # given a session whose verification is in flight when the session is revoked
    member, credentials, misses = await _unverified_session(client)
    pending = asyncio.ensure_future(credentials.session(member.token))
    for _ in range(100):  # turns of the loop, until it has missed the cache and gone to storage
        if credentials.misses > misses:
            break
        await asyncio.sleep(0)
    assert credentials.misses == misses + 1 and not pending.done()
    credentials.forget_locally("session", "any-session")

    # when the verification completes
    principal = await pending

    # then its answer stands for its own request, but nothing was cached from it
    assert isinstance(principal, SessionPrincipal)
    assert len(credentials) == 0


async def test_the_cache_keeps_at_most_its_capacity(client: TestClient[Any, Any]) -> None:
    credentials = _credentials(client)
    credentials.capacity = 2
    members = [await sign_up(client, f"o{i}@example.com", f"Co {i}") for i in range(3)]

    for member in members:
        assert await _status(client, member.token) == 200

    assert len(credentials) == 2


@pytest.fixture
async def two_nodes(
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
    amqp_url: str,
) -> AsyncIterator[tuple[TestClient[Any, Any], TestClient[Any, Any], Member]]:
    """Two nodes of one cluster on one database and one RabbitMQ, and a member signed up
    through the first."""
    name = new_cluster_name()
    nodes = []
    for _ in range(2):
        node = await aiohttp_client(make_app(broker_url=amqp_url, cluster_name=name))
        await serve_passed_requests(node)
        nodes.append(node)
    yield nodes[0], nodes[1], await sign_up(nodes[0])
    for node in nodes:
        await node.close()
    delete_cluster_queues(amqp_url, name)


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_logout_on_one_node_is_refused_by_another_before_its_cache_revalidates(
    two_nodes: tuple[TestClient[Any, Any], TestClient[Any, Any], Member],
) -> None:
    # given two nodes on one database and one RabbitMQ, both having verified the session
    first, second, member = two_nodes
    assert await _status(first, member.token) == 200
    assert await _status(second, member.token) == 200

    # when the member logs out through the first node
    logout = await first.post("/api/v1/auth/logout", headers=member.headers)

    # then the second refuses the session, told by the first rather than by verifying again
    assert logout.status == 200
    await _refused_before_revalidation(second, member.token)


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_key_revoked_on_one_node_is_refused_by_another_before_its_cache_revalidates(
    two_nodes: tuple[TestClient[Any, Any], TestClient[Any, Any], Member],
) -> None:
    first, second, member = two_nodes
    key_id, key = await _api_key(first, member)
    assert await _status(second, key, "/api/v1/developer/ping") == 200

    revoked = await first.post(f"/api/v1/merchant/api-keys/{key_id}/revoke", headers=member.headers)

    assert revoked.status == 200
    await _refused_before_revalidation(second, key, "/api/v1/developer/ping")
