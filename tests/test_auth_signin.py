"""Sign-in by emailed code, sessions and their rejections (decisions 2)."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.helpers import sign_up


async def test_signup_then_code_then_me_returns_the_owner(client: TestClient[Any, Any]) -> None:
    # given
    member = await sign_up(client, "Founder@Example.com", "Founders Inc")

    # when
    response = await client.get("/api/v1/auth/me", headers=member.headers)

    # then
    assert response.status == 200
    body = await response.json()
    assert body["ok"] is True and body["requestId"] == response.headers["X-Request-Id"]
    assert body["user"]["email"] == "founder@example.com"
    assert body["company"] == {
        "id": member.company_id,
        "name": "Founders Inc",
        "createdAt": body["company"]["createdAt"],
    }
    assert body["role"]["name"] == "owner"
    assert body["mode"] == "test" and body["livemode"] is False
    assert "payments:write" in body["scopes"] and "audit:read" in body["scopes"]
