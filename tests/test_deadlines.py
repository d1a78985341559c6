"""A request past its deadline is answered 503; other cancellations pass through untouched."""

from __future__ import annotations

import asyncio

import pytest

from mps.errors import Unavailable
from mps.http.deadlines import Deadlines


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_a_request_past_its_deadline_is_answered_503() -> None:
    # given a request waiting on something that never answers
    time = FakeTime()
    deadlines = Deadlines(30, clock=time)
    request = asyncio.ensure_future(deadlines.run(lambda: asyncio.Event().wait()))
    await asyncio.sleep(0)

    # when the watchdog looks after the deadline has passed
    time.now += 30
    expired = deadlines.expire_overdue()

    # then the request ends with 503, not a cancellation
    assert expired == 1
    with pytest.raises(Unavailable, match="too long"):
        await request


async def test_a_request_within_its_deadline_is_left_alone() -> None:
    time = FakeTime()
    deadlines = Deadlines(30, clock=time)
    gate = asyncio.Event()
    request = asyncio.ensure_future(deadlines.run(gate.wait))
    await asyncio.sleep(0)

    time.now += 29
    expired = deadlines.expire_overdue()
    gate.set()

    assert expired == 0
    assert await request is True


async def test_a_cancellation_that_is_not_the_deadline_passes_through() -> None:
    deadlines = Deadlines(30, clock=FakeTime())
    request = asyncio.ensure_future(deadlines.run(lambda: asyncio.Event().wait()))
    await asyncio.sleep(0)

    request.cancel()

    with pytest.raises(asyncio.CancelledError):
        await request
    assert deadlines.expire_overdue() == 0
