"""The webhook dispatcher's lanes: slots per endpoint, a bounded wait for one, and a refusal
that sends the attempt back to the broker (mps.actors.webhooks.dispatcher).

No test here waits on the clock to see that something did not happen: the dispatcher takes its
messages one at a time, in the order they were put in its mailbox, so once a message asked
after another is answered, the earlier one has been taken, and whatever its turn did (hand out
a slot, refuse) is done."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pykka import ActorRef

from mps.actors.runtime import ask, stop
from mps.actors.webhooks.dispatcher import Acquire, Full, Release, Room, WebhookDispatcher

PATIENCE = 0.2


@pytest.fixture
async def dispatcher() -> AsyncIterator[ActorRef[Any]]:
    ref = WebhookDispatcher.start(per_lane=1, waiting_per_lane=2, patience=PATIENCE)
    try:
        yield ref
    finally:
        await stop(ref)


def _asked(dispatcher: ActorRef[Any], message: Any) -> asyncio.Future[Any]:
    """`message` put in the dispatcher's mailbox now, ahead of anything asked after this call;
    its reply as a future. (`asyncio.ensure_future(ask(...))` would only send it once the new
    task first runs, after messages the test asks meanwhile.)"""
    return asyncio.ensure_future(dispatcher.ask(message, block=False))


async def test_a_waiter_gets_the_slot_its_lane_releases(dispatcher: ActorRef[Any]) -> None:
    # given the lane's one slot held, and a second attempt asking for it
    await ask(dispatcher, Acquire("a"))
    waiting = _asked(dispatcher, Acquire("a"))

    # then once a later message is answered, the dispatcher has taken that Acquire and made it
    # wait (a slot handed out in its turn would have answered it before this one)
    assert await ask(dispatcher, Room("a")) is True
    assert not waiting.done()

    # when the holder releases the slot, the waiter gets it (refused with Full otherwise, once
    # its patience runs out; the outer bound only guards against a hang)
    dispatcher.tell(Release("a"))

    assert await asyncio.wait_for(waiting, 5) is None


async def test_a_waiter_out_of_patience_is_refused_and_holds_no_slot(
    dispatcher: ActorRef[Any],
) -> None:
    # given the lane's one slot held
    await ask(dispatcher, Acquire("a"))
    loop = asyncio.get_running_loop()
    began = loop.time()

    # when another attempt waits for it (taken, and not refused at once)
    waiting = _asked(dispatcher, Acquire("a"))
    assert await ask(dispatcher, Room("a")) is True
    assert not waiting.done()

    # then it is refused once its patience ran out, not before (its timer starts when the
    # dispatcher takes the Acquire, after `began`, and never fires early)
    with pytest.raises(Full):
        await asyncio.wait_for(waiting, 5)
    assert loop.time() - began >= PATIENCE * 0.95
    # and the slot the holder gives back is free: the next Acquire holds it in its own turn,
    # answered before the message asked after it (had the refused waiter kept the slot, this
    # one would wait instead)
    dispatcher.tell(Release("a"))
    acquired = _asked(dispatcher, Acquire("a"))
    await ask(dispatcher, Room("b"))
    assert acquired.done() and acquired.result() is None


async def test_a_full_lane_refuses_at_once_and_says_so_before_anything_is_read(
    dispatcher: ActorRef[Any],
) -> None:
    # given the lane's one slot held and as many attempts waiting as it allows (both taken by
    # the time the Room asked after them is answered)
    await ask(dispatcher, Acquire("a"))
    waiters = [_asked(dispatcher, Acquire("a")) for _ in range(2)]
    room = await ask(dispatcher, Room("a"))

    # when one more attempt asks, then another lane's
    refused = _asked(dispatcher, Acquire("a"))
    other = await ask(dispatcher, Acquire("b"))

    # then the lane said it had no room, and the extra attempt was refused in its own turn:
    # answered before the Acquire of lane b asked after it, while the earlier waiters, whose
    # patience would have run out first, still wait
    assert room is False
    assert refused.done() and not any(w.done() for w in waiters)
    with pytest.raises(Full):
        refused.result()
    assert other is None  # another lane is untouched
    await asyncio.gather(*waiters, return_exceptions=True)
    # once the waiters ran out of patience the lane has room again
    assert await ask(dispatcher, Room("a")) is True
