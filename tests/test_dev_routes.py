"""Development-only routes (decisions 2): the dev mailbox and the API explorer answer only
requests that are loopback at both ends, the peer address and the Host header; anyone else gets
the 404 of a route that does not exist."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from aiohttp.typedefs import Handler, Middleware

from tests.helpers import assert_refused, sign_up

DEV_ROUTES = ["/api/v1/dev/mailbox?to=ann@example.com", "/api/docs", "/api/docs/openapi.json"]


def _peer(address: str) -> Middleware:
    """Makes every request appear to come from `address`, as a peer on another machine would;
    the app under it is the real one."""

    @web.middleware
    async def peer(request: web.Request, handler: Handler) -> web.StreamResponse:
        return await handler(request.clone(remote=address))

    return peer


async def _client_from(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], address: str
) -> TestClient[Any, Any]:
    app = make_app()
    app.middlewares.insert(0, _peer(address))
    client: TestClient[Any, Any] = await aiohttp_client(app)
    return client


def _as_unknown_route(body: dict[str, Any]) -> dict[str, Any]:
    """An error body without what differs per request, the path named in the message too."""
    kept = {k: v for k, v in body.items() if k not in ("requestId", "timestamp", "message")}
    return {**kept, "message": body["message"].split(" /")[0]}


async def _unknown_route_answer(client: TestClient[Any, Any], method: str) -> Any:
    response = await client.request(method, "/api/v1/dev/no-such-route")
    assert response.status == 404
    return _as_unknown_route(await response.json()), response.headers.get("Allow")


@pytest.mark.parametrize(
    "host", ["localhost", "localhost:8080", "127.0.0.1", "127.5.6.7:9000", "[::1]", "[::1]:8080"]
)
async def test_dev_routes_answer_when_peer_and_host_are_loopback(
    client: TestClient[Any, Any], host: str
) -> None:
    # given a code sent to ann
    await sign_up(client, "ann@example.com")

    # when both routes are read from loopback naming a loopback host
    mailbox = await client.get(
        "/api/v1/dev/mailbox", params={"to": "ann@example.com"}, headers={"Host": host}
    )
    explorer = await client.get("/api/docs", headers={"Host": host})

    # then both answer
    assert mailbox.status == 200
    assert (await mailbox.json())["data"][0]["otp"]
    assert explorer.status == 200
    assert "text/html" in explorer.headers["Content-Type"]


@pytest.mark.parametrize(
    "host",
    [
        "attacker.example",
        "attacker.example:8080",
        "127.0.0.1.attacker.example",
        "localhost.attacker.example",
        "localhost.",
        "192.0.2.2:8080",
        "[fe80::1]:8080",
    ],
)
@pytest.mark.parametrize("path", DEV_ROUTES)
async def test_dev_routes_are_an_unknown_route_when_the_host_is_not_loopback(
    client: TestClient[Any, Any], host: str, path: str
) -> None:
    # given a code sent to ann, and what an unknown route answers
    await sign_up(client, "ann@example.com")
    unknown = await _unknown_route_answer(client, "GET")

    # when a page that rebound its own name to 127.0.0.1 reads the route from loopback
    response = await client.get(path, headers={"Host": host})

    # then it gets exactly the unknown route's 404, and no code
    body = await assert_refused(response, 404, "not_found")
    assert (_as_unknown_route(body), response.headers.get("Allow")) == unknown


@pytest.mark.parametrize("path", DEV_ROUTES)
async def test_dev_routes_are_an_unknown_route_when_the_peer_is_not_loopback(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], path: str
) -> None:
    # given a caller on another machine that names a loopback host, and a code sent to ann
    client = await _client_from(aiohttp_client, make_app, "203.0.113.7")
    signup = {"companyName": "Ann's", "email": "ann@example.com"}
    assert (await client.post("/api/v1/auth/signup", json=signup)).status == 201
    unknown = await _unknown_route_answer(client, "GET")

    # when it reads the route
    response = await client.get(path, headers={"Host": "127.0.0.1:8080"})

    # then it gets the unknown route's 404
    assert response.status == 404
    assert (_as_unknown_route(await response.json()), response.headers.get("Allow")) == unknown


async def test_dev_routes_answer_when_the_peer_is_ipv4_mapped_loopback(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given a loopback caller seen through a dual-stack socket
    client = await _client_from(aiohttp_client, make_app, "::ffff:127.0.0.1")
    await sign_up(client, "ann@example.com")

    # when
    response = await client.get("/api/v1/dev/mailbox", params={"to": "ann@example.com"})

    # then
    assert response.status == 200


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/api/v1/dev/mailbox", {"to": "ann@example.com"}),
        ("DELETE", "/api/docs", None),
        ("GET", "/api/v1/dev/mailbox", None),
        ("GET", "/api/v1/dev/mailbox?to=ann@example.com&all=1", None),
    ],
)
async def test_dev_routes_give_nothing_away_when_a_foreign_host_sends_what_they_refuse(
    client: TestClient[Any, Any], method: str, path: str, body: Any
) -> None:
    # given what an unknown route answers to the same method
    unknown = await _unknown_route_answer(client, method)

    # when a foreign host sends a wrong method, no `to`, or an unknown parameter
    response = await client.request(method, path, json=body, headers={"Host": "attacker.example"})

    # then it is the unknown route's 404, not the 405 or 400 that would reveal the route
    assert response.status == 404
    assert (_as_unknown_route(await response.json()), response.headers.get("Allow")) == unknown


async def test_mailbox_requires_to_when_read_from_loopback(client: TestClient[Any, Any]) -> None:
    # given a code sent to ann
    await sign_up(client, "ann@example.com")

    # when the whole mailbox is asked for
    response = await client.get("/api/v1/dev/mailbox")

    # then it is refused: one recipient's mail at a time
    body = await assert_refused(response, 400, "validation_error")
    assert "to" in str(body)
