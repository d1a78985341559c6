"""Requests another node passed to this one, the owner of their company's shard (mps.cluster).

Such a request arrives on this node's private Unix socket with the secret only this process
knows. It is then served as the client's own request: its client address and request id are the
ones the first node saw, and it is not counted against rate limits or logged as API-key use a
second time (the first node did both). The headers mean nothing on any other request: a TCP
client that sends them, whatever the secret, is served as the address it connects from.

`passed_middleware` runs before the envelope middleware, so everything after it (the envelope,
the route limits, the key log, the audit trail) sees the client's address as `request.remote`.
It passes a clone of the request on (aiohttp's way to change `remote`). aiohttp itself goes on
with the request it made: it prepares the response with it (the security headers read the page's
nonce from it) and hands it to the access log. So that request is marked as passed too, and is
given what the app set on the clone once the handler is done; the access log reads the client's
address from it through `passed_client`.
"""

from __future__ import annotations

import hmac
import socket

from aiohttp import web
from aiohttp.typedefs import Handler

from mps.cluster.forwarding import FORWARDED_FOR, FORWARDED_REQUEST_ID, FORWARDED_SECRET
from mps.http.keys import PASSED, SERVICES

__all__ = ["passed_client", "passed_middleware", "passed_request_id"]

# The client of a passed request whose first node knew no address for it.
UNKNOWN_CLIENT = "unknown"


@web.middleware
async def passed_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    secret = request.headers.get(FORWARDED_SECRET)
    if secret is None or not _is_ours(request, secret):
        return await handler(request)
    # Set before cloning: the clone copies it, and the access log reads the original.
    request[PASSED] = True
    passed = request.clone(remote=_client(request))
    try:
        return await handler(passed)
    finally:
        # What the app set on the clone (the request id, a page's nonce) is read from the
        # original too: aiohttp prepares the response (mps.http.security) and logs the request
        # with the request it made.
        request.update(passed)


def _is_ours(request: web.Request, secret: str) -> bool:
    services = request.app.get(SERVICES)
    cluster = services.cluster if services is not None else None
    # As bytes: compare_digest refuses a str with non-ASCII characters, which anyone may send.
    sent = secret.encode("utf-8", "surrogateescape")
    if cluster is None or not hmac.compare_digest(sent, cluster.dispatch.secret.encode()):
        return False
    # The secret alone is not enough: only this process's own socket may carry it.
    transport = request.transport
    sock = transport.get_extra_info("socket") if transport is not None else None
    return sock is not None and sock.family == socket.AF_UNIX


def passed_client(request: web.BaseRequest) -> str | None:
    """The client address the first node saw for a passed request; None for any other."""
    if not request.get(PASSED):
        return None
    return _client(request)


def _client(request: web.BaseRequest) -> str:
    return request.headers.get(FORWARDED_FOR) or UNKNOWN_CLIENT


def passed_request_id(request: web.BaseRequest) -> str | None:
    """The request id the first node gave a passed request; None for any other request."""
    if not request.get(PASSED):
        return None
    return request.headers.get(FORWARDED_REQUEST_ID)
