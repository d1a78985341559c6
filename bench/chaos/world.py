"""The world the workload builds (companies, their payments), what each Idempotency-Key was
answered, and the webhook receiver that collects every delivery. The checks judge these."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from aiohttp import web

from bench.chaos.client import Answer
from bench.chaos.report import Report
from tests.helpers import free_port


@dataclass
class KeyRecord:
    kind: str  # create, pay, refund, payout
    company: str
    key: str
    answers: list[Answer] = field(default_factory=list)

    @property
    def final(self) -> Answer | None:
        return self.answers[-1] if self.answers else None

    def successes(self) -> list[Answer]:
        return [a for a in self.answers if 200 <= a.status < 300]

    @property
    def resolved(self) -> bool:
        """Answered with something other than no answer or a 5xx in the end."""
        final = self.final
        return final is not None and 0 < final.status < 500


@dataclass
class Paid:
    id: str
    amount: int
    refunded: int = 0  # acknowledged refunds, as this client knows them


@dataclass
class Company:
    index: int
    id: str
    token: str
    secret: str
    bank_account: str
    baseline: set[str]  # events that existed before the webhook endpoint
    pending: list[tuple[str, str, int]] = field(default_factory=list)  # id, reference, amount
    paid: list[Paid] = field(default_factory=list)
    created: list[str] = field(default_factory=list)


@dataclass
class Delivery:
    company: int
    body: bytes
    signature: str
    at: float


class World:
    def __init__(self, report: Report) -> None:
        self.report = report
        self.companies: list[Company] = []
        self.keys: dict[tuple[str, str], KeyRecord] = {}
        self.received: list[Delivery] = []

    def record(self, kind: str, company: Company, key: str) -> KeyRecord:
        """The record of `company`'s `key`, made on first use."""
        found = self.keys.get((company.id, key))
        if found is None:
            found = self.keys[(company.id, key)] = KeyRecord(kind, company.id, key)
        return found


@contextlib.asynccontextmanager
async def receiver(world: World) -> AsyncIterator[str]:
    """A webhook receiver on loopback for the block's length, yielding its base URL; company i's
    endpoint is `<base>/i`. Every delivery is kept as it came (its signature checked later)."""

    async def receive(request: web.Request) -> web.Response:
        body = await request.read()
        signature = request.headers.get("X-Service-Signature", "")
        index = int(request.match_info["company"])
        world.received.append(Delivery(index, body, signature, time.monotonic()))
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/hooks/{company}", receive)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}/hooks"
    finally:
        await runner.cleanup()
