"""A background loop owned by the composition root: a pass now, then one every `interval`.

Subclasses implement `tick`. A failing pass is logged and retried at the next interval; a pass
that returns True is followed by another at once (a backlog to drain).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging

__all__ = ["Periodic"]

logger = logging.getLogger(__name__)


class Periodic(abc.ABC):
    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    @abc.abstractmethod
    async def tick(self) -> bool:
        """One pass; True when another should follow at once."""

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

    async def _run(self) -> None:
        while True:
            again = False
            try:
                again = await self.tick()
            except Exception:
                logger.exception("%s pass failed; retrying", type(self).__name__)
            if not again:
                await asyncio.sleep(self.interval)
