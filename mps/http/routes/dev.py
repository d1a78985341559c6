"""The development server mode's mailbox (decisions 2): loopback callers only, 404 otherwise."""

from __future__ import annotations

import ipaddress

from mps.errors import NotFound
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


ROUTES = [
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
