"""Rate limits answer 429 with Retry-After, and hammering extends the wait (decisions 15)."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.errors import RateLimited
from mps.limits import Limit, RateLimiter
from tests.helpers import assert_envelope, sign_up


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_limiter_allows_up_to_the_limit_then_refuses_until_the_window_ends() -> None:
    time = FakeTime()
    limiter = RateLimiter(clock=time)
    limit = Limit("t", 3, 60)

    remaining = [limiter.hit(limit, "k").remaining for _ in range(3)]
    with pytest.raises(RateLimited) as refused:
        limiter.hit(limit, "k")

    assert remaining == [2, 1, 0]
    assert refused.value.retry_after == 60
    time.now += 61
    assert limiter.hit(limit, "k").remaining == 2


def test_limiter_counts_each_key_apart() -> None:
    limiter = RateLimiter(clock=FakeTime())
    limit = Limit("t", 1, 60)

    limiter.hit(limit, "a")

    assert limiter.hit(limit, "b").remaining == 0


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
    assert refused.status == 429
    assert_envelope(await refused.json(), 429, "rate_limited")
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
