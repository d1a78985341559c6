"""OWASP API2:2023, broken authentication.

A session token is accepted only when genuine, current and backed by a live session row; an API
key only while unrevoked; each on its own routes (decisions 2). Sign-in codes resist guessing:
five wrong tries kill a login whatever the request names, and a code works once.
"""

from __future__ import annotations

import re
import warnings
from datetime import timedelta
from typing import Any

import jwt
import pytest
from aiohttp.test_utils import TestClient
from jwt.warnings import InsecureKeyLengthWarning

from mps.auth.tokens import AUDIENCE
from mps.domain.clock import utcnow
from mps.http.keys import SERVICES
from mps.http.routes import all_routes
from mps.http.routing import Auth, Route
from tests.helpers import (
    Member,
    answered,
    assert_envelope,
    assert_refused,
    latest_code,
    live_session,
    post_payment,
    read_as,
    sign_up,
)
from tests.keys import bearer

pytestmark = pytest.mark.both_backends

ROUTES = all_routes(development=True)
SESSION_ROUTES = [r for r in ROUTES if r.auth is Auth.SESSION]
KEY_ROUTES = [r for r in ROUTES if r.auth is Auth.API_KEY]


def _url(route: Route) -> str:
    """The route's path with every parameter filled with an id that names nothing."""
    return re.sub(r"\{[^}]+\}", "x_0000000000", route.full_path)


def _claims(member: Member, **changes: Any) -> dict[str, Any]:
    claims: dict[str, Any] = jwt.decode(member.token, options={"verify_signature": False})
    claims.update(changes)
    return claims


def _sign(client: TestClient[Any, Any], claims: dict[str, Any], algorithm: str = "HS256") -> str:
    with warnings.catch_warnings():
        # HS512 asks for a longer key than the service's; the forgery only needs a signature.
        warnings.simplefilter("ignore", InsecureKeyLengthWarning)
        return jwt.encode(claims, client.app[SERVICES].keyring.jwt_key, algorithm=algorithm)


async def _key(client: TestClient[Any, Any], member: Member, **body: Any) -> dict[str, Any]:
    payload = {"name": "server", "scopes": ["analytics:read", "payments:write"], **body}
    created = await client.post("/api/v1/merchant/api-keys", json=payload, headers=member.headers)
    key: dict[str, Any] = await answered(created)
    return key


async def _me(client: TestClient[Any, Any], token: str) -> Any:
    return await client.get("/api/v1/auth/me", headers=bearer(token))


async def test_tokens_forged_with_the_right_key_but_wrong_claims_are_refused(
    client: TestClient[Any, Any],
) -> None:
    # given tokens signed with the service's own key whose claims are not the service's
    member = await sign_up(client)
    claims = _claims(member)
    later = int((utcnow() + timedelta(hours=1)).timestamp())
    forged = {
        "wrong issuer": _sign(client, {**claims, "iss": "someone-else"}),
        "no audience": _sign(client, {k: v for k, v in claims.items() if k != "aud"}),
        "no expiry": _sign(client, {k: v for k, v in claims.items() if k != "exp"}),
        "unknown session": _sign(client, {**claims, "sid": "ses_000000000000000000"}),
        "another user": _sign(client, {**claims, "sub": "usr_000000000000000000"}),
        "not yet valid": _sign(client, {**claims, "nbf": later}),
        "another HMAC algorithm": _sign(client, claims, "HS512"),
        "wrong audience list": _sign(client, {**claims, "aud": ["someone-else"]}),
    }

    for name, token in forged.items():
        # when
        response = await _me(client, token)

        # then
        assert response.status == 401, name
        assert_envelope(await response.json(), 401, "unauthenticated")
    assert (await _me(client, member.token)).status == 200
    assert claims["aud"] == AUDIENCE


async def test_a_token_signed_with_the_raw_or_a_guessed_secret_is_refused(
    client: TestClient[Any, Any],
) -> None:
    # given tokens signed with the configured secret itself (tokens are signed with a key
    # derived from it) and with a guess
    member = await sign_up(client)
    for guess in (b"test-session-secret-0123456789abcdef", b"secret".ljust(32, b"0")):
        forged = jwt.encode(_claims(member), guess, algorithm="HS256")

        response = await _me(client, forged)

        assert response.status == 401


async def test_credentials_outside_the_bearer_header_are_ignored(
    client: TestClient[Any, Any],
) -> None:
    # given a genuine token sent everywhere but where it belongs
    member = await sign_up(client)
    attempts = [
        ({"Authorization": f"Basic {member.token}"}, {}),
        ({"Authorization": member.token}, {}),
        ({"Cookie": f"session={member.token}"}, {}),
        ({}, {"access_token": member.token}),
    ]

    for headers, params in attempts:
        # when
        response = await client.get("/api/v1/merchant/settings", headers=headers, params=params)

        # then
        assert response.status in {400, 401}, (headers, params)
        assert (await response.json())["ok"] is False


async def test_a_logged_out_session_is_refused_on_every_session_route(
    client: TestClient[Any, Any],
) -> None:
    # given
    member = await sign_up(client)
    assert (await client.post("/api/v1/auth/logout", headers=member.headers)).status == 200

    for route in SESSION_ROUTES:
        # when
        response = await client.request(route.method, _url(route), headers=member.headers)

        # then
        assert response.status == 401, route.full_path
        assert_envelope(await response.json(), 401, "unauthenticated")


async def test_a_session_replaced_by_a_mode_switch_cannot_write(
    client: TestClient[Any, Any],
) -> None:
    # given
    member = await sign_up(client)
    live = await live_session(client, member)

    # when the old test-mode token tries to create a payment
    response = await post_payment(client, member, amountMinor="100")

    # then
    assert response.status == 401
    assert (await read_as(client, live, "/api/v1/merchant/payments"))["data"] == []


async def test_an_api_key_is_refused_on_every_session_route(
    client: TestClient[Any, Any],
) -> None:
    # given a secret and a publishable key with every scope their creator has
    member = await sign_up(client)
    keys = [
        (await _key(client, member))["key"],
        (await _key(client, member, type="publishable"))["key"],
    ]

    for key in keys:
        for route in SESSION_ROUTES:
            # when
            response = await client.request(route.method, _url(route), headers=bearer(key))

            # then
            assert response.status == 401, (key[:8], route.full_path)
            assert_envelope(await response.json(), 401, "session_required")


async def test_a_session_is_refused_on_every_api_key_route(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)

    for route in KEY_ROUTES:
        response = await client.request(route.method, _url(route), headers=member.headers)

        assert response.status == 401, route.full_path
        assert_envelope(await response.json(), 401, "api_key_required")


async def test_a_revoked_key_is_refused_by_the_sandbox_too(client: TestClient[Any, Any]) -> None:
    # given a revoked key that could simulate payments
    member = await sign_up(client)
    key = await _key(client, member)
    revoked = await client.post(
        f"/api/v1/merchant/api-keys/{key['id']}/revoke", headers=member.headers
    )
    assert revoked.status == 200

    # when
    response = await client.post(
        "/api/v1/developer/sandbox/payment.completed",
        json={"paymentId": "pay_0000000000"},
        headers=bearer(key["key"]),
    )

    # then
    await assert_refused(response, 401, "unauthenticated")


async def test_a_key_altered_in_its_secret_part_is_refused(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    key: str = (await _key(client, member))["key"]
    last = key[-1]
    altered = key[:-1] + ("A" if last != "A" else "B")

    for candidate in (altered, key.replace("sk_test_", "sk_live_"), key + "0"):
        response = await client.get("/api/v1/developer/ping", headers=bearer(candidate))

        assert response.status == 401, candidate[:8]


async def test_wrong_codes_kill_the_login_at_five_whatever_company_each_names(
    client: TestClient[Any, Any],
) -> None:
    # given a member's login, and each companyId a guesser might send
    member = await sign_up(client, "ann@example.com", "Ann's")
    stranger = await sign_up(client, "bob@example.com", "Bob's")
    login = await client.post("/api/v1/auth/login", json={"email": member.email})
    login_id = (await login.json())["loginId"]
    code = await latest_code(client, member.email)
    wrong = f"{(int(code) + 1) % 1_000_000:06d}"
    named: list[dict[str, str]] = [
        {},
        {"companyId": member.company_id},
        {"companyId": stranger.company_id},
        {"companyId": "co_000000000000000000"},
        {"companyId": member.company_id},
    ]

    # when five wrong codes are sent, each naming a different company or none
    answers = []
    for extra in named:
        response = await client.post(
            "/api/v1/auth/otp/verify", json={"loginId": login_id, "code": wrong, **extra}
        )
        answers.append((response.status, (await response.json())["code"]))

    # then every wrong try answers alike, and then even the right code is refused
    assert set(answers) == {(400, "invalid_code")}
    fresh = await client.post("/api/v1/auth/otp/request", json={"loginId": login_id})
    assert fresh.status == 200
    right = await client.post(
        "/api/v1/auth/otp/verify",
        json={"loginId": login_id, "code": await latest_code(client, member.email)},
    )
    await assert_refused(right, 400, "invalid_code")


async def test_a_code_is_bound_to_its_login_and_works_once(client: TestClient[Any, Any]) -> None:
    # given two logins of the same member, each with its own code
    member = await sign_up(client, "ann@example.com")
    first = await client.post("/api/v1/auth/login", json={"email": member.email})
    first_id = (await first.json())["loginId"]
    first_code = await latest_code(client, member.email)
    second = await client.post("/api/v1/auth/login", json={"email": member.email})
    second_id = (await second.json())["loginId"]
    second_code = await latest_code(client, member.email)
    while second_code == first_code:  # random codes coincide once in a million: draw again
        await client.post("/api/v1/auth/otp/request", json={"loginId": second_id})
        second_code = await latest_code(client, member.email)

    # when the first login's code is sent for the second login, then used twice on its own
    crossed = await client.post(
        "/api/v1/auth/otp/verify", json={"loginId": second_id, "code": first_code}
    )
    used = await client.post(
        "/api/v1/auth/otp/verify", json={"loginId": first_id, "code": first_code}
    )
    replayed = await client.post(
        "/api/v1/auth/otp/verify", json={"loginId": first_id, "code": first_code}
    )

    # then
    assert crossed.status == 400
    assert used.status == 200
    await assert_refused(replayed, 400)
