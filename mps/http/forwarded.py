"""Requests another node passed to this one, the owner of their company's shard (mps.cluster).

Such a request arrives on this node's peer listener (`MPS_PEER_PORT`), signed with the cluster's
secret (mps.cluster.peers). It is then served as the client's own request: its client address
and request id are the ones the first node saw, and it is not counted against rate limits or
logged as API-key use a second time (the first node did both). The peer listener serves nothing
else: a request there without a valid signature (none, a wrong one, a stale one, a replay) is
refused with 403 before anything runs, and so is one in a peer protocol version this node does
not speak (mps.cluster.versions). On the public listener the same headers mean nothing,
whatever they carry: the client is served as the address it connects from.

`passed_middleware` runs before the envelope middleware, so everything after it (the envelope,
the route limits, the key log, the audit trail) sees the client's address as `request.remote`.
It passes a clone of the request on (aiohttp's way to change `remote`). aiohttp itself goes on
with the request it made: it prepares the response with it (the security headers read the page's
nonce from it) and hands it to the access log. So that request is marked as passed too, and is
given what the app set on the clone once the handler is done; the access log reads the client's
address from it through `passed_client`.

`sign_peer_answer` (an `on_response_prepare` signal, so a streamed answer is signed too) proves
to the asking node that the answer comes from a node holding the secret, and tells it whether
the request ran (mps.http.passing marks one refused because the shard moved away).
"""

from __future__ import annotations

import time

from aiohttp import web
from aiohttp.typedefs import Handler

from mps.cluster.forwarding import (
    DEADLINE,
    FORWARDED_FOR,
    FORWARDED_REQUEST_ID,
    NOT_RUN,
    PEER_ANSWER,
)
from mps.cluster.peers import EXPIRED, REFUSED, SHARD_MOVED, UNSPOKEN
from mps.cluster.versions import VERSION, header_version
from mps.http.keys import PASSED, SERVICES

__all__ = [
    "NOT_RUN_HERE",
    "PEER_CALL",
    "passed_client",
    "passed_middleware",
    "passed_request_id",
    "sign_peer_answer",
]

# The client of a passed request whose first node knew no address for it.
UNKNOWN_CLIENT = "unknown"
# The signature of the passed request being served: its answer's proof is made from it.
_SIGNATURE = web.RequestKey("peer_signature", str)
# Set on a passed request this node did not run (its shard is not this node's).
NOT_RUN_HERE = web.RequestKey("not_run_here", bool)
# Set on a passed request that arrived after its asking node gave up on it: not run either.
_EXPIRED = web.RequestKey("passed_expired", bool)
# Set on every request that came in on the peer listener, signed or not (for the metrics).
PEER_CALL = web.RequestKey("peer_call", bool)


@web.middleware
async def passed_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    services = request.app.get(SERVICES)
    cluster = services.cluster if services is not None else None
    if cluster is None or cluster.peer_port is None:
        return await handler(request)
    # The peer listener is told apart by the port the connection came in on.
    transport = request.transport
    sockname = transport.get_extra_info("sockname") if transport is not None else None
    if not sockname or sockname[1] != cluster.peer_port:
        return await handler(request)
    request[PEER_CALL] = True
    path = request.rel_url.raw_path_qs
    if not cluster.protocol.accepts(header_version(request.headers)):
        return web.json_response(
            {
                "code": "peer_refused",
                "message": f"This node speaks peer protocol version {cluster.protocol}",
            },
            status=403,
            headers={NOT_RUN: UNSPOKEN},
        )
    signature = cluster.peer_key.admit(request.headers, request.method, path)
    if signature is None:
        return web.json_response(
            {"code": "peer_refused", "message": "Only the nodes of this cluster may call here"},
            status=403,
            headers={NOT_RUN: REFUSED},
        )
    # Set before cloning: the clone copies them, and the access log reads the original.
    request[PASSED] = True
    request[_SIGNATURE] = signature
    if _expired(request.headers.get(DEADLINE)):
        # The asking node answered its client already: a request started now would take
        # effect after the client was told it may not have.
        request[_EXPIRED] = True
        return web.json_response(
            {"code": "unavailable", "message": "The node that passed this request gave up on it"},
            status=503,
            headers={"Retry-After": "1"},
        )
    passed = request.clone(remote=_client(request))
    try:
        return await handler(passed)
    finally:
        # What the app set on the clone (the request id, a page's nonce) is read from the
        # original too: aiohttp prepares the response (mps.http.security) and logs the request
        # with the request it made.
        request.update(passed)


async def sign_peer_answer(request: web.Request, response: web.StreamResponse) -> None:
    """Add the proof to the answer of a passed request, as aiohttp prepares it."""
    signature = request.get(_SIGNATURE)
    if signature is None:
        return
    cluster = request.app[SERVICES].cluster
    assert cluster is not None
    not_run = EXPIRED if request.get(_EXPIRED) else SHARD_MOVED if request.get(NOT_RUN_HERE) else ""
    if not_run:
        response.headers[NOT_RUN] = not_run
    if VERSION in request.headers:
        # In the version asked; an asker of the release before versions asked in none, and
        # gets an answer in none, which it would otherwise pass on to its client.
        response.headers[VERSION] = str(header_version(request.headers))
    response.headers[PEER_ANSWER] = cluster.peer_key.sign_answer(
        signature, response.status, not_run
    )


def _expired(deadline: str | None) -> bool:
    """Whether the asking node's deadline (Unix milliseconds) has passed; a request without one
    (sent by a node of an earlier version) has none."""
    if deadline is None:
        return False
    try:
        return int(deadline) <= time.time() * 1000
    except ValueError:
        return False


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
