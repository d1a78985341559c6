"""Limits counted on this node (decisions 15): the developer-key limit (per node by contract),
the route limits (per user, IP, loginId or payment) and the sign-in route limits.

`RateLimiter` counts each request in this process's own `QuotaLedger`, one token at a time, so
a node counts exactly as one authority does for the shared limiter (mps.limits.shared): the same
window, the same throttled-retry rule, the same remaining, reset and Retry-After. `scale`
multiplies every limit (MPS_RATE_LIMIT_SCALE), so a load test can raise them without editing
code; a scale of 0 turns limiting off, and `hit` then returns None.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mps.errors import RateLimited
from mps.limits.windows import Limit, QuotaLedger, Scale, Verdict

__all__ = ["RateLimiter"]


def _no_hook(_name: str) -> None:
    pass


class RateLimiter:
    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 200_000,
        *,
        scale: float = 1.0,
        sweep_every: float = 1.0,
        on_refusal: Callable[[str], None] | None = None,
    ) -> None:
        self._scale = Scale(scale)
        self._ledger = QuotaLedger(clock, max_keys, sweep_every=sweep_every)
        # Told the limit's name at each refusal (the metrics' refusal counter).
        self._on_refusal = on_refusal or _no_hook

    @property
    def enabled(self) -> bool:
        return self._scale.enabled

    def hit(self, limit: Limit, key: str) -> Verdict | None:
        """Count one request; raises RateLimited when over the limit. None when limits are off."""
        if not self._scale.enabled:
            return None
        limit = self._scale(limit)
        grant = self._ledger.grant(limit, key, 1)
        if grant.retry_after is not None:
            self._on_refusal(limit.name)
            raise RateLimited(grant.retry_after)
        return Verdict(limit, grant.remaining, grant.reset_in)
