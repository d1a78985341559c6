"""The aiohttp application: middlewares and the route table. No I/O happens here; resources are
opened by the cleanup context that `mps.bootstrap` attaches."""

from __future__ import annotations

from collections.abc import Iterable

from aiohttp import web

from mps.http.middlewares import envelope_middleware
from mps.http.pipeline import MAX_BODY, endpoint
from mps.http.routing import Route

__all__ = ["create_app"]


def create_app(routes: Iterable[Route], *, development: bool) -> web.Application:
    app = web.Application(middlewares=[envelope_middleware], client_max_size=MAX_BODY)
    for route in routes:
        if route.development_only and not development:
            continue
        app.router.add_route(route.method, route.full_path, endpoint(route))
    return app
