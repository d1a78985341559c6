"""Security headers on every response (mps.http.security): pages get a strict Content Security
Policy with a per-response nonce (or, for the constant explorer, hashes), API answers a locked
policy; every answer is unsniffable, uncached, and names no server version."""

from __future__ import annotations

import base64
import hashlib
import io
import re
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from tests.helpers import pending_payment


def _policy(response: Any) -> dict[str, list[str]]:
    directives = {}
    for part in response.headers["Content-Security-Policy"].split(";"):
        name, *sources = part.split()
        directives[name] = sources
    return directives


def _assert_page_headers(response: Any) -> dict[str, list[str]]:
    assert response.headers["Content-Type"].startswith("text/html")
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Server"] == "mps"
    policy = _policy(response)
    assert "unsafe-inline" not in response.headers["Content-Security-Policy"]
    assert policy["default-src"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["form-action"] == ["'none'"]
    assert policy["connect-src"] == ["'self'"]
    return policy


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        ("GET", "/api/v1/health/live", {}, 200),
        ("GET", "/api/v1/auth/me", {}, 401),
        ("GET", "/api/v1/no/such/route", {}, 404),
        ("DELETE", "/api/v1/auth/me", {}, 405),
        ("GET", "/api/v1/health/live", {"X-Api-Version": "9"}, 400),
        ("GET", "/nowhere/at/all", {}, 404),
    ],
)
async def test_api_answers_carry_the_safety_headers_and_no_server_version(
    client: TestClient[Any, Any], method: str, path: str, headers: dict[str, str], status: int
) -> None:
    response = await client.request(method, path, headers=headers)

    assert response.status == status
    assert response.headers["Content-Type"].startswith("application/json")
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Server"] == "mps"
    assert (
        response.headers["Content-Security-Policy"] == "default-src 'none'; frame-ancestors 'none'"
    )


async def test_checkout_page_policy_names_a_fresh_nonce_its_script_and_style_carry(
    client: TestClient[Any, Any],
) -> None:
    _, payment = await pending_payment(client)

    first = await client.get(f"/pay/{payment['reference']}")
    second = await client.get(f"/pay/{payment['reference']}")

    html = await first.text()
    policy = _assert_page_headers(first)
    nonce = re.fullmatch(r"'nonce-([\w-]{20,})'", policy["script-src"][0])
    assert nonce is not None
    assert policy["script-src"] == policy["style-src"] == [f"'nonce-{nonce[1]}'"]
    assert html.count("<script") == html.count(f'<script nonce="{nonce[1]}">') == 1
    assert html.count("<style") == html.count(f'<style nonce="{nonce[1]}">') == 1
    assert not re.search(r"\son[a-z]+=|\sstyle=", html), "inline handlers or styles are blocked"
    assert _policy(second)["script-src"] != policy["script-src"]


async def test_checkout_not_found_page_has_the_page_headers(client: TestClient[Any, Any]) -> None:
    response = await client.get("/pay/PAY-NOSUCHLINK")

    assert response.status == 404
    policy = _assert_page_headers(response)
    assert f'<style nonce="{policy["style-src"][0][7:-1]}">' in await response.text()


async def test_explorer_policy_allows_exactly_its_own_script_and_style_by_hash(
    client: TestClient[Any, Any],
) -> None:
    response = await client.get("/api/docs")

    html = await response.text()
    policy = _assert_page_headers(response)
    scripts = re.findall(r"<script>(.*?)</script>", html, re.DOTALL)
    styles = re.findall(r"<style>(.*?)</style>", html, re.DOTALL)
    assert len(scripts) == len(styles) == 1
    assert policy["script-src"] == [_sha256(scripts[0])]
    assert policy["style-src"] == [_sha256(styles[0])]
    assert not re.search(r"\son[a-z]+=|\sstyle=", html), "inline handlers or styles are blocked"


async def test_a_page_that_asks_for_no_nonce_may_run_no_inline_code(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given a page rendered without the request's nonce
    async def page(request: web.Request) -> web.Response:
        html = "<h1>Hello</h1><script>alert(1)</script>"
        return web.Response(text=html, content_type="text/html")

    app = make_app()
    app.router.add_get("/plain", page)
    client: TestClient[Any, Any] = await aiohttp_client(app)

    # when
    response = await client.get("/plain")

    # then its policy allows no script and no style at all
    policy = _assert_page_headers(response)
    assert policy["script-src"] == policy["style-src"] == ["'none'"]


async def test_server_header_names_no_version_on_aiohttp_own_answers(
    client: TestClient[Any, Any],
) -> None:
    missing = await client.get("/api/v1/no/such/route")
    wrong_method = await client.put("/api/v1/health/live")
    too_large = await client.post(
        "/api/v1/auth/signup",
        data=io.BytesIO(b"x" * (1024 * 1024 + 1)),
        headers={"Content-Type": "application/json"},
    )

    assert (missing.status, wrong_method.status, too_large.status) == (404, 405, 413)
    for response in (missing, wrong_method, too_large):
        assert response.headers["Server"] == "mps", response.status
        assert "aiohttp" not in str(response.headers)
