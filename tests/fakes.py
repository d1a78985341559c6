"""Databases that wrap a real one to add what a test needs: latency, failures, a record of the
round trips. Passed to the app through `Overrides.wrap_database` (`Serving`), never patched in."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.adapters.processor import Processor
from mps.bootstrap import Overrides
from mps.config import Settings
from mps.domain.clock import Clock
from mps.http.keys import SERVICES
from mps.persistence.database import Database, Fences, UnitOutcome
from mps.persistence.statements import Row, Statement, WriteUnit
from tests.helpers import Member, sign_up


class WrappedDatabase(Database):
    """Delegates everything to `real`; subclasses change what they need."""

    def __init__(self, real: Database) -> None:
        self.real = real
        self.dialect = real.dialect  # type: ignore[misc]

    async def open(self) -> None:
        await self.real.open()

    async def close(self) -> None:
        await self.real.close()

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        return await self.real.write(units, fences)

    async def _fetch(self, sql: str, *params: Any) -> list[Row]:
        return await self.real.fetch(sql, *params)


class SlowDatabase(WrappedDatabase):
    """Every round trip (a read, or one group commit) takes `delay` seconds longer, as on a
    distant database server. Records how many reads were made and how many were in flight at
    once, and each write."""

    def __init__(self, real: Database, delay: float) -> None:
        super().__init__(real)
        self.delay = delay
        self.reads: list[str] = []  # the SQL of each read
        self.reads_in_flight = 0
        self.most_reads_in_flight = 0
        self.writes: list[int] = []  # units per group commit

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        self.writes.append(len(units))
        await asyncio.sleep(self.delay)
        return await self.real.write(units, fences)

    async def _fetch(self, sql: str, *params: Any) -> list[Row]:
        self.reads.append(sql)
        self.reads_in_flight += 1
        self.most_reads_in_flight = max(self.most_reads_in_flight, self.reads_in_flight)
        try:
            await asyncio.sleep(self.delay)
            return await self.real.fetch(sql, *params)
        finally:
            self.reads_in_flight -= 1


class GatedDatabase(WrappedDatabase):
    """Reads matching `fails` raise `error` while it is set; group commits that `holds` picks
    (every one, unless the test narrows it) wait while `hold` is cleared (by the test), so a
    test can keep a commit in flight; group commits fail with `write_error`, writing nothing,
    while it is set (an outage)."""

    def __init__(self, real: Database) -> None:
        super().__init__(real)
        self.fails: Callable[[str], bool] = lambda _sql: False
        self.error: BaseException | None = None
        self.write_error: BaseException | None = None
        self.holds: Callable[[Sequence[WriteUnit]], bool] = lambda _units: True
        self.hold = asyncio.Event()
        self.hold.set()
        self.waiting_writes = 0

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        if not self.hold.is_set() and self.holds(units):
            self.waiting_writes += 1
            await self.hold.wait()
        if self.write_error is not None:
            raise self.write_error
        return await self.real.write(units, fences)

    async def _fetch(self, sql: str, *params: Any) -> list[Row]:
        if self.error is not None and self.fails(sql):
            raise self.error
        return await self.real.fetch(sql, *params)


class RefusingDatabase(GatedDatabase):
    """A gated database that makes the first unit `refuse` picks fail on a constraint after its
    own statements ran (refused whole, as a same-key retry's is, or as a crash between two of
    its statements would leave it), and lets the first batch holding a unit `lose_ack` picks
    land, then fails it as if its acknowledgement were lost. Records each unit written, in
    order (`written`)."""

    def __init__(self, real: Database) -> None:
        super().__init__(real)
        self.refuse: Callable[[WriteUnit], bool] = lambda _unit: False
        self.lose_ack: Callable[[WriteUnit], bool] = lambda _unit: False
        self.written: list[WriteUnit] = []

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        broken = Statement("INSERT INTO companies (id) VALUES (NULL)")
        for index, unit in enumerate(units):
            if self.refuse(unit):
                self.refuse = lambda _unit: False
                units = [*units[:index], (*unit, broken), *units[index + 1 :]]
                break
        outcomes = await super().write(units, fences)
        self.written += [
            unit
            for unit, outcome in zip(units, outcomes, strict=True)
            if not isinstance(outcome, BaseException)
        ]
        if any(self.lose_ack(unit) for unit in units):
            self.lose_ack = lambda _unit: False
            raise ConnectionResetError("the connection dropped before the commit was confirmed")
        return outcomes


class LostAcksDatabase(WrappedDatabase):
    """While `lose_acks` is set, a group commit lands and then fails as if the connection had
    dropped before its acknowledgement: its writers cannot tell that it landed. Records the SQL
    of every read."""

    def __init__(self, real: Database) -> None:
        super().__init__(real)
        self.lose_acks = False
        self.reads: list[str] = []

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        outcomes = await self.real.write(units, fences)
        if self.lose_acks:
            raise ConnectionResetError("the connection dropped before the commit was confirmed")
        return outcomes

    async def _fetch(self, sql: str, *params: Any) -> list[Row]:
        self.reads.append(sql)
        return await self.real.fetch(sql, *params)


class RecordingDatabase(WrappedDatabase):
    """Records every write unit once its group commit has returned (`units`, in order) and
    every such group commit (`writes`, units per commit)."""

    def __init__(self, real: Database) -> None:
        super().__init__(real)
        self.units: list[WriteUnit] = []
        self.writes: list[int] = []

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        outcomes = await self.real.write(units, fences)
        self.units.extend(units)
        self.writes.append(len(units))
        return outcomes

    def statements(self, prefix: str) -> list[Statement]:
        """Every statement written so far whose SQL starts with `prefix`."""
        return [st for unit in self.units for st in unit if st.sql.startswith(prefix)]


async def wait_until(condition: Callable[[], bool], within: float = 5.0) -> None:
    """Poll `condition` (cheap, in memory) until true; fail after `within` seconds."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            msg = "condition not reached in time"
            raise AssertionError(msg)
        await asyncio.sleep(0.005)


W = TypeVar("W", bound=WrappedDatabase)


@dataclass
class Serving:
    """Serves the app on a wrapped database, for the tests that count or fault its round trips:
    a module's fixture makes one from the fixtures it needs (`aiohttp_client`, `make_app`,
    `clock`), and each test asks for the wrapper it wants."""

    aiohttp_client: Callable[..., Any]
    make_app: Callable[..., web.Application]
    clock: Clock

    async def on(self, wrapper: Callable[[Database], W]) -> tuple[TestClient[Any, Any], W, Member]:
        """A client of the app whose database is wrapped by `wrapper`, that wrapped database,
        and the owner of a company signed up on it.

        The background passes read and write storage on their own schedule: every one of them
        is slowed here (`slowed_passes`), so the round trips a test counts are the requests'
        own."""
        wrapped: list[W] = []

        def wrap(real: Database) -> Database:
            wrapped.append(wrapper(real))
            return wrapped[0]

        app = self.make_app(Overrides(clock=self.clock, wrap_database=wrap), **slowed_passes())
        client = await self.aiohttp_client(app)
        return client, wrapped[0], await sign_up(client)

    async def paying_through(
        self, processor: Processor, wrapper: Callable[[Database], Database]
    ) -> TestClient[Any, Any]:
        """A client of the app that asks `processor` for test-mode cards, on a database wrapped
        by `wrapper` (`app_database` finds it). Its background passes keep their own schedule:
        the tests of checkouts wait for them."""
        overrides = Overrides(clock=self.clock, test_processor=processor, wrap_database=wrapper)
        client: TestClient[Any, Any] = await self.aiohttp_client(self.make_app(overrides))
        return client


def app_database(client: TestClient[Any, Any], kind: type[W]) -> W:
    """The database the app behind `client` runs on, which the test had wrapped as `kind`."""
    assert client.app is not None
    database = client.app[SERVICES].database
    assert isinstance(database, kind), database
    return database


def slowed_passes() -> dict[str, float]:
    """Settings changes that run every background pass (expiry, money's due work, approvals,
    overdue invoices, KYC reviews, the reconciliation, housekeeping) once an hour after its
    first at start, so that only the test reads and writes storage meanwhile. Taken from the
    settings so that a pass added later is slowed too."""
    return {f.name: 3600.0 for f in fields(Settings) if f.name.endswith("_interval")}
