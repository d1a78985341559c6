"""Fixtures of the browser tests: the app on a real port."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from tests.helpers import free_port


async def _thanks(request: web.Request) -> web.Response:
    return web.Response(text="<h1>Thanks for your order</h1>", content_type="text/html")


@pytest.fixture
async def served(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> TestClient[Any, Any]:
    """The app on a real port that payUrl names, plus a merchant's thank-you page."""
    port = free_port()
    app = make_app(public_url=f"http://127.0.0.1:{port}")
    app.router.add_get("/shop/thanks", _thanks)
    client: TestClient[Any, Any] = await aiohttp_client(app, server_kwargs={"port": port})
    return client
