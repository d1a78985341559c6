"""The webhook dispatcher's lanes: slots per endpoint, a bounded wait for one, and a refusal
that sends the attempt back to the broker (mps.actors.webhooks.dispatcher)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pykka import ActorRef

from mps.actors.runtime import ask, stop
from mps.actors.webhooks.dispatcher import Acquire, Full, Release, Room, WebhookDispatcher


@pytest.fixture
async def dispatcher() -> AsyncIterator[ActorRef[Any]]:
    ref = WebhookDispatcher.start(per_lane=1, waiting_per_lane=2, patience=0.2)
    try:
        yield ref
    finally:
        await stop(ref)


async def test_a_waiter_gets_the_slot_its_lane_releases(dispatcher: ActorRef[Any]) -> None:
    await ask(dispatcher, Acquire("a"))
    waiting = asyncio.ensure_future(ask(dispatcher, Acquire("a")))
    await asyncio.sleep(0.05)
    assert not waiting.done()

    dispatcher.tell(Release("a"))

    await asyncio.wait_for(waiting, 1)


async def test_a_waiter_out_of_patience_is_refused_and_holds_no_slot(
    dispatcher: ActorRef[Any],
) -> None:
    # given the lane's one slot held
    await ask(dispatcher, Acquire("a"))
    loop = asyncio.get_running_loop()
    began = loop.time()

    # when another attempt waits longer than the patience
    with pytest.raises(Full):
        await asyncio.wait_for(ask(dispatcher, Acquire("a")), 2)

    # then it was refused after the patience, and the slot the holder gives back is free again
    assert 0.15 < loop.time() - began < 1.0
    dispatcher.tell(Release("a"))
    await asyncio.wait_for(ask(dispatcher, Acquire("a")), 0.1)


async def test_a_full_lane_refuses_at_once_and_says_so_before_anything_is_read(
    dispatcher: ActorRef[Any],
) -> None:
    await ask(dispatcher, Acquire("a"))
    waiters = [asyncio.ensure_future(ask(dispatcher, Acquire("a"))) for _ in range(2)]
    await asyncio.sleep(0.02)

    room = await ask(dispatcher, Room("a"))
    with pytest.raises(Full):
        await asyncio.wait_for(ask(dispatcher, Acquire("a")), 0.1)
    other = await asyncio.wait_for(ask(dispatcher, Acquire("b")), 0.1)

    assert room is False
    assert other is None  # another lane is untouched
    await asyncio.gather(*waiters, return_exceptions=True)
    # once the waiters ran out of patience the lane has room again
    assert await ask(dispatcher, Room("a")) is True
