"""Admission control at the front door: a bound on the requests this node serves at once.

Past the rate a node can serve, an open stream of arrivals queues inside it without bound (in
the actors' mailboxes, in the writer's next batch) and every request's latency grows with the
queue, until clients time out on requests the service still finishes. This middleware keeps
that queue bounded instead: while `limit` requests are in flight on this node, the next one is
answered at once with 503 `overloaded`, in the error envelope and with Retry-After (as every 503
is, mps.errors.Unavailable), before any work is done for it: no actor is asked, nothing is read
or written, so nothing refused was acknowledged and a retry (with the same Idempotency-Key or
without) is served as usual.

Why a bound on requests in flight, and no waiting line at the door: a node that is behind has a
queue already, inside it; a second one in front only adds waiting. With the bound, an admitted
request waits behind at most `limit - 1` others, so (Little's law) its latency stays near
`limit / X` at a saturation throughput of X requests a second, however fast requests arrive;
the excess costs the node the parsing of its headers and one small answer. A time-based rule
(CoDel's: refuse once the oldest queued request has waited past a target) would need a queue
this layer does not have: aiohttp hands each request to its handler as soon as it is parsed,
and what waits after that waits on an actor, where the count here sees it.

Not refused, and not counted: the health routes (the `health` tag: liveness, readiness and the
detailed health) and the metrics scrape. An orchestrator or load balancer that saw an
overloaded node's probes fail would restart it or take it out, and move its load onto the
others, spreading the overload; the probes are cheap.

Not refused, but counted: requests passed here by another node of the cluster
(mps.http.forwarded), which the first node admitted and counts in its own bound while it waits
for the answer; refusing them here would throw away work already admitted, and a 503 from here
would reach the client as the first node's answer. Counted, so that this node's own arrivals
see its whole load.

The bound is per node (`MPS_MAX_IN_FLIGHT`, mps.config): a cluster of N nodes serves at most N
times it at once, and a request passed between nodes holds a place on each of the two. So a
node may hold more than its bound: its own arrivals up to it, plus what the other nodes pass it,
each of them within its own bound; once it is full, its own arrivals are refused first.

Runs on the event loop, inside the envelope middleware (which gives the refusal its request id
and version) and inside `passed_middleware` (which marks passed requests). The count is a plain
integer changed only between awaits; a request's place is given back when its handler returns,
raises or is cancelled (the client went away).
"""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from mps.errors import Unavailable
from mps.http.keys import API_VERSION, PASSED, REQUEST_ID
from mps.http.render import error_response

__all__ = ["ADMISSION", "Admission"]

OVERLOADED = "overloaded"
_MESSAGE = "The service is at capacity on this node; retry after the time in Retry-After"


class Admission:
    """The count of requests in flight on this node and the bound on it; `limit` 0 admits
    every request (and counts them)."""

    def __init__(self, limit: int, exempt: frozenset[str]) -> None:
        if limit < 0:
            msg = "the limit of requests in flight is 0 (none) or more"
            raise ValueError(msg)
        self.limit = limit
        # Canonical paths of the routes that are never refused nor counted.
        self.exempt = exempt
        self.in_flight = 0
        # Requests refused since the start, for tests and a look from a debugger.
        self.refused = 0

    def middleware(self) -> Middleware:
        @web.middleware
        async def admit(request: web.Request, handler: Handler) -> web.StreamResponse:
            resource = request.match_info.route.resource
            if resource is not None and resource.canonical in self.exempt:
                return await handler(request)
            # A passed request was admitted by the node it reached first.
            if self.limit and self.in_flight >= self.limit and not request.get(PASSED):
                self.refused += 1
                error = Unavailable(_MESSAGE, code=OVERLOADED)
                return error_response(error, request[REQUEST_ID], request[API_VERSION])
            self.in_flight += 1
            try:
                return await handler(request)
            finally:
                self.in_flight -= 1

        return admit


# The app's admission control, for tests and the operator to read the count from.
ADMISSION = web.AppKey("admission", Admission)
