"""Development-only routes (decisions 2): the dev mailbox, the API explorer and its document.

They exist only in the development server mode, and even there answer only requests that are
loopback at both ends, the peer address and the Host header (`mps.http.app` gates them); anyone
else gets the 404 of a route that does not exist.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from mps.errors import NotFound
from mps.http.pages.explorer import explorer_page
from mps.http.replies import Aggregate
from mps.http.routes.developer import openapi_document
from mps.http.routing import Auth, Call, Handler, Route
from mps.http.schema import Obj, Str

__all__ = ["ROUTES"]


async def mailbox(call: Call) -> Aggregate:
    box = call.services.dev_mailbox
    if box is None:
        raise NotFound(f"No route for GET {call.request.path}")
    return Aggregate([m.as_json() for m in box.messages(call.query["to"])])


async def explorer(call: Call) -> web.Response:
    return web.Response(text=explorer_page(), content_type="text/html")


async def explorer_document(call: Call) -> web.Response:
    """The OpenAPI document `GET /api/v1/developer/openapi.json` gives a dashboard session, for
    the explorer to list the operations before anyone signs in (and for a pasted API key, which
    that route refuses). It describes routes, never data, so a loopback developer may read it
    without a credential; built by that route's own code, so the two never differ."""
    return openapi_document(call)


def _development_only(path: str, handler: Handler, summary: str, **declared: Any) -> Route:
    """A GET served in development only, without a credential, and left out of the OpenAPI
    document."""
    return Route(
        "GET", path, handler, summary, "dev", Auth.PUBLIC,
        internal=True, development_only=True, **declared,
    )  # fmt: skip


ROUTES = [
    _development_only(
        "/api/docs", explorer, "Interactive API explorer (development only)", api=False
    ),
    _development_only(
        "/api/docs/openapi.json",
        explorer_document,
        "The OpenAPI document, for the explorer (development only)",
        api=False,
    ),
    _development_only(
        "/dev/mailbox",
        mailbox,
        "Every email sent, newest first (development only)",
        # One recipient's mail only: the whole mailbox holds every code sent to anyone.
        query=Obj({"to": Str(min_length=1, max_length=254)}, required=["to"]),
    ),
]
