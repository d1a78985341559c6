"""Server-to-server keys (decisions 2): off by default; once a company turns on apiKeyAccess for a
mode, a secret key of that mode calls the merchant routes of its scopes; nothing else changes."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.domain.scopes import ALL_SCOPES, KEY_ROUTE_SCOPES, PING_SCOPE, SANDBOX_SCOPES
from mps.http.routes import all_routes
from mps.http.routes.sandbox import KINDS
from mps.http.routing import Auth
from tests.helpers import (
    Member,
    assert_envelope,
    create_payment,
    live_session,
    pay,
    post_as,
    sign_up,
)
from tests.money import ACCOUNT, until

SECRET_SCOPES = sorted(KEY_ROUTE_SCOPES | {PING_SCOPE})
INVOICE = {
    "currency": "USD",
    "customerEmail": "buyer@example.com",
    "items": [{"description": "Design work", "quantity": 1, "unitAmountMinor": "5000"}],
}


async def _key(
    client: TestClient[Any, Any], owner: Member, scopes: list[str] = SECRET_SCOPES, **body: Any
) -> tuple[str, str]:
    """A new key's secret and id."""
    response = await post_as(
        client, owner, "/api/v1/merchant/api-keys", {"name": "backend", "scopes": scopes, **body}
    )
    created = await response.json()
    assert response.status == 201, created
    return created["key"], created["id"]


async def _access(client: TestClient[Any, Any], owner: Member, on: bool) -> dict[str, Any]:
    response = await client.patch(
        "/api/v1/merchant/settings", json={"apiKeyAccess": on}, headers=owner.headers
    )
    body: dict[str, Any] = await response.json()
    assert response.status == 200, body
    return body


async def _owner_with_key(
    client: TestClient[Any, Any], scopes: list[str] = SECRET_SCOPES, *, access: bool = True
) -> tuple[Member, str, str]:
    """A new company's owner, and the secret and id of a key of theirs; the company lets its
    secret keys call the merchant routes unless `access` is False."""
    owner = await sign_up(client)
    key, key_id = await _key(client, owner, scopes)
    if access:
        await _access(client, owner, True)
    return owner, key, key_id


def _as(key: str) -> Member:
    """The key in the shape the request helpers take."""
    return Member(key, "", "", "")


def _assert_refused(status: int, body: Any, expected: int, code: str | None = None) -> None:
    """What `_call` answered is a refusal with `expected` (and `code`) in the error envelope."""
    assert status == expected, body
    assert_envelope(body, expected, code)


async def _call(
    client: TestClient[Any, Any], key: str, method: str, path: str, body: Any = None
) -> tuple[int, Any]:
    response = await client.request(
        method, f"/api/v1{path}", json=body, headers={"Authorization": f"Bearer {key}"}
    )
    return response.status, await response.json()


async def test_access_is_off_by_default_and_a_key_then_gets_session_required(
    client: TestClient[Any, Any],
) -> None:
    owner, key, _ = await _owner_with_key(client, access=False)

    settings = await client.get("/api/v1/merchant/settings", headers=owner.headers)
    status, body = await _call(
        client, key, "POST", "/merchant/payments", {"amountMinor": "100", "currency": "USD"}
    )

    assert (await settings.json())["apiKeyAccess"] is False
    _assert_refused(status, body, 401, "session_required")
    assert "apiKeyAccess" in body["message"]


async def test_turning_access_on_lets_a_cached_key_create_and_read_payments_at_once(
    client: TestClient[Any, Any],
) -> None:
    owner, key, _ = await _owner_with_key(client, access=False)
    refused, _ = await _call(client, key, "GET", "/merchant/payments")

    settings = await _access(client, owner, True)
    payment = await create_payment(client, _as(key), amountMinor="1999", currency="usd")
    got_status, got = await _call(client, key, "GET", f"/merchant/payments/{payment['id']}")
    listed_status, listed = await _call(client, key, "GET", "/merchant/payments")

    assert refused == 401 and settings["apiKeyAccess"] is True
    assert got_status == 200 and got["amountMinor"] == "1999" and got["livemode"] is False
    assert listed_status == 200 and [p["id"] for p in listed["data"]] == [payment["id"]]
    # The same payment seen by the dashboard: one company, whichever credential made it.
    seen = await client.get(f"/api/v1/merchant/payments/{payment['id']}", headers=owner.headers)
    assert seen.status == 200


async def test_every_key_route_family_answers_a_secret_key_and_the_rest_stay_session_only(
    client: TestClient[Any, Any],
) -> None:
    _, key, _ = await _owner_with_key(client)
    paid = await create_payment(client, _as(key), amountMinor="5000")
    assert (await pay(client, paid["reference"])).status == 200

    writes = [
        ("POST", "/merchant/refunds", {"paymentId": paid["id"], "amountMinor": "100"}, 201),
        ("POST", "/merchant/bank-accounts", ACCOUNT, 201),
        ("POST", "/merchant/company-cards", {"nickname": "Ads", "currency": "USD"}, 201),
        ("POST", "/merchant/invoices", INVOICE, 201),
    ]
    reads = [
        "/merchant/payments/stats",
        "/merchant/refunds",
        "/merchant/balance",
        "/merchant/balance/transactions",
        "/merchant/bank-accounts",
        "/merchant/payouts",
        "/merchant/cards",
        "/merchant/customers",
        "/merchant/invoices",
        "/merchant/invoices/stats",
        "/merchant/events",
    ]
    session_only = [
        ("GET", "/merchant/api-keys"),
        ("GET", "/merchant/settings"),
        ("GET", "/merchant/kyc"),
        ("GET", "/merchant/webhooks"),
        ("GET", "/merchant/analytics"),
        ("GET", "/team/members"),
        ("GET", "/team/audit"),
        ("GET", "/auth/me"),
    ]

    for method, path, body, expected in writes:
        status, answer = await _call(client, key, method, path, body)
        assert status == expected, (path, answer)
    for path in reads:
        status, answer = await _call(client, key, "GET", path)
        assert status == 200, (path, answer)
    for method, path in session_only:
        status, answer = await _call(client, key, method, path)
        assert status == 401, path
        assert_envelope(answer, 401, "session_required")


async def test_a_key_holds_only_its_own_scopes(client: TestClient[Any, Any]) -> None:
    _, key, _ = await _owner_with_key(client, ["payments:read"])

    read, _ = await _call(client, key, "GET", "/merchant/payments")
    write, body = await _call(
        client, key, "POST", "/merchant/payments", {"amountMinor": "100", "currency": "USD"}
    )
    other, _ = await _call(client, key, "GET", "/merchant/refunds")

    assert read == 200
    assert write == 403 and other == 403
    assert_envelope(body, 403, "insufficient_scope")


async def test_publishable_keys_and_keys_of_the_other_mode_stay_refused(
    client: TestClient[Any, Any],
) -> None:
    owner = await sign_up(client)
    publishable, _ = await _key(client, owner, ["payments:write"], type="publishable")
    live, _ = await _key(client, owner, ["payments:read"], mode="live")
    await _access(client, owner, True)  # test mode only

    results = [
        await _call(
            client,
            publishable,
            "POST",
            "/merchant/payments",
            {"amountMinor": "1", "currency": "USD"},
        ),
        await _call(client, live, "GET", "/merchant/payments"),
    ]

    for status, body in results:
        assert status == 401
        assert_envelope(body, 401, "session_required")
    assert "publishable" in results[0][1]["message"]
    assert "live" in results[1][1]["message"]


async def test_turning_access_off_or_revoking_the_key_refuses_it_at_once(
    client: TestClient[Any, Any],
) -> None:
    owner = await sign_up(client)
    first, _ = await _key(client, owner)
    second, second_id = await _key(client, owner)
    await _access(client, owner, True)
    assert (await _call(client, first, "GET", "/merchant/payments"))[0] == 200
    assert (await _call(client, second, "GET", "/merchant/payments"))[0] == 200

    await _access(client, owner, False)
    off, _ = await _call(client, first, "GET", "/merchant/payments")
    await _access(client, owner, True)
    revoked = await client.post(
        f"/api/v1/merchant/api-keys/{second_id}/revoke", headers=owner.headers
    )
    after, _ = await _call(client, second, "GET", "/merchant/payments")
    back, _ = await _call(client, first, "GET", "/merchant/payments")

    assert off == 401
    assert revoked.status == 200 and after == 401
    assert back == 200


async def test_an_unknown_or_revoked_key_is_session_required_as_before(
    client: TestClient[Any, Any],
) -> None:
    owner, key, key_id = await _owner_with_key(client, access=False)
    await client.post(f"/api/v1/merchant/api-keys/{key_id}/revoke", headers=owner.headers)

    answers = [
        await _call(client, token, "GET", "/merchant/payments")
        for token in (key, "sk_test_" + "x" * 40)
    ]

    for status, body in answers:
        assert status == 401
        assert_envelope(body, 401, "session_required")


async def test_a_revoked_key_where_access_is_on_is_refused_for_the_key_not_the_session(
    client: TestClient[Any, Any],
) -> None:
    # given a company that lets its secret keys call the merchant routes, and a revoked key
    owner, key, key_id = await _owner_with_key(client)
    await client.post(f"/api/v1/merchant/api-keys/{key_id}/revoke", headers=owner.headers)

    # when the revoked key calls a merchant route, and again once access is off
    status_on, on = await _call(client, key, "GET", "/merchant/payments")
    await _access(client, owner, False)
    status_off, off = await _call(client, key, "GET", "/merchant/payments")
    status_unknown, unknown = await _call(
        client, "sk_test_" + "x" * 40, "GET", "/merchant/payments"
    )

    # then with access on the key is the problem; with it off, session_required says both
    _assert_refused(status_on, on, 401, "unauthenticated")
    assert "revoked" in on["message"] and "session_required" not in on["message"]
    _assert_refused(status_off, off, 401, "session_required")
    assert "apiKeyAccess" in off["message"] and "revoked" in off["message"]
    _assert_refused(status_unknown, unknown, 401, "session_required")
    assert "not valid" in unknown["message"]


async def test_key_calls_count_against_the_key_limit_and_appear_in_its_log(
    client: TestClient[Any, Any],
) -> None:
    owner, key, key_id = await _owner_with_key(client)

    response = await client.get(
        "/api/v1/merchant/payments", headers={"Authorization": f"Bearer {key}"}
    )

    assert response.status == 200
    assert response.headers["RateLimit-Policy"].startswith('"developer";q=1200')

    async def logged() -> bool:
        logs = await client.get(f"/api/v1/merchant/api-keys/{key_id}/logs", headers=owner.headers)
        rows = (await logs.json())["data"]
        return any(
            r["path"] == "/api/v1/merchant/payments" and r["statusCode"] == 200 for r in rows
        )

    await until(logged)


async def test_changes_a_key_makes_are_recorded_as_the_key(client: TestClient[Any, Any]) -> None:
    owner, key, key_id = await _owner_with_key(client)

    status, account = await _call(client, key, "POST", "/merchant/bank-accounts", ACCOUNT)
    audit = await client.get("/api/v1/team/audit", headers=owner.headers)
    entries = (await audit.json())["data"]

    assert status == 201
    [created] = [e for e in entries if e["action"] == "bank_account.created"]
    assert created["actor"] == {"type": "api_key", "id": key_id}
    [setting] = [e for e in entries if e["action"] == "settings.updated"]
    assert setting["actor"]["type"] == "user"
    # The owners are told who added the account: the key, not a person.
    mail = await client.get("/api/v1/dev/mailbox", params={"to": owner.email})
    assert any(key_id in m["text"] for m in (await mail.json())["data"]), account


async def test_a_key_names_the_member_of_a_member_card(client: TestClient[Any, Any]) -> None:
    owner, key, _ = await _owner_with_key(client)
    card = {"cardholderName": "Ann Lee", "currency": "USD"}

    unnamed, body = await _call(client, key, "POST", "/merchant/cards", card)
    named, issued = await _call(
        client, key, "POST", "/merchant/cards", {**card, "memberId": owner.user_id}
    )

    _assert_refused(unnamed, body, 400)
    assert body["errors"][0]["field"] == "memberId"
    assert named == 201, issued


@pytest.mark.parametrize(
    ("body", "unusable"),
    [
        ({"scopes": ["payments:read", "team:read"]}, "team:read"),
        ({"scopes": ["audit:read"]}, "audit:read"),
        ({"scopes": ["payments:read"], "type": "publishable"}, "payments:read"),
        ({"scopes": ["payments:write"], "type": "publishable", "mode": "live"}, "payments:write"),
    ],
)
async def test_a_key_is_not_made_with_a_scope_it_can_never_use(
    client: TestClient[Any, Any], body: dict[str, Any], unusable: str
) -> None:
    owner = await sign_up(client)

    response = await client.post(
        "/api/v1/merchant/api-keys", json={"name": "x", **body}, headers=owner.headers
    )
    answer = await response.json()
    listed = await client.get("/api/v1/merchant/api-keys", headers=owner.headers)

    assert response.status == 400
    assert_envelope(answer, 400)
    assert answer["errors"][0]["field"] == "scopes"
    assert unusable in answer["message"] and "never use" in answer["message"]
    assert (await listed.json())["data"] == []


async def test_settings_rename_the_company_and_audit_the_access_switch(
    client: TestClient[Any, Any],
) -> None:
    owner = await sign_up(client)

    response = await client.patch(
        "/api/v1/merchant/settings",
        json={"name": "Acme Trading", "apiKeyAccess": True},
        headers=owner.headers,
    )
    in_live = (await live_session(client, owner)).headers
    live_settings = await client.get("/api/v1/merchant/settings", headers=in_live)
    audit = await client.get("/api/v1/team/audit", headers=in_live)

    body = await response.json()
    assert response.status == 200 and body["name"] == "Acme Trading" and body["apiKeyAccess"]
    shown = await live_settings.json()
    # The name is the company's; the switch is the mode's.
    assert shown["name"] == "Acme Trading" and shown["apiKeyAccess"] is False
    [entry] = [e for e in (await audit.json())["data"] if e["action"] == "settings.updated"]
    assert entry["details"]["changes"] == {"api_key_access": True, "name": "Acme Trading"}


def test_the_scope_rules_match_the_route_table() -> None:
    routes = all_routes(development=True)
    keyed = {r.scope for r in routes if r.key_access}
    developer = {r.scope for r in routes if r.auth is Auth.API_KEY and r.scope}
    sandbox = {kind.scope for kind in KINDS.values()}

    assert keyed == KEY_ROUTE_SCOPES
    assert sandbox == SANDBOX_SCOPES
    assert developer == {PING_SCOPE}
    never = set(ALL_SCOPES) - KEY_ROUTE_SCOPES - {PING_SCOPE}
    assert never == {"team:read", "team:write", "audit:read"}
    assert all(r.path.startswith("/merchant/") for r in routes if r.key_access)
