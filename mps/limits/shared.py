"""The per-user standard limit across the nodes of a cluster (decisions 15: 600 / min per user,
holding across all nodes): each key's window is kept by one authority, and the nodes that serve
the key's requests lease blocks of it and spend them in memory.

    node: SharedLimiter.hit(limit, key)            authority: QuotaLedger.grant
      allowance left  -> spend one token here        per (limit name, key): window end and
                         (no await, no I/O)          count granted; answers Grant(granted,
      none left       -> one lease request per  -->  remaining, reset_in, retry_after)
                         key in flight: Authority
                         (limit, key, want)

Which node is a key's authority, and how a lease request reaches it, is the cluster's business:
the limiter is handed an `Authority` callable. `LocalAuthority` answers from a ledger in this
process, which makes one node count exactly as `RateLimiter` (mps.limits.local) does: both count
in a `QuotaLedger` (mps.limits.windows).

Why a window never grants more than its limit, whatever the latency: the ledger hands out at
most `limit - count` per window, and a node keeps its tokens only until `sent + reset_in`, where
`sent` is its own clock when it sent the request. The authority answered later than that, so the
node's end is never after the authority's: no token is spent in a later window than it was
granted in.

What can be lost instead is quota a node holds when its traffic for the key stops: those tokens
lapse unspent with the window. Two rules keep that small. The ledger grants at most
`remaining // (2 * nodes)` (at least 1), so as the window fills what any node can hold shrinks
with it. And a node sizes each lease by its own demand: the requests waiting for it, or as many
as it was granted so far in the window (so leases double while it stays busy), never more than
its block (`block` of the limit, 10 %: 60 of 600). A node that sees one stray request leases
one token, not sixty.

Throttled: the ledger refuses with the window's end pushed out by the throttled-retry rule
(`throttled_end`). The node then refuses by itself until that end and pushes its
copy out by the same rule for each further request, so a client hammering while throttled costs
no authority call per request and waits exactly as long as on a single node.

Concurrency: everything runs on the event loop. A miss starts one task per key that asks the
authority; the requests missing meanwhile wait on it (shielded, so a request cancelled while
waiting loses no grant for the others). An authority error reaches every request waiting on that
lease, and the next miss asks again.

`scale` (MPS_RATE_LIMIT_SCALE) applies on the node as in RateLimiter, 0 turning limiting off;
the node sends the scaled limit and the ledger counts the limit it is given, so the nodes of a
cluster must run with one scale. The node's leases are kept in the same bounded `Table` as the
ledger's windows (a key cap, a sweep when full, an overflow lease per limit past the cap), swept
of leases that ended with nothing waiting on them.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable

from mps.errors import RateLimited
from mps.limits.windows import Grant, Limit, QuotaLedger, Scale, Table, Verdict, throttled_end

__all__ = ["Authority", "LocalAuthority", "SharedLimiter"]

# Asks the key's authority for `want` tokens of the (scaled) limit's current window.
Authority = Callable[[Limit, str, int], Awaitable[Grant]]


class LocalAuthority:
    """The authority of a single process: `ledger` answers in-process, for `nodes` nodes."""

    def __init__(self, ledger: QuotaLedger, nodes: int = 1) -> None:
        self._ledger = ledger
        self._nodes = nodes

    async def __call__(self, limit: Limit, key: str, want: int) -> Grant:
        return self._ledger.grant(limit, key, want, self._nodes)


class _Lease:
    """What a node holds of one key's window. `ends` is by the node's clock."""

    __slots__ = (
        "counted",
        "ends",
        "leased",
        "pending",
        "refused",
        "remaining",
        "tokens",
        "waiting",
    )

    def __init__(self) -> None:
        self.tokens = 0  # the allowance left to spend here
        self.ends = -math.inf  # when the tokens lapse, or the refusal ends
        self.remaining = 0  # what the window had left at the authority after the last grant
        self.leased = 0  # granted to this node in this window: sizes the next lease
        self.refused = False  # the authority refused: throttled here until `ends`
        # The authority's refusal already pushed the window out for the request it answered.
        self.counted = False
        self.pending: asyncio.Task[None] | None = None  # the lease request in flight
        self.waiting = 0  # requests waiting for a lease


def _no_hook(_name: str) -> None:
    pass


class SharedLimiter:
    """The node's side: spends leased tokens in memory and asks `authority` for more.

    `hit` is called on the event loop by the request pipeline. `block` is the largest lease, as
    a share of the limit; `on_refusal` is told the limit's name at each refusal, as
    RateLimiter's is."""

    def __init__(
        self,
        authority: Authority,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 200_000,
        *,
        scale: float = 1.0,
        block: float = 0.1,
        sweep_every: float = 1.0,
        on_refusal: Callable[[str], None] | None = None,
    ) -> None:
        if not 0 < block <= 1:
            msg = "the lease block is a share of the limit, more than 0 and at most 1"
            raise ValueError(msg)
        self._scale = Scale(scale)
        self._authority = authority
        self._clock = clock
        self._leases: Table[_Lease] = Table(max_keys, sweep_every, _idle)
        self._block = block
        self._on_refusal = on_refusal or _no_hook

    @property
    def enabled(self) -> bool:
        return self._scale.enabled

    async def hit(self, limit: Limit, key: str) -> Verdict | None:
        """Count one request; raises RateLimited when over the limit. None when limits are off.

        With an allowance here (or a refusal still running) it returns without suspending;
        otherwise it waits for the key's one lease request in flight."""
        if not self._scale.enabled:
            return None
        effective = self._scale(limit)
        lease = self._leases.get(effective.name, key)
        if lease is not None:
            now = self._clock()
            if now < lease.ends:
                if lease.tokens:
                    lease.tokens -= 1
                    return Verdict(effective, lease.remaining + lease.tokens, lease.ends - now)
                if lease.refused:
                    raise self._refuse(effective, lease, now)
        return await self._miss(effective, key)

    async def _miss(self, limit: Limit, key: str) -> Verdict:
        key, lease = self._leases.place(limit.name, key, self._clock(), _Lease)
        lease.waiting += 1
        try:
            while True:
                now = self._clock()
                if now >= lease.ends:
                    # The window is over here: what is left of it lapses unspent.
                    lease.tokens = lease.leased = 0
                    lease.refused = lease.counted = False
                if lease.tokens:
                    lease.tokens -= 1
                    return Verdict(limit, lease.remaining + lease.tokens, lease.ends - now)
                if lease.refused:
                    raise self._refuse(limit, lease, now)
                if lease.pending is None:
                    lease.pending = asyncio.create_task(self._lease(limit, key, lease))
                # Shielded: a request cancelled here must not cancel the lease the others
                # (and the ledger, which has counted it) are waiting on.
                await asyncio.shield(lease.pending)
        finally:
            lease.waiting -= 1

    async def _lease(self, limit: Limit, key: str, lease: _Lease) -> None:
        try:
            block = max(1, round(limit.limit * self._block))
            want = min(block, max(1, lease.waiting, lease.leased))
            # The end is reckoned from the sending, not the answer: never after the
            # authority's own end, however long the answer took.
            sent = self._clock()
            grant = await self._authority(limit, key, want)
            lease.ends = sent + grant.reset_in
            lease.remaining = grant.remaining
            lease.tokens = grant.granted
            lease.leased += grant.granted
            lease.refused = lease.counted = grant.granted == 0
        finally:
            lease.pending = None

    def _refuse(self, limit: Limit, lease: _Lease, now: float) -> RateLimited:
        if lease.counted:
            lease.counted = False
        else:
            lease.ends = throttled_end(limit, lease.ends, now)
        self._on_refusal(limit.name)
        return RateLimited(math.ceil(lease.ends - now))


def _idle(lease: _Lease, now: float) -> bool:
    """Whether a sweep may drop the lease: it ended, and nothing waits on it."""
    return now >= lease.ends and lease.pending is None and not lease.waiting
