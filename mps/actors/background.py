"""A loop the composition root starts and closes: the schedulers (mps.actors.schedulers), the
outbox relay (mps.actors.webhooks.relay) and the API-key use buffer (mps.actors.key_usage).

Concurrency context: `start` and `close` run on the event loop, `_run` in the task `start`
made; `close` cancels it and waits for it to end, so nothing of the loop outlives the resources
it uses.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib

__all__ = ["BackgroundLoop", "woken_or_after"]


async def woken_or_after(wakeup: asyncio.Event, seconds: float) -> None:
    """Return once `wakeup` is set or `seconds` have passed, whichever comes first; `wakeup`
    is cleared, so a wake-up that comes during the work that follows starts the next round."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await wakeup.wait()
    wakeup.clear()


class BackgroundLoop(abc.ABC):
    _task: asyncio.Task[None] | None = None

    @abc.abstractmethod
    async def _run(self) -> None:
        """The loop itself, until it is cancelled."""

    @property
    def running(self) -> bool:
        """Whether the loop was started and has not stopped."""
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=type(self).__name__)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
