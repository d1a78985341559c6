"""Fixtures of the dashboard's browser tests: the app on a real port, and a browser page that
records every refusal of the page's policy and every error it reports."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from playwright.async_api import Browser, async_playwright

from tests.conftest import CHROMIUM_ARGS
from tests.helpers import free_port


@pytest.fixture
async def served(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> TestClient[Any, Any]:
    """The app on a real port that payUrl names, so the hosted checkout opens in the browser."""
    port = free_port()
    app = make_app(public_url=f"http://127.0.0.1:{port}")
    client: TestClient[Any, Any] = await aiohttp_client(app, server_kwargs={"port": port})
    return client


@pytest.fixture
async def browser(chromium: str) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()
