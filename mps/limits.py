"""Request rate limits (decisions 15): fixed windows that a throttled retry pushes further out.

Each limit counts requests per key (user, IP, loginId, API key) in a window of `period` seconds.
Past `limit`, requests are refused with Retry-After until the window ends, and every refused
request moves the window's end out by one emission interval (`period / limit`, at most to
`now + period`), so a client that hammers while throttled waits longer [interface 8.2].

State is in memory on this node. The developer-key limit is per node by contract; the others are
per node for now too (see README, "Limits").
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from mps.errors import RateLimited

__all__ = ["Limit", "RateLimiter", "Verdict"]


@dataclass(frozen=True)
class Limit:
    name: str
    limit: int
    period: float

    @property
    def policy_header(self) -> str:
        return f'"{self.name}";q={self.limit};w={int(self.period)}'


@dataclass(frozen=True)
class Verdict:
    limit: Limit
    remaining: int
    reset_in: float

    @property
    def header(self) -> str:
        return f'"{self.limit.name}";r={self.remaining};t={math.ceil(self.reset_in)}'


class _Window:
    __slots__ = ("count", "ends")

    def __init__(self, ends: float) -> None:
        self.count = 0
        self.ends = ends


class RateLimiter:
    def __init__(
        self, clock: Callable[[], float] = time.monotonic, max_keys: int = 200_000
    ) -> None:
        self._clock = clock
        self._windows: dict[tuple[str, str], _Window] = {}
        self._max_keys = max_keys

    def hit(self, limit: Limit, key: str) -> Verdict:
        """Count one request; raises RateLimited when over the limit."""
        now = self._clock()
        slot = (limit.name, key)
        window = self._windows.get(slot)
        if window is None or now >= window.ends:
            if len(self._windows) >= self._max_keys:
                self._sweep(now)
            window = self._windows[slot] = _Window(now + limit.period)
        if window.count >= limit.limit:
            window.ends = min(
                max(window.ends, now) + limit.period / limit.limit, now + limit.period
            )
            raise RateLimited(math.ceil(window.ends - now))
        window.count += 1
        return Verdict(limit, limit.limit - window.count, window.ends - now)

    def _sweep(self, now: float) -> None:
        for slot in [s for s, w in self._windows.items() if now >= w.ends]:
            del self._windows[slot]
