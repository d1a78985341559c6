"""One deadline for everything a request waits on: its asks, their commits, its reads.

Past the deadline the client is answered 503 rather than held. What it asked for may still
happen; a retry with the same Idempotency-Key waits for it or replays it.

Not an `asyncio.timeout` per request: that arms and disarms a timer on the event loop each time,
which profiled at a sixth of a trivial request's cost. Here a request only enters and leaves a
dict, and one watchdog task looks once a second for requests past their deadline and cancels
them; the pipeline turns that cancellation into the 503. A deadline is thus honoured to within
a second, which is what a deadline of tens of seconds needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from mps.errors import Unavailable

__all__ = ["REQUEST_DEADLINE", "Deadlines"]

logger = logging.getLogger(__name__)

REQUEST_DEADLINE = 30.0
T = TypeVar("T")


class Deadlines:
    def __init__(
        self,
        deadline: float = REQUEST_DEADLINE,
        *,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.deadline = deadline
        self.interval = interval
        self._clock = clock
        # task -> when it started; dicts keep insertion order, so the oldest come first.
        self._running: dict[asyncio.Task[object], float] = {}
        self._expired: set[asyncio.Task[object]] = set()
        self._watchdog: asyncio.Task[None] | None = None

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """Await `work()` in the current task; 503 once it has run past the deadline."""
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - always called from a request's task
            return await work()
        self._running[task] = self._clock()
        try:
            return await work()
        except asyncio.CancelledError:
            if task not in self._expired:
                raise
            task.uncancel()
            msg = "The request took too long; it may still complete: retry with its key"
            raise Unavailable(msg) from None
        finally:
            self._running.pop(task, None)
            if self._expired:
                self._expired.discard(task)

    def expire_overdue(self) -> int:
        """Cancel every tracked request past its deadline; returns how many."""
        cutoff = self._clock() - self.deadline
        overdue = []
        for task, started in self._running.items():
            if started > cutoff:
                break
            overdue.append(task)
        for task in overdue:
            del self._running[task]
            self._expired.add(task)
            task.cancel()
        if overdue:
            logger.warning("%d request(s) ran past the %ss deadline", len(overdue), self.deadline)
        return len(overdue)

    def start(self) -> None:
        self._watchdog = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.expire_overdue()

    async def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
