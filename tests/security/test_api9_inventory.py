"""API9, improper inventory management: what answers is exactly what is published. Every API
route the app registers is in the OpenAPI document and the document names nothing that does not
answer; any other path, traversal or unpublished version prefix is the 404 envelope; the
development-only routes are neither published nor registered in production (decisions 2, 11, 17)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from yarl import URL

from mps.http.keys import ROUTE_TABLE
from mps.http.openapi import build_openapi
from tests.helpers import assert_envelope, sign_up

pytestmark = pytest.mark.both_backends

METHODS = {"get", "post", "put", "patch", "delete"}


def _registered(app: web.Application) -> set[tuple[str, str]]:
    """(method, path) of every API route the app answers, HEAD aside."""
    found = set()
    for route in app.router.routes():
        path = route.resource.canonical if route.resource is not None else ""
        if path.startswith("/api/v1/") and route.method.lower() in METHODS:
            found.add((route.method.lower(), path))
    return found


def _operations(document: dict[str, Any]) -> set[tuple[str, str]]:
    paths: dict[str, Any] = document["paths"]
    return {(m, p) for p, ops in paths.items() for m in ops if m in METHODS}


async def _published(client: TestClient[Any, Any]) -> set[tuple[str, str]]:
    member = await sign_up(client)
    response = await client.get("/api/v1/developer/openapi.json", headers=member.headers)
    assert response.status == 200
    return _operations(await response.json())


async def test_production_answers_exactly_the_routes_its_openapi_document_publishes(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given the app as production builds it (no dev mailbox to sign in through, so the
    # document is built as GET /developer/openapi.json builds it, from the app's route table)
    client: TestClient[Any, Any] = await aiohttp_client(make_app(mode="production"))

    # when
    published = _operations(build_openapi(client.app[ROUTE_TABLE], "https://pay.example"))

    # then no route is undocumented (shadow API) and no documented route is missing
    assert _registered(client.app) == published
    assert not any("/dev/" in path for _, path in published)


async def test_development_publishes_no_development_only_route(
    client: TestClient[Any, Any],
) -> None:
    # given the development app, which registers the dev mailbox

    # when
    published = await _published(client)

    # then the document holds every other route and none of the development-only ones
    registered = _registered(client.app)
    assert ("get", "/api/v1/dev/mailbox") in registered
    assert registered - published == {("get", "/api/v1/dev/mailbox")}


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/../../etc/passwd",
        "/api/v1/%2e%2e/%2e%2e/etc/passwd",
        "/api/v1/merchant/payments/..%2f..%2fdev%2fmailbox",
        "/api/v2/merchant/payments",
        "/api/v0/health/live",
        "/api/merchant/payments",
        "/api/v1/internal/metrics",
        "/.git/config",
        "/.env",
    ],
)
async def test_paths_outside_the_published_inventory_are_a_404_envelope_when_probed(
    client: TestClient[Any, Any], path: str
) -> None:
    # given a signed-in member probing for unpublished surfaces
    member = await sign_up(client)

    # when the path is sent exactly as written, without the client normalizing it
    response = await client.get(URL(path, encoded=True), headers=member.headers)

    # then
    text = await response.text()
    assert response.status == 404, text
    assert_envelope(await response.json(), 404, "not_found")
    assert "root:" not in text


async def test_deprecated_v1_answers_announce_their_sunset_even_on_errors(
    client: TestClient[Any, Any],
) -> None:
    # given a client still on v1

    # when it gets an error
    response = await client.get("/api/v1/auth/me", headers={"X-Api-Version": "v1"})

    # then it is told the version is deprecated and when it goes away
    assert response.status == 401
    assert response.headers["X-Api-Version"] == "v1"
    assert response.headers["Deprecation"] == "@1782864000"
    assert response.headers["Sunset"] == "Thu, 01 Jul 2027 00:00:00 GMT"
