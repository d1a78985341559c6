"""The webhook-dispatcher actor: who may POST now, lane by lane.

Every endpoint is a lane (a payment's own URL: its origin). A lane has `per_lane` slots, and an
attempt holds one only while its POST is in flight (its reads before and its record after do not
count), so a slow or hanging receiver holds only its own slots, never another lane's. Attempts
beyond that wait for a slot in their lane, for `patience` seconds at most; one that waited that
long, or that finds `waiting_per_lane` waiting already, is refused (`Full`) and goes back to the
broker for a moment instead. So a fast lane takes a flood in memory (its waiters get their
slots within the patience, and nothing travels round the broker again), while a slow or
flooded lane cannot hold the consumers' prefetch windows, and so every other lane, for longer
than the patience.

The actor's turn only counts slots: `Acquire` is answered at once when a slot is free, else when
a `Release` of its lane hands one on. Nothing else happens in a turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from pykka import ActorRef

from mps.actors.runtime import ActorDeadError, AsyncioActor, Detached, ask

__all__ = ["Acquire", "Drain", "Full", "Release", "Room", "WebhookDispatcher", "slot"]

logger = logging.getLogger(__name__)


class Full(Exception):
    """The lane has as many attempts waiting as it may: try this one again a little later."""


@dataclass(frozen=True, slots=True)
class Acquire:
    """Reply: None once the caller holds a slot of `lane` (raises Full when too many wait)."""

    lane: str


@dataclass(frozen=True, slots=True)
class Room:
    """Reply: whether an `Acquire` of `lane` now would hold or wait for a slot rather than be
    refused. Asked before an attempt reads what it needs, so that under a flood the attempts a
    full lane would refuse cost no reads (the answer may change before the Acquire; then that
    Acquire is refused as usual)."""

    lane: str


@dataclass(frozen=True, slots=True)
class Release:
    """The caller is done with its slot of `lane`."""

    lane: str


@dataclass(frozen=True, slots=True)
class Drain:
    """The process is stopping: attempts still waiting for a slot give up (their messages go
    back to the broker, or are found in storage at the next start)."""


@dataclass
class _Lane:
    running: int = 0
    waiting: deque[asyncio.Future[None]] = field(default_factory=deque)


class WebhookDispatcher(AsyncioActor):
    expected_errors = (Full,)

    def __init__(
        self, *, per_lane: int, waiting_per_lane: int = 4096, patience: float = 2.0
    ) -> None:
        super().__init__()
        self.per_lane = per_lane
        self.waiting_per_lane = waiting_per_lane
        self.patience = patience
        self.lanes: dict[str, _Lane] = {}

    def can_passivate(self) -> bool:
        return False  # one per process, for its whole life

    async def receive(self, message: Any) -> Any:
        match message:
            case Acquire(lane=name):
                lane = self.lanes.setdefault(name, _Lane())
                if lane.running < self.per_lane:
                    lane.running += 1
                    return None
                _forget_ended(lane)
                if len(lane.waiting) >= self.waiting_per_lane:
                    raise Full(name)
                loop = asyncio.get_running_loop()
                turn: asyncio.Future[None] = loop.create_future()
                lane.waiting.append(turn)
                # Waiters end in the order they came, so the ended ones gather at the left,
                # where the next Acquire or Release drops them.
                loop.call_later(self.patience, _out_of_patience, turn, name)
                return Detached(_wait(turn))
            case Room(lane=name):
                known = self.lanes.get(name)
                if known is None:
                    return True
                _forget_ended(known)
                return len(known.waiting) < self.waiting_per_lane
            case Release(lane=name):
                self._release(name)
                return None
            case Drain():
                for lane in self.lanes.values():
                    for turn in lane.waiting:
                        turn.cancel()
                    lane.waiting.clear()
                return None
        msg = f"WebhookDispatcher does not understand {type(message).__name__}"
        raise TypeError(msg)

    def _release(self, name: str) -> None:
        lane = self.lanes.get(name)
        if lane is None:
            return
        while lane.waiting:
            turn = lane.waiting.popleft()
            if not turn.done():
                turn.set_result(None)  # the slot passes on, still counted
                return
        lane.running -= 1
        if lane.running <= 0:
            del self.lanes[name]


async def _wait(turn: asyncio.Future[None]) -> None:
    await turn


def _out_of_patience(turn: asyncio.Future[None], lane: str) -> None:
    if not turn.done():
        turn.set_exception(Full(lane))


def _forget_ended(lane: _Lane) -> None:
    while lane.waiting and lane.waiting[0].done():
        lane.waiting.popleft()


@contextlib.asynccontextmanager
async def slot(dispatcher: ActorRef[WebhookDispatcher], lane: str) -> AsyncIterator[None]:
    """Hold a slot of `lane` for the block. A waiter cancelled before its slot came never held
    one; a holder gives its slot back however the block ends."""
    await ask(dispatcher, Acquire(lane))
    try:
        yield
    finally:
        with contextlib.suppress(ActorDeadError):
            dispatcher.tell(Release(lane))
