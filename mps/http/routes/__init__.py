"""The route table: every route of the service, declared in the module of its resource."""

from __future__ import annotations

from mps.http.routes import api_keys, auth, dev, developer, health, settings
from mps.http.routing import Route

__all__ = ["all_routes"]


def all_routes(*, development: bool) -> list[Route]:
    return [
        *health.ROUTES,
        *auth.build(development),
        *api_keys.ROUTES,
        *settings.ROUTES,
        *developer.ROUTES,
        *dev.ROUTES,
    ]
