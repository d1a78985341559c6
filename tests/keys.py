"""API keys as a member makes them through the API, and the headers that present them."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.helpers import Member, post_as


async def create_key(
    client: TestClient[Any, Any], member: Member, scopes: list[str], name: str = "ci", **fields: Any
) -> dict[str, Any]:
    """A new API key of `member`'s, made through the API (which must answer 201): the created
    body, its one-time secret under "key"."""
    body = {"name": name, "scopes": scopes, **fields}
    response = await post_as(client, member, "/api/v1/merchant/api-keys", body)
    assert response.status == 201, await response.text()
    created: dict[str, Any] = await response.json()
    return created


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


async def allow_key_access(client: TestClient[Any, Any], owner: Member) -> None:
    """Turn on API-key access to the company's settings, as its owner does."""
    response = await client.patch(
        "/api/v1/merchant/settings", json={"apiKeyAccess": True}, headers=owner.headers
    )
    assert response.status == 200, await response.text()
