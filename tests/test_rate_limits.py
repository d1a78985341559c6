"""Rate limits answer 429 with Retry-After, and hammering extends the wait (decisions 15)."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.errors import RateLimited
from mps.limits import Limit, RateLimiter
from tests.helpers import assert_refused, sign_up


def remaining(limiter: RateLimiter, limit: Limit, key: str) -> int:
    verdict = limiter.hit(limit, key)
    assert verdict is not None
    return verdict.remaining


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_limiter_allows_up_to_the_limit_then_refuses_until_the_window_ends() -> None:
    time = FakeTime()
    limiter = RateLimiter(clock=time)
    limit = Limit("t", 3, 60)

    left = [remaining(limiter, limit, "k") for _ in range(3)]
    with pytest.raises(RateLimited) as refused:
        limiter.hit(limit, "k")

    assert left == [2, 1, 0]
    assert refused.value.retry_after == 60
    time.now += 61
    assert remaining(limiter, limit, "k") == 2


def test_limiter_counts_each_key_apart() -> None:
    limiter = RateLimiter(clock=FakeTime())
    limit = Limit("t", 1, 60)

    limiter.hit(limit, "a")

    assert remaining(limiter, limit, "b") == 0


def test_retrying_while_throttled_pushes_the_window_out() -> None:
    time = FakeTime()
    limiter = RateLimiter(clock=time)
    limit = Limit("t", 2, 60)
    limiter.hit(limit, "k")
    limiter.hit(limit, "k")
    time.now += 50  # 10 s left in the window

    waits = []
    for _ in range(3):
        with pytest.raises(RateLimited) as refused:
            limiter.hit(limit, "k")
        waits.append(refused.value.retry_after)

    assert waits == [40, 60, 60]  # +30 s each, never beyond one period from now
    assert waits[0] > 10


def test_scale_multiplies_every_limit() -> None:
    limiter = RateLimiter(clock=FakeTime(), scale=2.5)
    limit = Limit("t", 2, 60)

    counts = [remaining(limiter, limit, "k") for _ in range(5)]

    assert counts == [4, 3, 2, 1, 0]
    with pytest.raises(RateLimited):
        limiter.hit(limit, "k")


def test_scale_zero_turns_limiting_off() -> None:
    limiter = RateLimiter(clock=FakeTime(), scale=0)
    limit = Limit("t", 1, 60)

    verdicts = [limiter.hit(limit, "k") for _ in range(1000)]

    assert verdicts == [None] * 1000
    assert not limiter.enabled


def test_a_full_table_counts_new_keys_together_instead_of_growing() -> None:
    time = FakeTime()
    limiter = RateLimiter(clock=time, max_keys=3)
    limit = Limit("t", 2, 60)
    for key in ("a", "b", "c"):
        limiter.hit(limit, key)

    limiter.hit(limit, "d")
    limiter.hit(limit, "e")

    with pytest.raises(RateLimited):
        limiter.hit(limit, "f")  # d, e and f share the overflow window
    time.now += 61
    assert remaining(limiter, limit, "g") == 1  # the sweep freed the ended windows


async def test_api_key_creation_is_limited_to_ten_a_minute_per_user(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    body = {"name": "k", "scopes": ["analytics:read"]}

    statuses = []
    for _ in range(10):
        ok = await client.post("/api/v1/merchant/api-keys", json=body, headers=member.headers)
        statuses.append(ok.status)
    refused = await client.post("/api/v1/merchant/api-keys", json=body, headers=member.headers)

    assert statuses == [201] * 10
    assert ok.headers["RateLimit-Policy"] == '"api-key-create";q=10;w=60'
    assert ok.headers["RateLimit"].startswith('"api-key-create";r=0;')
    await assert_refused(refused, 429, "rate_limited")
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
