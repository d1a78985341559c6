"""The service in this process (development mode, the in-memory broker) on a database that
answers every round trip, a read or a group commit, late: what a distant database server costs
the requests that wait for a commit (bench/audited.py, bench/payment_turns.py).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from mps.bootstrap import Overrides, build_app
from mps.config import Settings
from mps.persistence.database import Database, Fences, UnitOutcome
from mps.persistence.statements import Row, WriteUnit
from tests.fakes import WrappedDatabase
from tests.helpers import TEST_CARD, Member


class DistantDatabase(WrappedDatabase):
    """Every round trip `delay` seconds later; counts the group commits."""

    def __init__(self, real: Database, delay: float) -> None:
        super().__init__(real)
        self.delay = delay
        self.commits = 0

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        self.commits += 1
        await asyncio.sleep(self.delay)
        return await self.real.write(units, fences)

    async def _fetch(self, sql: str, *params: Any) -> list[Row]:
        await asyncio.sleep(self.delay)
        return await self.real.fetch(sql, *params)


@asynccontextmanager
async def distant_service(
    latency: float, database_url: str | None
) -> AsyncIterator[tuple[TestClient[Any, Any], DistantDatabase]]:
    """A client of the service on `database_url` (a temporary SQLite file when None), every
    round trip `latency` seconds late; and that database, to count its commits."""
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(
            mode="development",
            data_dir=Path(data_dir),
            database_url=database_url or f"sqlite:///{data_dir}/bench.db",
            broker_url="memory://",
            public_url="http://127.0.0.1:8080",
            session_secret=b"bench-session-secret-0123456789abcdef",
            encryption_key=b"bench-encryption-key-0123456789abcdef",
            rate_limit_scale=0,
        )
        distant: list[DistantDatabase] = []

        def wrap(real: Database) -> Database:
            distant.append(DistantDatabase(real, latency))
            return distant[0]

        app = build_app(settings, Overrides(wrap_database=wrap))
        async with TestClient(TestServer(app)) as client:
            yield client, distant[0]


async def paid_payment(client: TestClient[Any, Any], member: Member, amount: int) -> str:
    """The id of a new payment of `amount` minor units, paid by card."""
    payment = await client.post(
        "/api/v1/merchant/payments",
        json={"amountMinor": str(amount), "currency": "USD"},
        headers=member.headers,
    )
    body = await payment.json()
    paid = await client.post(f"/api/v1/checkout/{body['reference']}/pay", json={"card": TEST_CARD})
    assert paid.status == 200, await paid.text()
    payment_id: str = body["id"]
    return payment_id


def latency_arguments(
    description: str, *, concurrency: str, rounds: str
) -> argparse.ArgumentParser:
    """The options every such bench takes; `concurrency` and `rounds` say what they count."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per round trip")
    parser.add_argument("--concurrency", type=int, default=20, help=concurrency)
    parser.add_argument("--rounds", type=int, default=5, help=rounds)
    parser.add_argument("--database-url", default=None, help="default: a temporary SQLite file")
    return parser
