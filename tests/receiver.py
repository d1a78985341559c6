"""A real webhook receiver on loopback: records every request it gets and answers as told.

async with Receiver() as hooks:
    hooks.answers = [500, 500]   # then `otherwise` (200) for ever after
    ...
    await hooks.wait_for(3)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

import orjson
from aiohttp import web

from tests.helpers import free_port

__all__ = ["Received", "Receiver", "Reply"]


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.monotonic()

    @property
    def event(self) -> dict[str, Any]:
        loaded: dict[str, Any] = orjson.loads(self.body)
        return loaded


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    # Seconds to wait before answering (a slow receiver).
    delay: float = 0.0


class Receiver:
    def __init__(self) -> None:
        self.received: list[Received] = []
        # Answers for the next requests, in order (a status or a Reply); then `otherwise`.
        self.answers: list[int | Reply] = []
        self.otherwise: Reply = Reply()
        # Per path, instead of the above (several endpoints on one receiver).
        self.by_path: dict[str, Callable[[], Reply]] = {}
        # Requests being answered now, and the most there ever were at once.
        self.in_flight = 0
        self.most_in_flight = 0
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._arrived = asyncio.Event()

    def url(self, path: str = "/hooks") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/{path:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        self.port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.received.append(Received(request.path, dict(request.headers), body, time.monotonic()))
        self._arrived.set()
        if request.path in self.by_path:
            reply = self.by_path[request.path]()
        elif self.answers:
            answer = self.answers.pop(0)
            reply = answer if isinstance(answer, Reply) else Reply(answer)
        else:
            reply = self.otherwise
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if reply.delay:
                await asyncio.sleep(reply.delay)
        finally:
            self.in_flight -= 1
        return web.Response(status=reply.status, headers=reply.headers, text="ok")

    def at(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path == path]

    def types(self, path: str | None = None) -> list[str]:
        return [r.event["type"] for r in self.received if path is None or r.path == path]

    async def wait_for(
        self, count: int, *, path: str | None = None, within: float = 10.0
    ) -> list[Received]:
        """Wait until `count` requests (to `path`, when given) arrived; return them."""
        deadline = time.monotonic() + within
        while True:
            got = self.received if path is None else self.at(path)
            if len(got) >= count:
                return got
            left = deadline - time.monotonic()
            if left <= 0:
                msg = f"{len(got)} of {count} webhook requests arrived within {within}s"
                raise AssertionError(msg)
            self._arrived.clear()
            try:
                async with asyncio.timeout(min(left, 0.2)):
                    await self._arrived.wait()
            except TimeoutError:
                pass
