"""The per-user standard limit across nodes (decisions 15): the authority's ledger never grants
more than the limit in a window, nodes leasing from it accept close to the limit and never
more, and one node counts exactly as the per-node limiter does."""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from mps.errors import RateLimited
from mps.limits import (
    Grant,
    Limit,
    LocalAuthority,
    QuotaLedger,
    RateLimiter,
    SharedLimiter,
    Verdict,
)
from tests.helpers import assert_refused, sign_up

STANDARD = Limit("standard", 600, 60)


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class RecordingAuthority:
    """The local authority of one ledger for `nodes` nodes, answering after `delay` seconds of
    real time (the network hop to the key's authority); records every request it gets."""

    def __init__(self, ledger: QuotaLedger, nodes: int = 1, delay: float = 0.0) -> None:
        self.local = LocalAuthority(ledger, nodes)
        self.delay = delay
        self.calls: list[tuple[str, int]] = []
        self.fail_with: Exception | None = None

    async def __call__(self, limit: Limit, key: str, want: int) -> Grant:
        self.calls.append((key, want))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail_with is not None:
            raise self.fail_with
        return await self.local(limit, key, want)


def node_with_local_authority(
    time: FakeTime, **options: Any
) -> tuple[SharedLimiter, RecordingAuthority]:
    authority = RecordingAuthority(QuotaLedger(clock=time))
    return SharedLimiter(authority, clock=time, **options), authority


async def outcome(limiter: SharedLimiter, limit: Limit, key: str) -> tuple[Any, ...]:
    try:
        verdict = await limiter.hit(limit, key)
    except RateLimited as refused:
        return ("refused", refused.retry_after)
    assert verdict is not None
    return ("ok", verdict.remaining, verdict.reset_in)


def counted_outcome(limiter: RateLimiter, limit: Limit, key: str) -> tuple[Any, ...]:
    try:
        verdict = limiter.hit(limit, key)
    except RateLimited as refused:
        return ("refused", refused.retry_after)
    assert verdict is not None
    return ("ok", verdict.remaining, verdict.reset_in)


# The ledger (authority side)


@hypothesis_settings(max_examples=300, database=None, deadline=None)
@given(
    limit=st.integers(min_value=1, max_value=700),
    steps=st.lists(
        st.tuples(
            st.sampled_from([0.0, 0.0, 0.0, 0.5, 7.0, 30.0, 59.9, 61.0]),  # time passing
            st.sampled_from(["a", "b"]),  # key
            st.integers(min_value=-2, max_value=200),  # want, nonsense included
            st.integers(min_value=0, max_value=6),  # nodes, nonsense included
        ),
        max_size=300,
    ),
)
def test_ledger_never_grants_more_than_the_limit_in_a_window(
    limit: int, steps: list[tuple[float, str, int, int]]
) -> None:
    time = FakeTime()
    ledger = QuotaLedger(clock=time)
    rule = Limit("t", limit, 60)
    ends = {"a": -math.inf, "b": -math.inf}
    granted = {"a": 0, "b": 0}

    for elapsed, key, want, nodes in steps:
        time.now += elapsed
        grant = ledger.grant(rule, key, want, nodes)

        if time.now >= ends[key]:
            granted[key] = 0  # a new window
        granted[key] += grant.granted
        ends[key] = time.now + grant.reset_in
        assert granted[key] <= limit
        assert grant.remaining == limit - granted[key]
        assert grant.granted <= max(1, want)
        assert 0 < grant.reset_in <= 60
        if grant.granted:
            assert grant.retry_after is None
        else:
            assert grant.remaining == 0
            assert grant.retry_after == math.ceil(grant.reset_in)


def test_ledger_grants_shrink_as_the_window_fills() -> None:
    ledger = QuotaLedger(clock=FakeTime())

    sizes = []
    while (grant := ledger.grant(STANDARD, "k", 60, nodes=3)).granted:
        sizes.append(grant.granted)

    assert sizes[:5] == [60] * 5  # 300 left: 300 // 6 = 50 from here
    assert sizes[5] == 50
    assert sizes == sorted(sizes, reverse=True)
    assert sizes[-6:] == [1] * 6  # the last 5 go one at a time
    assert sum(sizes) == 600


def test_ledger_refusal_pushes_the_window_out_by_the_throttled_retry_rule() -> None:
    time = FakeTime()
    ledger = QuotaLedger(clock=time)
    limit = Limit("t", 2, 60)
    ledger.grant(limit, "k", 1)
    ledger.grant(limit, "k", 1)
    time.now += 50  # 10 s left in the window

    refusals = [ledger.grant(limit, "k", 1) for _ in range(3)]

    assert [g.granted for g in refusals] == [0, 0, 0]
    assert [g.retry_after for g in refusals] == [40, 60, 60]
    time.now += 60
    assert ledger.grant(limit, "k", 1).granted == 1


def test_ledger_with_a_full_table_counts_new_keys_together_instead_of_growing() -> None:
    time = FakeTime()
    ledger = QuotaLedger(clock=time, max_keys=2)
    limit = Limit("t", 2, 60)
    ledger.grant(limit, "a", 1)
    ledger.grant(limit, "b", 1)

    shared = [ledger.grant(limit, key, 1).granted for key in ("c", "d", "e")]

    assert shared == [1, 1, 0]  # c, d and e share the overflow window
    time.now += 61
    assert ledger.grant(limit, "f", 1).remaining == 1  # the sweep freed the ended windows


# Nodes leasing from one authority


async def test_three_nodes_sharing_one_authority_accept_the_limit_and_no_more_in_a_window() -> None:
    # given three nodes whose lease requests take a few milliseconds to be answered
    time = FakeTime()
    authority = RecordingAuthority(QuotaLedger(clock=time), nodes=3, delay=0.003)
    nodes = [SharedLimiter(authority, clock=time) for _ in range(3)]
    accepted = [0, 0, 0]

    async def connection(index: int) -> None:
        while True:
            try:
                await nodes[index].hit(STANDARD, "user:u")
            except RateLimited:
                return
            accepted[index] += 1
            await asyncio.sleep(0)  # the next request arrives on a later turn of the loop

    # when eight connections per node send requests until each is refused
    await asyncio.gather(*(connection(i) for i in range(3) for _ in range(8)))

    # then the nodes together accepted the limit (within 5 %) and never more
    assert 0.95 * 600 <= sum(accepted) <= 600
    assert min(accepted) >= 150  # the spread stayed even
    assert len(authority.calls) < sum(accepted) / 5  # spent locally, leased in blocks


async def test_nodes_start_a_new_window_after_the_reset() -> None:
    time = FakeTime()
    authority = RecordingAuthority(QuotaLedger(clock=time), nodes=2, delay=0.001)
    nodes = [SharedLimiter(authority, clock=time) for _ in range(2)]
    limit = Limit("t", 10, 60)
    for _ in range(10):
        await nodes[0].hit(limit, "k")
    for node in nodes:
        with pytest.raises(RateLimited):
            await node.hit(limit, "k")

    time.now += 61
    verdicts = [await node.hit(limit, "k") for node in nodes]

    assert all(v is not None and v.reset_in == 60 for v in verdicts)


async def test_a_node_that_sees_one_request_leases_one_token() -> None:
    time = FakeTime()
    authority = RecordingAuthority(QuotaLedger(clock=time), nodes=2)
    stray, busy = SharedLimiter(authority, clock=time), SharedLimiter(authority, clock=time)

    await stray.hit(STANDARD, "user:u")
    accepted = 0
    with pytest.raises(RateLimited):  # noqa: PT012 - counting up to the refusal
        while True:
            await busy.hit(STANDARD, "user:u")
            accepted += 1

    assert authority.calls[0] == ("user:u", 1)
    assert accepted == 599


async def test_leases_grow_with_the_node_s_demand_up_to_the_block() -> None:
    time = FakeTime()
    limiter, authority = node_with_local_authority(time)

    for _ in range(300):
        await limiter.hit(STANDARD, "user:u")

    wants = [want for _, want in authority.calls]
    assert wants[:8] == [1, 1, 2, 4, 8, 16, 32, 60]
    assert max(wants) == 60  # 10 % of 600


async def test_concurrent_misses_make_one_authority_call() -> None:
    time = FakeTime()
    authority = RecordingAuthority(QuotaLedger(clock=time), delay=0.005)
    limiter = SharedLimiter(authority, clock=time)

    verdicts = await asyncio.gather(*(limiter.hit(STANDARD, "user:u") for _ in range(10)))

    assert authority.calls == [("user:u", 10)]
    assert sorted(v.remaining for v in verdicts if v is not None) == list(range(590, 600))


async def test_a_hit_with_an_allowance_returns_without_suspending_or_asking() -> None:
    time = FakeTime()
    limiter, authority = node_with_local_authority(time)
    for _ in range(3):  # leases of 1, 1 and 2 (doubling): one token stays here
        await limiter.hit(STANDARD, "user:u")
    calls = len(authority.calls)

    pending = limiter.hit(STANDARD, "user:u")
    with pytest.raises(StopIteration) as done:
        pending.send(None)  # runs to the end at once: nothing awaited

    verdict = done.value.value
    assert isinstance(verdict, Verdict)
    assert verdict.remaining == 596
    assert len(authority.calls) == calls


async def test_tokens_lapse_no_later_than_the_authority_s_window_however_slow_its_answer() -> None:
    time = FakeTime()
    ledger = QuotaLedger(clock=time)

    async def slow(limit: Limit, key: str, want: int) -> Grant:
        time.now += 2  # the answer is computed 2 s after the request was sent
        return ledger.grant(limit, key, want)

    limiter = SharedLimiter(slow, clock=time)
    first = await limiter.hit(STANDARD, "user:u")  # the ledger's window ends at 1062

    assert first is not None
    assert time.now + first.reset_in == 1060  # sent at 1000, plus the 60 s it was told


async def test_a_refused_request_gets_retry_after_and_pushes_the_window_out() -> None:
    # given a node that has spent its window
    time = FakeTime()
    limiter, authority = node_with_local_authority(time)
    limit = Limit("t", 2, 60)
    await limiter.hit(limit, "k")
    await limiter.hit(limit, "k")
    time.now += 50  # 10 s left in the window

    # when the client keeps asking
    waits = []
    for _ in range(3):
        with pytest.raises(RateLimited) as refused:
            await limiter.hit(limit, "k")
        waits.append(refused.value.retry_after)

    # then each refusal waits longer, up to a period, and only the first asked the authority
    assert waits == [40, 60, 60]
    assert len(authority.calls) == 3
    time.now += 59  # 1 s before the pushed-out end
    with pytest.raises(RateLimited):
        await limiter.hit(limit, "k")
    time.now += 61
    verdict = await limiter.hit(limit, "k")
    assert verdict is not None
    assert (verdict.remaining, verdict.reset_in) == (1, 60)  # a new window


async def test_an_authority_error_reaches_every_waiting_request_and_the_next_miss_asks_again() -> (
    None
):
    time = FakeTime()
    authority = RecordingAuthority(QuotaLedger(clock=time), delay=0.001)
    authority.fail_with = ConnectionError("authority unreachable")
    limiter = SharedLimiter(authority, clock=time)

    results = await asyncio.gather(
        *(limiter.hit(STANDARD, "user:u") for _ in range(3)), return_exceptions=True
    )
    authority.fail_with = None
    verdict = await limiter.hit(STANDARD, "user:u")

    assert all(isinstance(r, ConnectionError) for r in results)
    assert verdict is not None
    assert len(authority.calls) == 2


async def test_a_request_cancelled_while_waiting_loses_no_grant() -> None:
    time = FakeTime()
    authority = RecordingAuthority(QuotaLedger(clock=time), delay=0.005)
    limiter = SharedLimiter(authority, clock=time)

    cancelled = asyncio.ensure_future(limiter.hit(STANDARD, "user:u"))
    kept = asyncio.ensure_future(limiter.hit(STANDARD, "user:u"))
    await asyncio.sleep(0.001)
    cancelled.cancel()
    first = await kept
    second = await limiter.hit(STANDARD, "user:u")

    assert cancelled.cancelled()
    assert first is not None and second is not None
    assert authority.calls == [("user:u", 2)]  # the second token waited here unspent
    assert second.remaining == 598


async def test_a_full_table_asks_for_new_keys_together_instead_of_growing() -> None:
    time = FakeTime()
    limiter, authority = node_with_local_authority(time, max_keys=2)
    for key in ("a", "b", "c", "d"):
        await limiter.hit(STANDARD, key)

    time.now += 61
    await limiter.hit(STANDARD, "e")

    assert [key for key, _ in authority.calls] == ["a", "b", "\0overflow", "\0overflow", "e"]


# One node with a local authority counts as the per-node limiter does


@pytest.mark.parametrize("seed", range(40))
async def test_one_node_counts_exactly_as_the_per_node_limiter(seed: int) -> None:
    rng = random.Random(seed)
    time = FakeTime()
    scale = rng.choice([1.0, 0.5, 2.5])
    limit = Limit("t", rng.randint(1, 30), rng.choice([1.0, 60.0]))
    shared, _ = node_with_local_authority(time, scale=scale)
    counted = RateLimiter(clock=time, scale=scale)

    for _ in range(300):
        time.now += rng.choice([0.0, 0.0, 0.0, 0.01, 0.3, limit.period / 3, limit.period])
        key = rng.choice(["a", "b"])

        assert await outcome(shared, limit, key) == counted_outcome(counted, limit, key)


async def test_one_node_matches_the_per_node_limiter_on_the_standard_limit_through_a_window() -> (
    None
):
    time = FakeTime()
    shared, _ = node_with_local_authority(time)
    counted = RateLimiter(clock=time)

    for _ in range(620):
        time.now += 0.05
        assert await outcome(shared, STANDARD, "u") == counted_outcome(counted, STANDARD, "u")


async def test_scale_zero_turns_the_shared_limit_off_without_asking_anyone() -> None:
    limiter, authority = node_with_local_authority(FakeTime(), scale=0)

    verdicts = [await limiter.hit(STANDARD, "user:u") for _ in range(1000)]

    assert verdicts == [None] * 1000
    assert not limiter.enabled
    assert authority.calls == []


async def test_the_standard_limit_answers_429_with_retry_after_through_the_app(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    client: TestClient[Any, Any] = await aiohttp_client(make_app(rate_limit_scale=0.05))
    member = await sign_up(client)  # 600 / min scaled to 30

    statuses = []
    for _ in range(30):
        ok = await client.get("/api/v1/auth/me", headers=member.headers)
        statuses.append(ok.status)
    refused = await client.get("/api/v1/auth/me", headers=member.headers)

    assert statuses == [200] * 30
    assert ok.headers["RateLimit-Policy"] == '"standard";q=30;w=60'
    assert ok.headers["RateLimit"].startswith('"standard";r=0;')
    await assert_refused(refused, 429, "rate_limited")
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
