"""Whether this process has been told to stop: what `/health/ready` reports while the node
drains (mps.serve), and why each answer then closes its connection (`close_when_stopping`).

`mps.serve` sets it on SIGTERM, before the grace period in which the listener still serves
(`MPS_SHUTDOWN_GRACE`); the readiness route reads it. Both run on the event loop, so a plain
flag is enough.
"""

from __future__ import annotations

from aiohttp import hdrs, web

__all__ = ["SHUTDOWN", "Shutdown", "close_when_stopping"]


class Shutdown:
    """Set once, never cleared: a process that started stopping does not come back."""

    def __init__(self) -> None:
        self.requested = False

    def request(self) -> None:
        self.requested = True


SHUTDOWN = web.AppKey("shutdown", Shutdown)


async def close_when_stopping(request: web.Request, response: web.StreamResponse) -> None:
    """The application's `on_response_prepare` signal: once the node is stopping, every answer
    says `Connection: close` and ends its connection.

    A balancer keeps idle connections to a node open and reuses them. Were they left open
    until the listener closes, a request sent on one at the moment the node closes it would
    fail (nginx answers such a POST 502, not knowing whether it ran). Closed one by one as
    their answers go out during the grace, the connections are gone before the listener is,
    and the balancer's next request opens a new connection, to a node that is staying."""
    if request.app[SHUTDOWN].requested:
        # aiohttp has chosen the head's Connection header by the time this signal runs;
        # force_close is what makes it end the connection after the answer.
        response.force_close()
        response.headers[hdrs.CONNECTION] = "close"
