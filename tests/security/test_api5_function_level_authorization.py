"""OWASP API5:2023, broken function level authorization.

Every route names the one scope it needs and a session's scopes come from its member's role
(decisions 3, 20): each built-in role reaches exactly the routes its scopes allow, on the whole
route table, and a member cannot widen their reach by switching mode or minting keys.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.domain.scopes import BUILTIN_ROLES
from mps.http.routes import all_routes
from mps.http.routing import Auth, Route
from tests.helpers import (
    add_member,
    assert_envelope,
    assert_refused,
    owner_and_member,
    post_as,
    sign_up,
)
from tests.keys import bearer, create_key

pytestmark = pytest.mark.both_backends

SCOPED_ROUTES = [
    r for r in all_routes(development=True) if r.auth is Auth.SESSION and r.scope is not None
]


def _url(route: Route) -> str:
    return re.sub(r"\{[^}]+\}", "x_0000000000", route.full_path)


@pytest.mark.parametrize("role_id", ["role_admin", "role_finance", "role_developer", "role_viewer"])
async def test_a_member_reaches_exactly_the_routes_their_role_allows(
    client: TestClient[Any, Any], role_id: str
) -> None:
    # given a member of the role
    owner = await sign_up(client)
    member = await add_member(client, owner, "member@example.com", role_id)
    scopes = BUILTIN_ROLES[role_id].scopes

    for route in SCOPED_ROUTES:
        # when they call the route (without a body: an allowed call stops at validation)
        response = await client.request(route.method, _url(route), headers=member.headers)

        # then a route whose scope the role lacks is 403 naming it, and any other is not 403
        if route.scope in scopes:
            assert response.status != 403, (route.method, route.full_path)
        else:
            body = await assert_refused(response, 403, "insufficient_scope")
            assert str(route.scope) in body["message"]


async def test_a_viewer_cannot_write_after_switching_mode(client: TestClient[Any, Any]) -> None:
    # given a viewer who switched to live mode, which issues a new session
    _, viewer = await owner_and_member(client, "role_viewer", "viewer@example.com")
    switched = await client.post(
        "/api/v1/auth/session/mode", json={"mode": "live"}, headers=viewer.headers
    )
    live = bearer((await switched.json())["sessionToken"])

    # when
    created = await client.post(
        "/api/v1/merchant/payments", json={"amountMinor": "100", "currency": "USD"}, headers=live
    )
    key = await client.post(
        "/api/v1/merchant/api-keys",
        json={"name": "ci", "scopes": ["analytics:read"], "mode": "live"},
        headers=live,
    )

    # then the role still decides
    assert created.status == 403 and key.status == 403
    assert_envelope(await created.json(), 403, "insufficient_scope")
    assert_envelope(await key.json(), 403, "insufficient_scope")


async def test_a_viewer_cannot_revoke_the_owners_key_or_cancel_their_payment(
    client: TestClient[Any, Any],
) -> None:
    # given the owner's key and payment, and a viewer of the same company who can see both
    owner, viewer = await owner_and_member(client, "role_viewer", "viewer@example.com")
    key = await create_key(client, owner, ["analytics:read"])
    payment = await post_as(
        client, owner, "/api/v1/merchant/payments", {"amountMinor": "100", "currency": "USD"}
    )
    payment_id = (await payment.json())["id"]

    # when
    revoke = await client.post(
        f"/api/v1/merchant/api-keys/{key['id']}/revoke", headers=viewer.headers
    )
    cancel = await client.post(
        f"/api/v1/merchant/payments/{payment_id}/cancel", headers=viewer.headers
    )

    # then both are refused and nothing changed
    assert revoke.status == 403 and cancel.status == 403
    ping = await client.get("/api/v1/developer/ping", headers=bearer(key["key"]))
    assert ping.status == 200
    got = await client.get(f"/api/v1/merchant/payments/{payment_id}", headers=viewer.headers)
    assert (await got.json())["status"] == "PENDING"


async def test_a_developer_can_mint_keys_only_with_the_read_scopes_they_hold(
    client: TestClient[Any, Any],
) -> None:
    # given a developer: read scopes and settings:write
    owner, developer = await owner_and_member(client, "role_developer", "dev@example.com")

    # when they mint a key for each write scope they lack, and one with a read scope
    refused = [
        await post_as(
            client,
            developer,
            "/api/v1/merchant/api-keys",
            {"name": "ci", "scopes": ["analytics:read", scope]},
        )
        for scope in ("payments:write", "team:write")
    ]
    allowed = await post_as(
        client, developer, "/api/v1/merchant/api-keys", {"name": "ci", "scopes": ["analytics:read"]}
    )

    # then
    assert [r.status for r in refused] == [403, 403]
    assert allowed.status == 201
    listed = await client.get("/api/v1/merchant/api-keys", headers=owner.headers)
    assert [k["scopes"] for k in (await listed.json())["data"]] == [["analytics:read"]]


async def test_a_publishable_key_with_every_scope_reaches_no_dashboard_function(
    client: TestClient[Any, Any],
) -> None:
    # given the owner's publishable key holding write scopes
    owner = await sign_up(client)
    scopes = ["payments:write", "settings:write", "analytics:read"]
    key = (await create_key(client, owner, scopes, "browser", type="publishable"))["key"]
    assert key.startswith("pk_test_")
    calls = [
        ("POST", "/api/v1/merchant/payments", {"amountMinor": "100", "currency": "USD"}),
        ("POST", "/api/v1/merchant/api-keys", {"name": "x", "scopes": ["payments:write"]}),
        ("PATCH", "/api/v1/merchant/settings", {"payoutSchedule": "daily"}),
        ("GET", "/api/v1/developer/openapi.json", None),
    ]

    for method, path, body in calls:
        # when
        response = await client.request(method, path, json=body, headers=bearer(key))

        # then
        assert response.status == 401, path
        assert_envelope(await response.json(), 401, "session_required")
    listed = await client.get("/api/v1/merchant/api-keys", headers=owner.headers)
    assert len((await listed.json())["data"]) == 1
