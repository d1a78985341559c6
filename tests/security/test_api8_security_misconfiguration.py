"""API8, security misconfiguration: every answer (JSON, HTML, error, aiohttp's own) carries the
safety headers and no server version; errors reveal no stack trace, SQL or driver; no answer
opens the API to other origins; methods the service does not serve are refused in the envelope;
production refuses to start half-configured and has no development surfaces (decisions 0, 2;
docs/api.md "Conventions"; SECURITY.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.config import ConfigError, load_settings
from tests.helpers import assert_envelope, assert_refused, sign_up

pytestmark = pytest.mark.both_backends

LEAKS = ["Traceback", 'File "', "SELECT ", "INSERT ", "sqlite", "asyncpg", "psycopg", "aiohttp/"]

PRODUCTION_ENV = {
    "MPS_MODE": "production",
    "MPS_DATABASE_URL": "postgresql://mps@db.internal/mps",
    "MPS_BROKER_URL": "amqp://mps:pw@mq.internal/",
    "MPS_SESSION_SECRET": "s" * 32,
    "MPS_ENCRYPTION_KEY": "e" * 32,
    "MPS_SMTP_URL": "smtp://mail.internal:587",
}


def _assert_safety_headers(response: Any) -> None:
    assert response.headers["Server"] == "mps"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Cache-Control"] == "no-store"
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert "Access-Control-Allow-Origin" not in response.headers


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "code"),
    [
        ("GET", "/api/v1/merchant/payments/pay_x'%20OR%201=1--", {"auth": True}, 404, "not_found"),
        ("GET", "/api/v1/no/such/thing", {}, 404, "not_found"),
        ("PUT", "/api/v1/auth/signup", {}, 405, "method_not_allowed"),
        (
            "POST",
            "/api/v1/auth/signup",
            {"data": b"{'x':", "headers": {"Content-Type": "application/json"}},
            400,
            None,
        ),
        (
            "POST",
            "/api/v1/auth/signup",
            {"data": b"<x/>", "headers": {"Content-Type": "application/xml"}},
            415,
            "unsupported_media_type",
        ),
        (
            "POST",
            "/api/v1/auth/signup",
            {"json": {"companyName": "'; DROP TABLE users;--", "email": 7}},
            400,
            "validation_error",
        ),
        (
            "GET",
            "/api/v1/merchant/payments",
            {"params": {"limit": "1e309"}, "auth": True},
            400,
            "validation_error",
        ),
    ],
)
async def test_error_answers_reveal_no_stack_trace_sql_or_driver_when_provoked(
    client: TestClient[Any, Any],
    method: str,
    path: str,
    kwargs: dict[str, Any],
    status: int,
    code: str | None,
) -> None:
    # given a signed-in member, for the routes that need one
    member = await sign_up(client)
    options = {k: v for k, v in kwargs.items() if k != "auth"}
    if kwargs.get("auth"):
        options["headers"] = member.headers

    # when a malformed request is sent
    response = await client.request(method, path, **options)

    # then it is a plain envelope with the safety headers, naming nothing internal
    text = await response.text()
    assert response.status == status, text
    assert_envelope(await response.json(), status, code)
    _assert_safety_headers(response)
    for leak in LEAKS:
        assert leak not in text, leak


@pytest.mark.parametrize("path", ["/api/v1/health/live", "/api/v1/auth/me", "/pay/PAY-0000000000"])
async def test_answers_grant_no_cross_origin_access_when_another_origin_asks(
    client: TestClient[Any, Any], path: str
) -> None:
    # given a request and a preflight from a hostile origin
    origin = {"Origin": "https://evil.example"}
    preflight = {
        **origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization",
    }

    # when
    response = await client.get(path, headers=origin)
    options = await client.options(path, headers=preflight)

    # then neither lets a browser on that origin read the answer
    for answer in (response, options):
        assert "Access-Control-Allow-Origin" not in answer.headers
        assert "Access-Control-Allow-Credentials" not in answer.headers
    await assert_refused(options, 405, "method_not_allowed")


async def test_a_method_aiohttp_cannot_parse_is_a_400_envelope_that_names_no_version(
    client: TestClient[Any, Any],
) -> None:
    # given a request whose method aiohttp's parser rejects before any routing, carrying a
    # credential an echo of the request line would expose
    member = await sign_up(client)

    # when
    response = await client.request("TRACK", "/api/v1/auth/me", headers=member.headers)

    # then the answer is still ours: the envelope, the safety headers, nothing echoed
    text = await response.text()
    await assert_refused(response, 400, "bad_request")
    _assert_safety_headers(response)
    assert "TRACK" not in text
    assert member.token not in text


@pytest.mark.parametrize("method", ["TRACE", "PROPFIND"])
async def test_unserved_methods_are_a_405_envelope_that_echoes_nothing_when_tried(
    client: TestClient[Any, Any], method: str
) -> None:
    # given a request carrying a credential a TRACE echo would expose
    member = await sign_up(client)

    # when
    response = await client.request(method, "/api/v1/auth/me", headers=member.headers)

    # then
    text = await response.text()
    await assert_refused(response, 405, "method_not_allowed")
    _assert_safety_headers(response)
    assert member.token not in text
    assert "Authorization" not in text


@pytest.mark.parametrize(
    ("missing", "named"),
    [
        ("MPS_DATABASE_URL", "Postgres"),
        ("MPS_BROKER_URL", "AMQP"),
        ("MPS_SESSION_SECRET", "MPS_SESSION_SECRET"),
        ("MPS_ENCRYPTION_KEY", "MPS_ENCRYPTION_KEY"),
        ("MPS_SMTP_URL", "SMTP"),
    ],
)
def test_production_refuses_to_start_when_one_dependency_is_left_out(
    tmp_path: Path, missing: str, named: str
) -> None:
    # given a production environment complete but for one item
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != missing}

    # when / then it refuses, naming what is missing
    with pytest.raises(ConfigError) as refused:
        load_settings(["--data-dir", str(tmp_path)], env)
    assert named.lower() in str(refused.value).lower()


@pytest.mark.parametrize(
    ("name", "value"),
    [("MPS_DATABASE_URL", "sqlite:///var/mps.db"), ("MPS_BROKER_URL", "memory://")],
)
def test_production_refuses_development_backends_when_they_are_configured(
    tmp_path: Path, name: str, value: str
) -> None:
    # given a production environment pointed at an embedded database or in-process broker
    env = {**PRODUCTION_ENV, name: value}

    # when / then
    with pytest.raises(ConfigError):
        load_settings(["--data-dir", str(tmp_path)], env)


@pytest.mark.parametrize(
    "path", ["/api/v1/dev/mailbox?to=owner@example.com", "/api/docs", "/api/docs/"]
)
async def test_production_serves_no_dev_mailbox_or_explorer_even_to_loopback(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], path: str
) -> None:
    # given the app built in production mode, reached from loopback
    client: TestClient[Any, Any] = await aiohttp_client(make_app(mode="production"))

    # when
    response = await client.get(path)

    # then the surface does not exist
    await assert_refused(response, 404, "not_found")
    _assert_safety_headers(response)
