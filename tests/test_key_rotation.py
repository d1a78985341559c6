"""Rotating MPS_SESSION_SECRET and MPS_ENCRYPTION_KEY (SECURITY.md): what was made under the
previous secret keeps working while it is configured; everything new is made under the current
one; customer ids never change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jwt
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from cryptography.exceptions import InvalidTag

from mps.auth.keyring import Keyring
from mps.config import ConfigError, Settings, load_settings
from mps.http.keys import SERVICES
from tests.helpers import latest_code, sign_up

OLD_SECRET = b"test-session-secret-0123456789abcdef"  # the fixtures' settings
NEW_SECRET = b"rotated-session-secret-0123456789abcdef"
OLD_KEY = b"test-encryption-key-0123456789abcdef"
NEW_KEY = b"rotated-encryption-key-0123456789abcdef"
BODY = {"amountMinor": "2500", "currency": "USD"}

Client = TestClient[Any, Any]
AppMaker = Callable[..., web.Application]


async def _status(client: Client, token: str, path: str = "/api/v1/auth/me") -> int:
    response = await client.get(path, headers={"Authorization": f"Bearer {token}"})
    return response.status


def _rotating_session(**changes: Any) -> dict[str, Any]:
    return {"session_secret": NEW_SECRET, "session_secret_previous": OLD_SECRET, **changes}


async def test_a_session_signed_with_the_previous_secret_is_valid_while_it_is_configured(
    aiohttp_client: Callable[..., Any], make_app: AppMaker, settings: Settings
) -> None:
    # given a session issued before the rotation
    before = await aiohttp_client(make_app())
    member = await sign_up(before)

    # when the service restarts with the new secret and the old one as previous
    during = await aiohttp_client(make_app(**_rotating_session(id_key=OLD_SECRET)))

    # then the old session still works, and a new one is signed with the new secret only
    assert await _status(during, member.token) == 200
    fresh = await sign_up(during, email="second@example.com", company="Beta Ltd")
    new_jwt_key = during.app[SERVICES].keyring.jwt_key
    jwt.decode(fresh.token, new_jwt_key, algorithms=["HS256"], audience="mps-dashboard")
    old_jwt_key = Keyring(OLD_SECRET, OLD_KEY).jwt_key
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(fresh.token, old_jwt_key, algorithms=["HS256"], audience="mps-dashboard")


async def test_a_session_signed_with_the_previous_secret_is_refused_once_it_is_removed(
    aiohttp_client: Callable[..., Any], make_app: AppMaker
) -> None:
    before = await aiohttp_client(make_app())
    member = await sign_up(before)

    after = await aiohttp_client(make_app(session_secret=NEW_SECRET, id_key=OLD_SECRET))

    assert await _status(after, member.token) == 401


async def test_an_api_key_created_before_the_rotation_keeps_working_during_it(
    aiohttp_client: Callable[..., Any], make_app: AppMaker
) -> None:
    # given a key created under the old session secret
    before = await aiohttp_client(make_app())
    member = await sign_up(before)
    response = await before.post(
        "/api/v1/merchant/api-keys",
        json={"name": "server", "scopes": ["analytics:read"]},
        headers=member.headers,
    )
    assert response.status == 201
    key = (await response.json())["key"]

    # when the secret is rotated, then removed
    during = await aiohttp_client(make_app(**_rotating_session(id_key=OLD_SECRET)))
    after = await aiohttp_client(make_app(session_secret=NEW_SECRET, id_key=OLD_SECRET))

    # then it works while the previous secret is configured, and not once it is gone
    assert await _status(during, key, "/api/v1/developer/ping") == 200
    assert await _status(after, key, "/api/v1/developer/ping") == 401


async def test_a_code_mailed_before_the_rotation_can_be_spent_during_it(
    aiohttp_client: Callable[..., Any], make_app: AppMaker
) -> None:
    before = await aiohttp_client(make_app())
    member = await sign_up(before)
    response = await before.post("/api/v1/auth/login", json={"email": member.email})
    login_id = (await response.json())["loginId"]
    code = await latest_code(before, member.email)

    during = await aiohttp_client(make_app(**_rotating_session(id_key=OLD_SECRET)))
    response = await during.post(
        "/api/v1/auth/otp/verify", json={"loginId": login_id, "code": code}
    )

    assert response.status == 200, await response.text()


async def test_a_response_sealed_with_the_previous_key_is_replayed_and_new_ones_use_the_current(
    aiohttp_client: Callable[..., Any], make_app: AppMaker
) -> None:
    # given a response stored under the old encryption key
    before = await aiohttp_client(make_app())
    member = await sign_up(before)
    headers = {**member.headers, "Idempotency-Key": "before-rotation"}
    first = await before.post("/api/v1/merchant/payments", json=BODY, headers=headers)
    assert first.status == 201

    # when the key is rotated and the request is retried
    during = await aiohttp_client(make_app(encryption_key=NEW_KEY, encryption_key_previous=OLD_KEY))
    replay = await during.post("/api/v1/merchant/payments", json=BODY, headers=headers)

    # then the stored response is replayed byte for byte
    assert replay.status == 201
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert await replay.read() == await first.read()

    # and a response stored now is sealed with the new key only
    new_headers = {**member.headers, "Idempotency-Key": "after-rotation"}
    second = await during.post("/api/v1/merchant/payments", json=BODY, headers=new_headers)
    assert second.status == 201
    sealed = await during.app[SERVICES].database.fetchval(
        "SELECT body FROM idempotency_keys WHERE idem_key = 'after-rotation'"
    )
    assert sealed.startswith("v1:")
    assert Keyring(NEW_SECRET, NEW_KEY).unseal(sealed, "idempotent-response") == (
        await second.read()
    )
    with pytest.raises(InvalidTag):
        Keyring(OLD_SECRET, OLD_KEY).unseal(sealed, "idempotent-response")


def test_customer_ids_do_not_change_when_the_session_secret_is_rotated() -> None:
    before = Keyring(OLD_SECRET, OLD_KEY)
    during = Keyring(NEW_SECRET, NEW_KEY, session_secret_previous=OLD_SECRET, id_key=OLD_SECRET)
    after = Keyring(NEW_SECRET, NEW_KEY, id_key=OLD_SECRET)

    ids = {
        keyring.customer_id("co_1", "test", "buyer@example.com", None)
        for keyring in (before, during, after)
    }

    assert len(ids) == 1


def test_a_previous_session_secret_without_an_id_key_is_refused_at_start(tmp_path: Any) -> None:
    env = {
        "MPS_DATA_DIR": str(tmp_path / "data"),
        "MPS_SESSION_SECRET": NEW_SECRET.decode(),
        "MPS_SESSION_SECRET_PREVIOUS": OLD_SECRET.decode(),
    }

    with pytest.raises(ConfigError, match="MPS_ID_KEY"):
        load_settings([], env)

    settings = load_settings([], {**env, "MPS_ID_KEY": OLD_SECRET.decode()})
    assert settings.session_secret_previous == OLD_SECRET
    assert settings.id_key == OLD_SECRET


def test_a_previous_secret_shorter_than_32_characters_is_refused(tmp_path: Any) -> None:
    env = {"MPS_DATA_DIR": str(tmp_path / "data"), "MPS_ENCRYPTION_KEY_PREVIOUS": "short"}

    with pytest.raises(ConfigError, match="MPS_ENCRYPTION_KEY_PREVIOUS"):
        load_settings([], env)
