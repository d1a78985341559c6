"""The development server mode's mailbox (decisions 2): loopback callers only, 404 otherwise."""

from __future__ import annotations

import ipaddress

from aiohttp import web

from mps.errors import NotFound
from mps.http.pages.explorer import EXPLORER_HTML
from mps.http.replies import Aggregate
from mps.http.routing import Auth, Call, Route
from mps.http.schema import Obj, Str

__all__ = ["ROUTES"]


async def mailbox(call: Call) -> Aggregate:
    box = call.services.dev_mailbox
    try:
        loopback = ipaddress.ip_address(call.ip).is_loopback
    except ValueError:
        loopback = False
    if box is None or not loopback:
        raise NotFound(f"No route for GET {call.request.path}")
    return Aggregate([m.as_json() for m in box.messages(call.query.get("to"))])


async def explorer(call: Call) -> web.Response:
    return web.Response(
        text=EXPLORER_HTML, content_type="text/html", headers={"X-Content-Type-Options": "nosniff"}
    )


ROUTES = [
    Route(
        "GET",
        "/api/docs",
        explorer,
        "Interactive API explorer (development only)",
        "dev",
        Auth.PUBLIC,
        api=False,
        internal=True,
        development_only=True,
    ),
    Route(
        "GET",
        "/dev/mailbox",
        mailbox,
        "Every email sent, newest first (development only)",
        "dev",
        Auth.PUBLIC,
        query=Obj({"to": Str(max_length=254)}),
        internal=True,
        development_only=True,
    ),
]
