"""Faults on our side are enveloped 500s that reveal nothing (decisions 0)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.http.pipeline import endpoint
from mps.http.routing import Auth, Call, Route
from tests.helpers import assert_envelope


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
    body = await response.json()
    assert response.status == 500
    assert_envelope(body, 500, "internal_error")
    assert "SELECT" not in body["message"] and "vault" not in str(body)
    assert body["requestId"] in caplog.text
    assert "RuntimeError" in caplog.text
