"""API keys: shown once, hashed at rest, scoped, revocable, logged (decisions 2)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.actors.context import ActorContext
from mps.actors.key_usage import KeyUsage
from mps.actors.persistence import PersistenceActor
from mps.actors.runtime import stop
from mps.bootstrap import Overrides
from mps.domain.clock import utcnow
from mps.http.keys import SERVICES
from mps.persistence.database import Database
from tests.conftest import Clock
from tests.fakes import RecordingDatabase, wait_until
from tests.helpers import (
    Member,
    assert_envelope,
    assert_refused,
    owner_and_member,
    sign_up,
    two_companies,
)


async def _create(
    client: TestClient[Any, Any], member: Member, **body: Any
) -> tuple[int, dict[str, Any]]:
    payload = {"name": "server", "scopes": ["analytics:read", "payments:read"], **body}
    response = await client.post("/api/v1/merchant/api-keys", json=payload, headers=member.headers)
    return response.status, await response.json()


async def _ping(client: TestClient[Any, Any], key: str) -> Any:
    return await client.get("/api/v1/developer/ping", headers={"Authorization": f"Bearer {key}"})


async def test_created_key_is_shown_once_with_its_prefix(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)

    status, body = await _create(client, member)

    assert status == 201
    assert re.fullmatch(r"sk_test_[0-9A-Za-z]{40}", body["key"])
    assert body["id"].startswith("key_")
    assert body["prefix"] == "sk_test_" and body["last4"] == body["key"][-4:]
    assert body["type"] == "secret" and body["mode"] == "test"
    assert body["scopes"] == ["analytics:read", "payments:read"]
    listed = await client.get("/api/v1/merchant/api-keys", headers=member.headers)
    [row] = (await listed.json())["data"]
    assert "key" not in row and row["id"] == body["id"] and row["revokedAt"] is None


async def test_key_prefix_follows_type_and_mode(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)

    _, live_pub = await _create(
        client, member, type="publishable", mode="live", scopes=["analytics:read"]
    )

    assert live_pub["key"].startswith("pk_live_")
    assert live_pub["livemode"] is True


async def test_only_a_keyed_hash_of_the_key_is_stored(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    _, body = await _create(client, member)

    row = await client.app[SERVICES].database.fetchrow(
        "SELECT * FROM api_keys WHERE id = $1", body["id"]
    )

    assert row is not None
    assert body["key"] not in str(row)
    assert body["key"].split("_")[2] not in str(row)
    assert len(row["secret_hash"]) == 64


async def test_ping_confirms_the_key(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    _, body = await _create(client, member)

    response = await _ping(client, body["key"])

    result = await response.json()
    assert response.status == 200
    assert result == {
        "ok": True,
        "requestId": response.headers["X-Request-Id"],
        "companyId": member.company_id,
        "livemode": False,
        "scopes": ["analytics:read", "payments:read"],
    }


async def test_ping_without_analytics_read_is_403(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    _, body = await _create(client, member, scopes=["payments:read"])

    response = await _ping(client, body["key"])

    await assert_refused(response, 403, "insufficient_scope")


async def test_an_unknown_or_malformed_key_is_401(client: TestClient[Any, Any]) -> None:
    made_up = await _ping(client, "sk_test_" + "a" * 40)
    malformed = await _ping(client, "sk_test_short")

    assert made_up.status == 401
    assert malformed.status == 401


async def test_revoked_key_is_refused_at_once(client: TestClient[Any, Any]) -> None:
    # given
    member = await sign_up(client)
    _, body = await _create(client, member)
    assert (await _ping(client, body["key"])).status == 200

    # when
    revoked = await client.post(
        f"/api/v1/merchant/api-keys/{body['id']}/revoke", headers=member.headers
    )

    # then
    assert revoked.status == 200
    assert (await revoked.json())["revokedAt"] is not None
    refused = await _ping(client, body["key"])
    await assert_refused(refused, 401, "unauthenticated")


async def test_each_key_request_is_logged(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    _, body = await _create(client, member, scopes=["payments:read"])
    await _ping(client, body["key"])  # 403: logged too

    logs = await _flushed_logs(client, member, body["id"])

    [entry] = logs
    assert entry["method"] == "GET" and entry["path"] == "/api/v1/developer/ping"
    assert entry["statusCode"] == 403 and entry["requestId"].startswith("req_")
    assert entry["ip"] == "127.0.0.1" and entry["at"].endswith("Z")


async def _flushed_logs(
    client: TestClient[Any, Any], member: Member, key_id: str
) -> list[dict[str, Any]]:
    """The key's log once every use recorded so far is written: the service writes within a
    second on its own; a test flushes rather than waits."""
    await client.app[SERVICES].key_usage.flush()
    response = await client.get(
        f"/api/v1/merchant/api-keys/{key_id}/logs",
        params={"limit": "100"},
        headers=member.headers,
    )
    assert response.status == 200
    data: list[dict[str, Any]] = (await response.json())["data"]
    return data


async def _key_listed(client: TestClient[Any, Any], member: Member, key_id: str) -> Any:
    listed = await client.get("/api/v1/merchant/api-keys", headers=member.headers)
    return next(row for row in (await listed.json())["data"] if row["id"] == key_id)


@pytest.mark.both_backends
async def test_key_uses_are_written_in_one_commit_when_many_requests_share_a_flush(
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
    clock: Clock,
) -> None:
    # given an app whose key usage is written only when flushed, and a key
    recorded: list[RecordingDatabase] = []

    def wrap(real: Database) -> Database:
        recorded.append(RecordingDatabase(real))
        return recorded[0]

    app = make_app(Overrides(clock=clock, wrap_database=wrap), key_usage_interval=3600)
    client: TestClient[Any, Any] = await aiohttp_client(app)
    member = await sign_up(client)
    _, body = await _create(client, member)
    db = recorded[0]

    # when the key makes 20 requests, a second apart, and the buffer is flushed
    for _ in range(20):
        assert (await _ping(client, body["key"])).status == 200
        clock.advance(seconds=1)
    waiting = len(client.app[SERVICES].key_usage)
    unwritten = db.statements("INSERT INTO api_key_logs")
    logs = await _flushed_logs(client, member, body["id"])

    # then the requests wrote nothing themselves; one unit holds all 20 log rows and the key's
    # one last-use update, which names the latest request
    assert waiting == 20 and unwritten == []
    [unit] = [u for u in db.units if any(st.sql.startswith("INSERT INTO api_key_logs") for st in u)]
    inserts = [st for st in unit if st.sql.startswith("INSERT INTO api_key_logs")]
    updates = [st for st in unit if st.sql.startswith("UPDATE api_keys SET last_used_at")]
    assert len(inserts) == 20 and len(updates) == 1 and len(unit) == 21
    assert len(logs) == 20
    assert (await _key_listed(client, member, body["id"]))["lastUsedAt"] == max(
        entry["at"] for entry in logs
    )


async def test_a_key_last_use_never_moves_back_when_an_older_use_is_flushed_later(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    # given a key, and a second node's buffer holding an older use of it
    member = await sign_up(client)
    _, body = await _create(client, member)
    services = client.app[SERVICES]
    other_node = KeyUsage(services.actors, 3600)
    other_node.record(
        key_id=body["id"],
        company_id=member.company_id,
        method="GET",
        path="/api/v1/developer/ping",
        status_code=200,
        ip="10.0.0.2",
        request_id="req_other",
    )
    clock.advance(seconds=5)

    # when this node writes a newer use first, and the other node's flush follows
    await _ping(client, body["key"])
    await services.key_usage.flush()
    newer = (await _key_listed(client, member, body["id"]))["lastUsedAt"]
    await other_node.flush()

    # then the key keeps its latest use, and its log holds both requests
    assert (await _key_listed(client, member, body["id"]))["lastUsedAt"] == newer
    assert len(await _flushed_logs(client, member, body["id"])) == 2


@pytest.fixture
async def writer(database: Database) -> AsyncIterator[tuple[RecordingDatabase, ActorContext]]:
    """The real database behind a recording wrapper, with its own persistence actor."""
    recording = RecordingDatabase(database)
    persistence = PersistenceActor.start(recording)
    yield recording, ActorContext(recording, persistence, utcnow)
    await stop(persistence)


def _use(usage: KeyUsage, n: int) -> None:
    usage.record(
        key_id="key_a",
        company_id="co_a",
        method="POST",
        path="/api/v1/developer/sandbox/payment.completed",
        status_code=200,
        ip=None,
        request_id=f"req_{n}",
    )


@pytest.mark.both_backends
async def test_key_usage_flushes_without_waiting_for_its_interval_when_max_rows_are_waiting(
    writer: tuple[RecordingDatabase, ActorContext],
) -> None:
    # given a buffer that writes every hour, or at five rows
    db, context = writer
    usage = KeyUsage(context, 3600, max_rows=5)
    usage.start()
    try:
        # when five requests are recorded
        for n in range(5):
            _use(usage, n)

        # then they are written in one commit well before the hour is out
        await wait_until(lambda: len(db.statements("INSERT INTO api_key_logs")) == 5)
        assert db.writes == [1]
        assert await db.fetchval("SELECT COUNT(*) FROM api_key_logs") == 5
    finally:
        await usage.close()


@pytest.mark.both_backends
async def test_key_usage_writes_what_is_left_when_it_closes(
    writer: tuple[RecordingDatabase, ActorContext],
) -> None:
    # given three recorded requests and no flush yet
    db, context = writer
    usage = KeyUsage(context, 3600)
    usage.start()
    for n in range(3):
        _use(usage, n)

    # when the service shuts down
    await usage.close()

    # then they are stored
    assert len(usage) == 0
    assert await db.fetchval("SELECT COUNT(*) FROM api_key_logs") == 3


async def test_key_usage_drops_rows_past_its_capacity_when_a_flush_is_held_up(
    writer: tuple[RecordingDatabase, ActorContext],
) -> None:
    # given a buffer of at most 4 rows whose writer has not flushed
    db, context = writer
    usage = KeyUsage(context, 3600, max_rows=4, capacity=4)

    # when 6 requests are recorded
    for n in range(6):
        _use(usage, n)
    await usage.flush()

    # then 4 rows are written and 2 counted as dropped
    assert usage.dropped == 2
    assert await db.fetchval("SELECT COUNT(*) FROM api_key_logs") == 4


async def test_a_key_cannot_have_scopes_its_creator_lacks(client: TestClient[Any, Any]) -> None:

    _, developer = await owner_and_member(client, "role_developer", "dev@example.com")

    status, body = await _create(client, developer, scopes=["payments:write"])

    assert status == 403
    assert_envelope(body, 403, "insufficient_scope")


async def test_another_company_cannot_see_or_revoke_a_key(client: TestClient[Any, Any]) -> None:
    owner, stranger = await two_companies(client)
    _, body = await _create(client, owner)

    listed = await client.get("/api/v1/merchant/api-keys", headers=stranger.headers)
    revoke = await client.post(
        f"/api/v1/merchant/api-keys/{body['id']}/revoke", headers=stranger.headers
    )
    logs = await client.get(
        f"/api/v1/merchant/api-keys/{body['id']}/logs", headers=stranger.headers
    )

    assert (await listed.json())["data"] == []
    assert revoke.status == 404 and logs.status == 404
    assert (await _ping(client, body["key"])).status == 200


async def test_keys_page_by_cursor_without_duplicates(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    created = [(await _create(client, member, name=f"k{i}"))[1]["id"] for i in range(5)]

    seen: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        response = await client.get(
            "/api/v1/merchant/api-keys", params=params, headers=member.headers
        )
        page = await response.json()
        seen += page["data"]
        cursor = page["nextCursor"]
        assert page["hasMore"] is (cursor is not None)
        if cursor is None:
            break

    ids = [row["id"] for row in seen]
    assert sorted(ids) == sorted(created) and len(set(ids)) == len(ids)
    # newest first: createdAt, then id, descending
    order = [(row["createdAt"], row["id"]) for row in seen]
    assert order == sorted(order, reverse=True)


async def test_malformed_cursor_is_400_invalid_cursor(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)

    response = await client.get(
        "/api/v1/merchant/api-keys", params={"cursor": "!!!"}, headers=member.headers
    )

    await assert_refused(response, 400, "invalid_cursor")
