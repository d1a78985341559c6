"""Passing a request to the node that owns its company's shard, and relaying the answer."""

from __future__ import annotations

from aiohttp import web

from mps.cluster.forwarding import Passed, copied
from mps.errors import ShardMoved
from mps.http.keys import PASSED, RELAYED, REQUEST_ID
from mps.services import Services

__all__ = ["pass_on"]


async def pass_on(services: Services, request: web.Request, shard: int) -> web.StreamResponse:
    """The owner's answer to `request`, whose company lives in `shard`."""
    cluster = services.cluster
    if cluster is None or request.get(PASSED):
        # Passed here because this node owned the shard, which it no longer does: a second hop
        # could chase a moving shard around, so the client retries instead.
        raise ShardMoved
    passed = Passed(
        method=request.method,
        path=request.path_qs,
        headers=copied(request.raw_headers),
        body=await request.read(),
        client=request.remote,
        request_id=request[REQUEST_ID],
    )
    answer = await cluster.forward(shard, passed)
    response = web.Response(status=answer.status, body=answer.body, headers=answer.headers)
    response[RELAYED] = True
    return response
