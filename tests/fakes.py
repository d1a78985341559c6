"""Databases that wrap a real one to add what a test needs: latency, failures, a record of the
round trips. Passed to the app through `Overrides.wrap_database`, never patched in."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from mps.persistence.database import Database, Fences, UnitOutcome
from mps.persistence.statements import Row, Statement, WriteUnit


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
    """Reads matching `fails` raise `error` while it is set; writes wait while `hold` is set
    (cleared by the test), so a test can keep a commit in flight."""

    def __init__(self, real: Database) -> None:
        super().__init__(real)
        self.fails: Callable[[str], bool] = lambda _sql: False
        self.error: BaseException | None = None
        self.hold = asyncio.Event()
        self.hold.set()
        self.waiting_writes = 0

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        if not self.hold.is_set():
            self.waiting_writes += 1
            await self.hold.wait()
        return await self.real.write(units, fences)

    async def _fetch(self, sql: str, *params: Any) -> list[Row]:
        if self.error is not None and self.fails(sql):
            raise self.error
        return await self.real.fetch(sql, *params)


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
