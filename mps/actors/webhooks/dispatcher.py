"""The webhook-dispatcher actor: which attempt runs now, lane by lane.

Every endpoint is a lane (a payment's own URL: its origin). A lane runs at most `per_lane`
attempts at once, so a slow or hanging receiver holds only its own slots, never the others'.
Attempts beyond that wait for a slot in their lane; when `waiting_per_lane` already wait, the
attempt goes back to the broker for `defer_for` seconds instead, so a flooded lane cannot fill
the consumer's prefetch window and starve every other lane.

The actor's turn only counts slots; the attempt itself (reads, the POST, the commit) runs
detached, and its end is told back to the actor (`Finished`), which hands the slot to the next
waiting attempt of the lane. The reply to `Run` comes when the attempt is done, and only then
does the broker consumer acknowledge the message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from mps.actors.runtime import ActorDeadError, AsyncioActor, Detached
from mps.actors.webhooks.deliveries import Deliveries
from mps.actors.webhooks.topology import AttemptJob

__all__ = ["Drain", "Finished", "Run", "WebhookDispatcher"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Run:
    """Make this attempt when its lane has a slot. Reply: None once it is done (or deferred)."""

    job: AttemptJob


@dataclass(frozen=True, slots=True)
class Finished:
    """An attempt of `lane` ended: its slot is free."""

    lane: str


@dataclass(frozen=True, slots=True)
class Drain:
    """The process is stopping: attempts still waiting for a slot give up (their messages go
    back to the broker, or are found in storage at the next start), so that the stop, which
    waits for detached work, does not wait for slots that no `Finished` will free."""


@dataclass
class _Lane:
    running: int = 0
    waiting: deque[asyncio.Future[None]] = field(default_factory=deque)


class WebhookDispatcher(AsyncioActor):
    def __init__(
        self,
        deliveries: Deliveries,
        *,
        per_lane: int = 4,
        waiting_per_lane: int = 32,
        defer_for: float = 1.0,
    ) -> None:
        super().__init__()
        self.deliveries = deliveries
        self.per_lane = per_lane
        self.waiting_per_lane = waiting_per_lane
        self.defer_for = defer_for
        self.lanes: dict[str, _Lane] = {}
        self.attempts = 0
        self.deferred = 0

    def can_passivate(self) -> bool:
        return False  # one per process, for its whole life

    @property
    def running(self) -> int:
        return sum(lane.running for lane in self.lanes.values())

    async def receive(self, message: Any) -> Any:
        match message:
            case Run(job=job):
                lane = self.lanes.setdefault(job.lane, _Lane())
                if lane.running < self.per_lane:
                    lane.running += 1
                    return Detached(self._attempt(job, None))
                if len(lane.waiting) >= self.waiting_per_lane:
                    self.deferred += 1
                    return Detached(self.deliveries.defer(job, self.defer_for))
                turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                lane.waiting.append(turn)
                return Detached(self._attempt(job, turn))
            case Drain():
                for lane in self.lanes.values():
                    for turn in lane.waiting:
                        turn.cancel()
                    lane.waiting.clear()
                return None
            case Finished(lane=name):
                lane = self.lanes[name]
                while lane.waiting:
                    turn = lane.waiting.popleft()
                    if not turn.done():
                        turn.set_result(None)  # the slot passes on, still counted
                        return None
                lane.running -= 1
                if lane.running == 0:
                    del self.lanes[name]
                return None
        msg = f"WebhookDispatcher does not understand {type(message).__name__}"
        raise TypeError(msg)

    async def _attempt(self, job: AttemptJob, turn: asyncio.Future[None] | None) -> None:
        try:
            if turn is not None:
                await turn
            self.attempts += 1
            await self.deliveries.attempt(job)
        finally:
            if turn is None or (turn.done() and not turn.cancelled()):
                # Stopped meanwhile: nobody counts slots any more.
                with contextlib.suppress(ActorDeadError):
                    self.actor_ref.tell(Finished(job.lane))
            else:
                # Cancelled while waiting: it never held the slot.
                turn.cancel()
