"""Passing a request to the node that owns its company's shard, and relaying the answer."""

from __future__ import annotations

from aiohttp import web

from mps.actors.shards import asked_an_actor
from mps.cluster.forwarding import Passed, copied
from mps.errors import PayloadTooLarge, ShardMoved, Unavailable
from mps.http.forwarded import NOT_RUN_HERE
from mps.http.keys import PASSED, RELAYED, REQUEST_ID
from mps.services import Services

__all__ = ["OUTCOME_UNKNOWN", "PASSED_OUT", "pass_on"]

# Set on a request this node passes to its shard's owner, before it does (the metrics count it
# whatever the outcome: mps.http.request_metrics).
PASSED_OUT = web.RequestKey("passed_out", bool)

# Said when a request cannot go on and may already have had effects: only a keyed retry is safe.
OUTCOME_UNKNOWN = (
    "The request may or may not have taken effect: retry it with the same Idempotency-Key"
)


async def pass_on(
    services: Services, request: web.Request, shard: int, *, max_body: int | None = None
) -> web.StreamResponse:
    """The owner's answer to `request`, whose company lives in `shard`. `max_body` allows an
    upload's body beyond the JSON limit; it travels whole, so it is held in memory here."""
    if asked_an_actor():
        # The handler asked an actor here before it reached a company another node owns: what
        # it did here may stand, so the request is neither passed whole (it would run twice)
        # nor reported as not run (the asking node would pass it again).
        raise Unavailable(OUTCOME_UNKNOWN)
    cluster = services.cluster
    if cluster is None or request.get(PASSED):
        # Passed here because this node owned the shard, which it no longer does: a second hop
        # could chase a moving shard around. The asking node learns it did not run here
        # (mps.http.forwarded) and passes it through the broker, which reaches the new owner.
        request[NOT_RUN_HERE] = True
        raise ShardMoved
    passed = Passed(
        method=request.method,
        # As the client sent it: the owner checks the signature over these very bytes.
        path=request.rel_url.raw_path_qs,
        headers=copied(request.raw_headers),
        body=await request.read() if max_body is None else await _upload_body(request, max_body),
        client=request.remote,
        request_id=request[REQUEST_ID],
    )
    request[PASSED_OUT] = True
    answer = await cluster.forward(shard, passed)
    response = web.Response(status=answer.status, body=answer.body, headers=answer.headers)
    response[RELAYED] = True
    return response


async def _upload_body(request: web.Request, limit: int) -> bytes:
    # A multipart body carries boundaries and part headers beside the file itself.
    allowed = limit + 64 * 1024
    body = bytearray()
    async for chunk in request.content.iter_any():
        body += chunk
        if len(body) > allowed:
            msg = f"Uploads are limited to {limit // (1024 * 1024)} MiB"
            raise PayloadTooLarge(msg)
    return bytes(body)
