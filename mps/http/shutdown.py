"""Whether this process has been told to stop: what `/health/ready` reports while the node
drains (mps.serve).

`mps.serve` sets it on SIGTERM, before the grace period in which the listener still serves
(`MPS_SHUTDOWN_GRACE`); the readiness route reads it. Both run on the event loop, so a plain
flag is enough.
"""

from __future__ import annotations

from aiohttp import web

__all__ = ["SHUTDOWN", "Shutdown"]


class Shutdown:
    """Set once, never cleared: a process that started stopping does not come back."""

    def __init__(self) -> None:
        self.requested = False

    def request(self) -> None:
        self.requested = True


SHUTDOWN = web.AppKey("shutdown", Shutdown)
