"""The machinery every limit shares: what a limit is (`Limit`), what a counted request is told
(`Verdict`), scaling (`Scale`), the throttled-retry rule (`throttled_end`), the bounded table of
per-key entries (`Table`) and the fixed window counted by one authority (`QuotaLedger`).

A window of `period` seconds counts up to `limit` requests per (limit name, key). Past it,
requests are refused until the window ends, and every refused request moves the end out by one
emission interval (`period / limit`, at most to `now + period`), so a client that hammers while
throttled waits longer [interface 8.2].

Tables are bounded: a key cap, a sweep of ended entries at most once per `sweep_every` seconds
when the table is full (so a full table costs O(1) per request rather than a scan each time),
and past the cap one shared overflow entry per limit for new keys until a sweep frees room.

Concurrency context: plain synchronous code, called on the event loop; nothing here awaits.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Grant", "Limit", "QuotaLedger", "Scale", "Table", "Verdict", "scaled", "throttled_end"]

V = TypeVar("V")
# The key new keys share once a table is full of live entries (no real key holds a NUL).
OVERFLOW = "\0overflow"


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


@dataclass(frozen=True)
class Grant:
    """An authority's answer to a lease request, all plain numbers (a transport carries it as
    JSON as it is).

    `granted` tokens are leased to the asking node, 0 when refused; `remaining` is what the
    window has left after this grant; `reset_in` is seconds from the authority's now to the
    window's end; `retry_after` is set only on a refusal: whole seconds to that end.
    """

    granted: int
    remaining: int
    reset_in: float
    retry_after: int | None = None


def scaled(limit: Limit, scale: float) -> Limit:
    """`limit` with its count multiplied by `scale` (at least 1), the window unchanged."""
    if scale == 1:
        return limit
    return Limit(limit.name, max(1, round(limit.limit * scale)), limit.period)


def throttled_end(limit: Limit, ends: float, now: float) -> float:
    """Where a window that refuses a request made at `now` ends: one emission interval
    (`period / limit`) further out, but never more than one period from now [8.2]."""
    return min(max(ends, now) + limit.period / limit.limit, now + limit.period)


class Scale:
    """MPS_RATE_LIMIT_SCALE on a limiter: every limit's count multiplied by `factor`, 0 turning
    limiting off. The scaled limits are kept, so a request costs a dict lookup."""

    def __init__(self, factor: float) -> None:
        if factor < 0:
            msg = "the rate limit scale cannot be negative"
            raise ValueError(msg)
        self.factor = factor
        self._scaled: dict[Limit, Limit] = {}

    @property
    def enabled(self) -> bool:
        return self.factor > 0

    def __call__(self, limit: Limit) -> Limit:
        effective = self._scaled.get(limit)
        if effective is None:
            effective = self._scaled[limit] = scaled(limit, self.factor)
        return effective


class Table(Generic[V]):
    """Entries per (limit name, key), at most `max_keys` of them; `idle` says which a sweep at
    `now` may drop."""

    def __init__(self, max_keys: int, sweep_every: float, idle: Callable[[V, float], bool]) -> None:
        self._entries: dict[tuple[str, str], V] = {}
        self._max_keys = max_keys
        self._sweep_every = sweep_every
        self._next_sweep = -math.inf
        self._idle = idle

    def get(self, name: str, key: str) -> V | None:
        return self._entries.get((name, key))

    def place(
        self,
        name: str,
        key: str,
        now: float,
        make: Callable[[], V],
        usable: Callable[[V], bool] = lambda _entry: True,
    ) -> tuple[str, V]:
        """The key's entry if it is `usable`, else a new one from `make`; returns the key it is
        kept under (the overflow key when the table is full of live entries) and the entry."""
        entry = self._entries.get((name, key))
        if entry is not None and usable(entry):
            return key, entry
        if len(self._entries) >= self._max_keys:
            self._sweep(now)
            if len(self._entries) >= self._max_keys:
                # Still full of live entries: this key shares its limit's overflow entry rather
                # than grow the table without bound or scan again.
                key = OVERFLOW
                entry = self._entries.get((name, key))
        if entry is None or not usable(entry):
            entry = self._entries[(name, key)] = make()
        return key, entry

    def _sweep(self, now: float) -> None:
        if now < self._next_sweep:
            return
        self._next_sweep = now + self._sweep_every
        for slot in [s for s, entry in self._entries.items() if self._idle(entry, now)]:
            del self._entries[slot]


class _Window:
    __slots__ = ("count", "ends")

    def __init__(self, ends: float) -> None:
        self.count = 0
        self.ends = ends


class QuotaLedger:
    """Fixed windows per (limit name, key) and how much of each has been granted: the authority
    of the shared limiter (mps.limits.shared), and the counter of the local one
    (mps.limits.local), which is granted one request at a time. Pure and synchronous; its clock
    is the authority's own."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 200_000,
        *,
        sweep_every: float = 1.0,
    ) -> None:
        self._clock = clock
        self._windows: Table[_Window] = Table(max_keys, sweep_every, lambda w, now: now >= w.ends)

    def grant(self, limit: Limit, key: str, want: int, nodes: int = 1) -> Grant:
        """Lease up to `want` tokens of `key`'s window to one of `nodes` nodes.

        Never more than the window has left, and at most `remaining // (2 * nodes)` (at least
        1), so a filling window strands little on nodes that stop spending. With nothing left,
        refuses and pushes the window's end out as a throttled request does."""
        now = self._clock()
        _, window = self._windows.place(
            limit.name, key, now, lambda: _Window(now + limit.period), lambda w: now < w.ends
        )
        left = limit.limit - window.count
        if left <= 0:
            window.ends = throttled_end(limit, window.ends, now)
            reset_in = window.ends - now
            return Grant(0, 0, reset_in, math.ceil(reset_in))
        # A remote caller's nonsense (0 or fewer) is read as the least that makes sense.
        granted = min(max(1, want), max(1, left // (2 * max(1, nodes))))
        window.count += granted
        return Grant(granted, left - granted, window.ends - now)
