"""Requests another node passed to this one, the owner of their company's shard (mps.cluster).

Such a request arrives on this node's private Unix socket with the secret only this process
knows. It is then served as the client's own request: its client address and request id are the
ones the first node saw, and it is not counted against rate limits or logged as API-key use a
second time (the first node did both). The headers mean nothing on any other request.
"""

from __future__ import annotations

import hmac
import socket

from aiohttp import web
from aiohttp.typedefs import Handler

from mps.cluster.forwarding import FORWARDED_FOR, FORWARDED_REQUEST_ID, FORWARDED_SECRET
from mps.http.keys import PASSED, SERVICES

__all__ = ["passed_middleware", "passed_request_id"]


@web.middleware
async def passed_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    secret = request.headers.get(FORWARDED_SECRET)
    if secret is not None and _is_ours(request, secret):
        request = request.clone(remote=request.headers.get(FORWARDED_FOR) or "unknown")
        request[PASSED] = True
    return await handler(request)


def _is_ours(request: web.Request, secret: str) -> bool:
    services = request.app.get(SERVICES)
    cluster = services.cluster if services is not None else None
    if cluster is None or not hmac.compare_digest(secret, cluster.dispatch.secret):
        return False
    transport = request.transport
    sock = transport.get_extra_info("socket") if transport is not None else None
    return sock is not None and sock.family == socket.AF_UNIX


def passed_request_id(request: web.Request) -> str | None:
    """The request id the first node gave a passed request; None for any other request."""
    if not request.get(PASSED):
        return None
    return request.headers.get(FORWARDED_REQUEST_ID)
