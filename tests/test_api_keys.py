"""API keys: shown once, hashed at rest, scoped, revocable, logged (decisions 2)."""

from __future__ import annotations

import re
from typing import Any

from aiohttp.test_utils import TestClient

from mps.http.keys import SERVICES
from tests.helpers import Member, assert_envelope, sign_up


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

    _, live_pub = await _create(client, member, type="publishable", mode="live")

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

    assert response.status == 403
    assert_envelope(await response.json(), 403, "insufficient_scope")


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
    assert refused.status == 401
    assert_envelope(await refused.json(), 401, "unauthenticated")


async def test_each_key_request_is_logged(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    _, body = await _create(client, member, scopes=["payments:read"])
    await _ping(client, body["key"])  # 403: logged too

    logs = await _eventually_logged(client, member, body["id"])

    [entry] = logs
    assert entry["method"] == "GET" and entry["path"] == "/api/v1/developer/ping"
    assert entry["statusCode"] == 403 and entry["requestId"].startswith("req_")
    assert entry["ip"] == "127.0.0.1" and entry["at"].endswith("Z")


async def _eventually_logged(
    client: TestClient[Any, Any], member: Member, key_id: str
) -> list[dict[str, Any]]:
    import asyncio

    # The log is written by a told (not awaited) commit, so give the writer a moment.
    for _ in range(50):
        response = await client.get(
            f"/api/v1/merchant/api-keys/{key_id}/logs", headers=member.headers
        )
        data: list[dict[str, Any]] = (await response.json())["data"]
        if data:
            return data
        await asyncio.sleep(0.02)
    return []


async def test_a_key_cannot_have_scopes_its_creator_lacks(client: TestClient[Any, Any]) -> None:
    from tests.test_auth_sessions import _add_member

    owner = await sign_up(client)
    developer = await _add_member(client, owner, "dev@example.com", "role_developer")

    status, body = await _create(client, developer, scopes=["payments:write"])

    assert status == 403
    assert_envelope(body, 403, "insufficient_scope")


async def test_another_company_cannot_see_or_revoke_a_key(client: TestClient[Any, Any]) -> None:
    owner = await sign_up(client)
    stranger = await sign_up(client, "stranger@example.com", "Stranger Co")
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

    assert response.status == 400
    assert_envelope(await response.json(), 400, "invalid_cursor")
