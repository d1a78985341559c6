"""Request rate limits (decisions 15): fixed windows that a throttled retry pushes further out.

Each limit counts requests per key (user, IP, loginId, API key) in a window of `period` seconds.
Past `limit`, requests are refused with Retry-After until the window ends, and every refused
request moves the window's end out by one emission interval (`period / limit`, at most to
`now + period`), so a client that hammers while throttled waits longer [interface 8.2].

State is in memory on this node. The developer-key limit is per node by contract, and so are the
route limits (per user, IP, loginId or payment) and the sign-in limits: they all go through
`RateLimiter`. The per-user standard limit holds across the nodes of a cluster instead: it goes
through `mps.quota.SharedLimiter`, which spends blocks of the window leased from the key's one
authority and applies the same window and throttled-retry rule (`throttled_end`).

`scale` multiplies every limit (MPS_RATE_LIMIT_SCALE), so a load test can raise them without
editing code; a scale of 0 turns limiting off, and `hit` then returns None.

The table of windows is swept of ended windows at most once per `sweep_every` seconds when it
reaches its key cap, so a full table costs O(1) per request rather than a scan each time; past
the cap, new keys share one overflow window per limit until the sweep frees room.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from mps.errors import RateLimited

__all__ = ["Limit", "RateLimiter", "Verdict", "scaled", "throttled_end"]


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


def scaled(limit: Limit, scale: float) -> Limit:
    """`limit` with its count multiplied by `scale` (at least 1), the window unchanged."""
    if scale == 1:
        return limit
    return Limit(limit.name, max(1, round(limit.limit * scale)), limit.period)


def throttled_end(limit: Limit, ends: float, now: float) -> float:
    """Where a window that refuses a request made at `now` ends: one emission interval
    (`period / limit`) further out, but never more than one period from now [8.2]."""
    return min(max(ends, now) + limit.period / limit.limit, now + limit.period)


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
        if scale < 0:
            msg = "the rate limit scale cannot be negative"
            raise ValueError(msg)
        self._clock = clock
        self._windows: dict[tuple[str, str], _Window] = {}
        self._max_keys = max_keys
        self._scale = scale
        self._scaled: dict[Limit, Limit] = {}
        self._sweep_every = sweep_every
        self._next_sweep = -math.inf
        # Told the limit's name at each refusal (the metrics' refusal counter).
        self._on_refusal = on_refusal or _no_hook

    @property
    def enabled(self) -> bool:
        return self._scale > 0

    def hit(self, limit: Limit, key: str) -> Verdict | None:
        """Count one request; raises RateLimited when over the limit. None when limits are off."""
        if not self._scale:
            return None
        effective = self._scaled.get(limit)
        if effective is None:
            effective = self._scaled[limit] = scaled(limit, self._scale)
        limit = effective
        now = self._clock()
        slot = (limit.name, key)
        window = self._windows.get(slot)
        if window is None or now >= window.ends:
            if len(self._windows) >= self._max_keys:
                self._sweep(now)
                if len(self._windows) >= self._max_keys:
                    # Still full of live windows: count this key in its limit's overflow window
                    # rather than grow without bound or scan again.
                    slot = (limit.name, "\0overflow")
                    window = self._windows.get(slot)
            if window is None or now >= window.ends:
                window = self._windows[slot] = _Window(now + limit.period)
        if window.count >= limit.limit:
            window.ends = throttled_end(limit, window.ends, now)
            self._on_refusal(limit.name)
            raise RateLimited(math.ceil(window.ends - now))
        window.count += 1
        return Verdict(limit, limit.limit - window.count, window.ends - now)

    def _sweep(self, now: float) -> None:
        if now < self._next_sweep:
            return
        self._next_sweep = now + self._sweep_every
        for slot in [s for s, w in self._windows.items() if now >= w.ends]:
            del self._windows[slot]
