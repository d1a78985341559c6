"""How messages and replies cross to an actor on the event loop: its future and its inbox
(mps.actors.runtime says why pykka's own cannot serve).

Every method runs on the event loop thread, except `AsyncioFuture.get()`, `AsyncioFuture.set()`
and `AsyncioInbox.put()`, which also work from other threads.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
from collections import deque
from collections.abc import Callable, Generator
from typing import Any, TypeVar

import pykka

from mps.actors.pykka_internals import Envelope

__all__ = ["AsyncioFuture", "AsyncioInbox", "StoppedFlag"]

T = TypeVar("T")
A = TypeVar("A")


def _on_thread_of(loop: asyncio.AbstractEventLoop) -> bool:
    # asyncio's C helper: None off any loop's thread, no exception to raise and catch. This
    # runs several times per ask.
    return asyncio.events._get_running_loop() is loop


def _call_on(loop: asyncio.AbstractEventLoop, callback: Callable[[A], None], arg: A) -> None:
    """`callback(arg)` on `loop`'s thread: at once when already there (the common case, and
    the cheaper), scheduled there otherwise."""
    if _on_thread_of(loop):
        callback(arg)
    else:
        loop.call_soon_threadsafe(callback, arg)


class AsyncioFuture(pykka.Future[T]):
    """A pykka future backed by an `asyncio.Future` on the loop that created it.

    Await it from the loop; `get()` from another thread waits without touching the loop.
    """

    def __init__(self) -> None:
        super().__init__()
        self._loop = asyncio.get_running_loop()
        self._future: asyncio.Future[T] = self._loop.create_future()

    def __repr__(self) -> str:
        return f"<AsyncioFuture done={self._future.done()}>"

    def get(self, *, timeout: float | None = None) -> T:
        try:
            return super().get(timeout=timeout)
        except NotImplementedError:
            pass
        if self._future.done():
            return self._future.result()
        if _on_thread_of(self._loop):
            msg = "AsyncioFuture.get() would block the event loop; await the future instead"
            raise RuntimeError(msg)
        waiter = asyncio.run_coroutine_threadsafe(self._wait(), self._loop)
        try:
            return waiter.result(timeout)
        except concurrent.futures.TimeoutError:
            # Withdraw the waiter, or every timed-out get() would leave a task on the loop until
            # the future completes, which may be never. The shield keeps the future itself.
            waiter.cancel()
            raise pykka.Timeout(f"{timeout} seconds") from None

    async def _wait(self) -> T:
        return await asyncio.shield(self._future)

    def set(self, value: Any = None) -> None:
        _call_on(self._loop, self._set, value)

    def _set(self, value: Any) -> None:
        # A caller that gave up (its HTTP client went away) cancelled the future; the work still
        # happened and is committed, there is simply nobody left to tell.
        if not self._future.done():
            self._future.set_result(value)

    def set_exception(self, exc_info: Any = None) -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        exc_type, exc_value, _tb = exc_info
        error = exc_value if exc_value is not None else exc_type()
        _call_on(self._loop, self._set_error, error)

    def _set_error(self, error: BaseException) -> None:
        if not self._future.done():
            self._future.set_exception(error)

    def __await__(self) -> Generator[Any, None, T]:
        if self._get_hook is not None:
            msg = "futures with a get hook cannot be awaited; await the underlying ask instead"
            raise TypeError(msg)
        return self._future.__await__()

    __iter__ = __await__


class AsyncioInbox:
    """An actor's mailbox, read by the actor's own task only; other threads may put into it.

    Not an `asyncio.Queue`: an idle actor's empty queue still holds three deques and an Event
    (about 3 KB), and most actors are idle. Here an empty inbox holds no container at all; the
    deque exists only while envelopes wait.
    """

    __slots__ = ("_items", "_loop", "_waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: deque[Envelope[Any]] | None = None
        self._waiter: asyncio.Future[None] | None = None

    def put(self, envelope: Envelope[Any], /) -> None:
        _call_on(self._loop, self._put, envelope)

    def _put(self, envelope: Envelope[Any]) -> None:
        if self._items is None:
            self._items = deque()
        self._items.append(envelope)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def get(self) -> Envelope[Any]:
        """The next envelope if one is waiting; raises `asyncio.QueueEmpty` otherwise."""
        if not self._items:
            raise asyncio.QueueEmpty
        envelope = self._items.popleft()
        if not self._items:
            self._items = None
        return envelope

    async def get_async(self) -> Envelope[Any]:
        while not self._items:
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self.get()

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        """How many envelopes wait (for metrics; the actor itself only asks `empty`)."""
        return len(self._items) if self._items else 0


class StoppedFlag:
    """What pykka reads of `actor_stopped` (`is_set`, `set`), without the Condition, Lock and
    waiter deque of a `threading.Event`: nothing here ever waits on it."""

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
