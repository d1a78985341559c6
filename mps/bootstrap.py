"""The composition root: builds the application and opens its resources in order.

Nothing connects at import time. `build_app` returns an app with one cleanup context per
resource (the keys, the database, the writer, the broker, object storage, mail, credentials,
the shards of actors, the cluster node, the schedulers, webhooks, the services the handlers
use, the metrics listener), registered in the order they open; aiohttp closes them in reverse
on shutdown, and a start that fails half-way closes those already open. Each context keeps
what it opened on `Parts` (mps.composition.parts), where the contexts after it find it; the
contexts themselves live in mps.composition, grouped by what they hold.
"""

from __future__ import annotations

from aiohttp import web

from mps.composition import serving, shards, storage, work
from mps.composition.parts import PARTS, Overrides, Parts
from mps.config import Settings
from mps.http.app import create_app
from mps.http.forwarded import sign_peer_answer
from mps.http.keys import ROUTE_TABLE
from mps.http.routes import all_routes
from mps.metrics import Metrics

__all__ = ["Overrides", "build_app"]


def build_app(settings: Settings, overrides: Overrides | None = None) -> web.Application:
    """The application on `settings`; nothing is opened until it starts.

    Each resource is one cleanup context, opened in the order below and closed in reverse. When
    one fails to open, aiohttp stops there, and the runner's cleanup (mps.serve) closes the
    ones already open, so a failed start leaves no connection, actor or task behind."""
    routes = all_routes(development=settings.development)
    metrics = Metrics()
    app = create_app(
        routes,
        development=settings.development,
        metrics=metrics,
        max_in_flight=settings.max_in_flight,
    )
    app[ROUTE_TABLE] = routes
    # Proves to a node that passed a request here that the answer is this cluster's.
    app.on_response_prepare.append(sign_peer_answer)
    app[PARTS] = Parts(settings, overrides or Overrides(), metrics)
    for resource in (
        storage.keys,
        storage.database,
        storage.writer,
        storage.broker,
        storage.object_storage,
        storage.mail,
        storage.credentials,
        shards.shards,
        shards.cluster_node,
        work.deadlines,
        work.schedulers,
        work.webhooks,
        serving.services,
        serving.metrics_listener,
    ):
        app.cleanup_ctx.append(resource)
    return app
