"""Session tokens are accepted only when genuine, current and unrevoked (decisions 2)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import jwt
import orjson
import pytest
from aiohttp.test_utils import TestClient
from cryptography.hazmat.primitives.asymmetric import rsa

from mps.auth.tokens import AUDIENCE, ISSUER
from mps.domain.clock import utcnow
from mps.http.keys import SERVICES
from tests.conftest import Clock
from tests.helpers import (
    Member,
    assert_envelope,
    assert_refused,
    owner_and_member,
    post_as,
    sign_up,
)
from tests.keys import create_key


def _claims(member: Member, **changes: Any) -> dict[str, Any]:
    claims = jwt.decode(member.token, options={"verify_signature": False})
    claims.update(changes)
    return claims


def _signing_key(client: TestClient[Any, Any]) -> bytes:
    key: bytes = client.app[SERVICES].keyring.jwt_key
    return key


async def _me(client: TestClient[Any, Any], token: str) -> Any:
    return await client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})


async def test_session_token_carries_the_contract_claims(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)

    claims = _claims(member)
    header = jwt.get_unverified_header(member.token)

    assert header["alg"] == "HS256"
    assert claims["sub"] == member.user_id and claims["cid"] == member.company_id
    assert claims["sid"].startswith("ses_") and claims["mode"] == "test"
    assert claims["iss"] == ISSUER and claims["aud"] == AUDIENCE
    assert claims["exp"] - claims["iat"] == 12 * 3600


async def test_no_credential_is_401_unauthenticated(client: TestClient[Any, Any]) -> None:
    response = await client.get("/api/v1/auth/me")

    await assert_refused(response, 401, "unauthenticated")


def _unsigned(client: TestClient[Any, Any], member: Member) -> str:
    return jwt.encode(_claims(member), key="", algorithm="none")


def _signed_with_an_attackers_rsa_key(client: TestClient[Any, Any], member: Member) -> str:
    # As in an algorithm-confusion attack: another algorithm family, with a key of their own.
    attacker_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return jwt.encode(_claims(member), attacker_key, algorithm="RS256")


def _for_another_audience(client: TestClient[Any, Any], member: Member) -> str:
    return jwt.encode(_claims(member, aud="someone-else"), _signing_key(client), algorithm="HS256")


@pytest.mark.parametrize(
    "forge",
    [_unsigned, _signed_with_an_attackers_rsa_key, _for_another_audience],
    ids=["alg_none", "another_algorithm_family", "wrong_audience"],
)
async def test_a_forged_token_is_refused_as_unauthenticated(
    client: TestClient[Any, Any], forge: Callable[[TestClient[Any, Any], Member], str]
) -> None:
    member = await sign_up(client)

    response = await _me(client, forge(client, member))

    await assert_refused(response, 401, "unauthenticated")


async def test_tampered_token_is_refused(client: TestClient[Any, Any]) -> None:
    # given a genuine token whose payload is swapped for another company's
    member = await sign_up(client)
    other = await sign_up(client, "other@example.com", "Other Co")
    header, _payload, signature = member.token.split(".")
    payload = base64.urlsafe_b64encode(orjson.dumps(_claims(member, cid=other.company_id))).rstrip(
        b"="
    )

    # when
    response = await _me(client, f"{header}.{payload.decode()}.{signature}")

    # then
    assert response.status == 401


async def test_expired_token_is_refused(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    past = int((utcnow() - timedelta(hours=1)).timestamp())
    expired = jwt.encode(_claims(member, exp=past), _signing_key(client), algorithm="HS256")

    response = await _me(client, expired)

    body = await response.json()
    assert response.status == 401
    assert "expired" in body["message"]


async def test_session_past_its_stored_expiry_is_refused(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member = await sign_up(client)

    clock.advance(hours=12, seconds=1)
    response = await _me(client, member.token)

    assert response.status == 401


async def test_logout_revokes_the_session_at_once(client: TestClient[Any, Any]) -> None:
    # given
    member = await sign_up(client)
    assert (await _me(client, member.token)).status == 200

    # when
    response = await client.post("/api/v1/auth/logout", headers=member.headers)

    # then
    assert response.status == 200
    refused = await _me(client, member.token)
    await assert_refused(refused, 401, "unauthenticated")


async def test_api_key_on_a_session_route_is_401_session_required(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    key = (await create_key(client, member, ["analytics:read"]))["key"]

    response = await _me(client, key)

    await assert_refused(response, 401, "session_required")


async def test_session_on_an_api_key_route_is_401_api_key_required(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)

    response = await client.get("/api/v1/developer/ping", headers=member.headers)

    await assert_refused(response, 401, "api_key_required")


async def test_member_without_the_scope_is_403_insufficient_scope(
    client: TestClient[Any, Any],
) -> None:
    # given a viewer (read scopes only) of the company
    _, viewer = await owner_and_member(client, "role_viewer", "viewer@example.com")

    # when the viewer tries a write
    response = await post_as(
        client, viewer, "/api/v1/merchant/api-keys", {"name": "ci", "scopes": ["analytics:read"]}
    )

    # then
    body = await assert_refused(response, 403, "insufficient_scope")
    assert "settings:write" in body["message"]
    readable = await client.get("/api/v1/merchant/api-keys", headers=viewer.headers)
    assert readable.status == 200


async def test_switching_mode_issues_a_new_session_and_revokes_the_old(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)

    response = await post_as(client, member, "/api/v1/auth/session/mode", {"mode": "live"})

    body = await response.json()
    assert response.status == 200
    assert body["mode"] == "live" and body["livemode"] is True
    me = await _me(client, body["sessionToken"])
    assert (await me.json())["mode"] == "live"
    assert (await _me(client, member.token)).status == 401


async def test_the_old_token_after_a_mode_switch_is_refused_naming_the_switch(
    client: TestClient[Any, Any],
) -> None:
    # given a member who signed out of one session and switched another to live
    member = await sign_up(client)
    other = await sign_up(client, "other@example.com")
    await client.post("/api/v1/auth/logout", headers=other.headers)

    # when the switch answers, and the old tokens are used again
    response = await post_as(client, member, "/api/v1/auth/session/mode", {"mode": "live"})
    switched = await _me(client, member.token)
    signed_out = await _me(client, other.token)

    # then the switch says the old token ended, and only its refusal names the switch
    body = await response.json()
    assert response.status == 200 and body["previousSessionEnded"] is True
    refused = await switched.json()
    assert_envelope(refused, 401, "unauthenticated")
    assert "/auth/session/mode" in refused["message"]
    assert "switched to the other mode" in refused["message"]
    plain = await signed_out.json()
    assert_envelope(plain, 401, "unauthenticated")
    assert "switched" not in plain["message"]
