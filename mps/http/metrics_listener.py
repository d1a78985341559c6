"""Where `GET /metrics` is served (mps.metrics says what it holds), and the operator's question
"which node owns this company?".

Development: `/metrics` on the main listener, to loopback only, like the other development-only
routes (`mps.http.app`). Production: never on the public listener; with `MPS_METRICS_PORT` set,
a second small listener on `MPS_METRICS_HOST` (127.0.0.1 unless told otherwise) serves the
operator's routes below and nothing else, so a scraper or an on-call person on the private
network reaches them and the public cannot. Either mode opens that listener when the port is set.

    GET /metrics              the scrape
    GET /owner/{companyId}    the company's shard and the node that owns it, as this node sees
                              it: {companyId, shard, node, peer, here, askedNode}; `node` is
                              null while no node claims the shard (it is moving: ask again)
    GET /shards               every shard and its owner, the same way

Any node answers for the whole cluster: it knows its own shards and, from the heartbeats, every
other node's and where its peer listener is.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from aiohttp import hdrs, web

from mps.domain.shards import shard_of
from mps.http.security import secure_response
from mps.metrics import Metrics
from mps.services import Services

__all__ = ["MetricsListenError", "operator_routes", "scrape_handler", "serving_metrics"]

_COMPANY_ID = re.compile(r"co_[0-9A-Za-z]{1,64}")

logger = logging.getLogger(__name__)


class MetricsListenError(OSError):
    """The metrics listener's address cannot be used (taken, or not this machine's): a setting
    to fix, which a restart would meet again (mps.serve turns it into `ListenError`)."""


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
    app.router.add_routes(operator_routes(services))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, settings.metrics_host, settings.metrics_port).start()
        except OSError as exc:
            where = f"{settings.metrics_host}:{settings.metrics_port}"
            msg = f"cannot listen for metrics on {where}: {exc.strerror or exc}"
            raise MetricsListenError(msg) from None
        logger.info("metrics at http://%s:%d/metrics", settings.metrics_host, settings.metrics_port)
        yield
    finally:
        await runner.cleanup()


def operator_routes(services: Services) -> list[web.RouteDef]:
    """`GET /owner/{companyId}` and `GET /shards`, for the metrics listener."""

    def owner(index: int, now: float) -> dict[str, Any]:
        cluster = services.cluster
        me = services.settings.node_id
        if cluster is None or services.shards.owns_shard(index):
            peer = cluster.peer_address if cluster is not None else None
            return {"shard": index, "node": me, "peer": peer, "here": True}
        claimed = cluster.membership.owner_of(index, now)
        return {
            "shard": index,
            "node": claimed.node if claimed is not None else None,
            "peer": claimed.peer if claimed is not None else None,
            "here": False,
        }

    async def company_owner(request: web.Request) -> web.Response:
        company = request.match_info["company"]
        if _COMPANY_ID.fullmatch(company) is None:
            return web.json_response(
                {"message": "A company id looks like co_ followed by letters and digits"},
                status=400,
            )
        found = owner(shard_of(company, services.shards.shard_count), time.monotonic())
        return web.json_response(
            {"companyId": company, **found, "askedNode": services.settings.node_id}
        )

    async def shard_owners(_request: web.Request) -> web.Response:
        now = time.monotonic()
        shards = [owner(index, now) for index in range(services.shards.shard_count)]
        return web.json_response({"askedNode": services.settings.node_id, "shards": shards})

    return [
        web.get("/owner/{company}", company_owner),
        web.get("/shards", shard_owners),
    ]
