"""Where `GET /metrics` is served (mps.metrics says what it holds).

Development: on the main listener, to loopback only, like the other development-only routes
(`mps.http.app`). Production: never on the public listener; with `MPS_METRICS_PORT` set, a second
small listener on `MPS_METRICS_HOST` (127.0.0.1 unless told otherwise) serves `/metrics` and
nothing else, so a scraper on the private network reaches it and the public cannot. Either mode
opens that listener when the port is set.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from aiohttp import hdrs, web

from mps.http.security import secure_response
from mps.metrics import Metrics
from mps.services import Services

__all__ = ["scrape_handler", "serving_metrics"]

logger = logging.getLogger(__name__)


def scrape_handler(
    metrics: Metrics,
) -> Callable[[web.Request], Coroutine[Any, Any, web.Response]]:
    """The handler of `GET /metrics`: Prometheus' text format, or OpenMetrics when asked."""

    async def serve_metrics(request: web.Request) -> web.Response:
        body, content_type = await metrics.exposition(request.headers.get(hdrs.ACCEPT, ""))
        response = web.Response(body=body)
        response.headers[hdrs.CONTENT_TYPE] = content_type
        return response

    return serve_metrics


@contextlib.asynccontextmanager
async def serving_metrics(metrics: Metrics, services: Services) -> AsyncIterator[None]:
    """While inside: scrapes report the live figures of `services`, and, when the settings
    name a metrics port, a listener of its own serves them there. Opened by the application's
    cleanup context once every part has started (mps.bootstrap), closed before they stop; a
    port that cannot be bound fails the start."""
    metrics.attach(services)
    settings = services.settings
    if settings.metrics_port is None:
        yield
        return
    app = web.Application()
    app.on_response_prepare.append(secure_response)
    app.router.add_get("/metrics", scrape_handler(metrics))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, settings.metrics_host, settings.metrics_port).start()
        logger.info("metrics at http://%s:%d/metrics", settings.metrics_host, settings.metrics_port)
        yield
    finally:
        await runner.cleanup()
