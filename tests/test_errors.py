"""Faults on our side are enveloped 500s that reveal nothing, and every other error is enveloped
with the status the HTTP layer's table gives its class (decisions 0, mps.http.statuses)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.errors import Conflict, ShardMoved
from mps.http.pipeline import endpoint
from mps.http.routing import Auth, Call, Route
from tests.helpers import assert_envelope, assert_refused


async def _explode(call: Call) -> web.Response:
    msg = "SELECT secret FROM vault -- internal detail"
    raise RuntimeError(msg)


async def test_unexpected_error_is_a_500_envelope_without_internals(
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # given an app with a route whose handler fails unexpectedly
    app = make_app()
    route = Route("GET", "/test/explode", _explode, "fails", "test", Auth.PUBLIC)
    app.router.add_route("GET", route.full_path, endpoint(route))
    client: TestClient[Any, Any] = await aiohttp_client(app)

    # when
    with caplog.at_level(logging.ERROR):
        response = await client.get("/api/v1/test/explode")

    # then the client sees a plain 500 and the log has the traceback with the request id
    body = await assert_refused(response, 500, "internal_error")
    assert "SELECT" not in body["message"] and "vault" not in str(body)
    assert body["requestId"] in caplog.text
    assert "RuntimeError" in caplog.text


async def _conflict(call: Call) -> web.Response:
    msg = "The payment is CAPTURED; it must be PENDING"
    raise Conflict(msg)


async def _shard_moved(call: Call) -> web.Response:
    raise ShardMoved


async def _header_too_large(call: Call) -> web.Response:
    raise web.HTTPRequestHeaderFieldsTooLarge


@pytest.mark.parametrize(
    ("handler", "status", "code"),
    [
        (_conflict, 409, "invalid_state"),
        (_shard_moved, 503, "unavailable"),
        (_header_too_large, 431, "error"),
    ],
    ids=["domain-conflict", "shard-moved", "aiohttp-refusal"],
)
async def test_an_error_raised_below_http_is_enveloped_with_the_status_table_gives_it(
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
    handler: Callable[[Call], Awaitable[web.Response]],
    status: int,
    code: str,
) -> None:
    # given a route whose handler raises what an actor, the cluster or aiohttp would
    app = make_app()
    route = Route("GET", "/test/refuse", handler, "refuses", "test", Auth.PUBLIC)
    app.router.add_route("GET", route.full_path, endpoint(route))
    client: TestClient[Any, Any] = await aiohttp_client(app)

    # when
    response = await client.get("/api/v1/test/refuse")

    # then the status line and the body's statusCode are the table's, and a 503 says when
    body = await response.json()
    assert response.status == status
    assert_envelope(body, status, code)
    assert ("Retry-After" in response.headers) == (status == 503)
