"""Fixtures of the hosted pages' browser tests: the app on a real port, with a merchant's
thank-you page for the checkout to land on."""

from __future__ import annotations

from typing import Any

import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestClient

from tests.conftest import Serve


async def _thanks(request: web.Request) -> web.Response:
    return web.Response(text="<h1>Thanks for your order</h1>", content_type="text/html")


@pytest_asyncio.fixture(loop_scope="session")
async def served(serve: Serve) -> TestClient[Any, Any]:
    """The app on a real port that payUrl names, plus a merchant's thank-you page."""
    return await serve(routes=[web.get("/shop/thanks", _thanks)])
