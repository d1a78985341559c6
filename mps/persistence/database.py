"""The storage interface every backend implements, and the factory that picks one by URL."""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from mps.errors import StaleWrite, Unavailable
from mps.persistence.migrations import Migration
from mps.persistence.outbox import NUMBERING, numbers_late
from mps.persistence.statements import Row, Statement, WriteUnit

__all__ = [
    "Database",
    "Fenced",
    "Fences",
    "IntegrityConflict",
    "UnitOutcome",
    "open_database",
    "opened",
]

_Connection = TypeVar("_Connection")


class IntegrityConflict(Exception):
    """A write broke a uniqueness or key constraint: someone else created that row first."""


class Fenced(Exception):
    """Another node took these shards since this one did: a batch writing for them must not
    commit (mps.persistence.shard_store). Nothing of the batch was written."""

    def __init__(self, lost: frozenset[int]) -> None:
        super().__init__(f"shards taken over by another node: {sorted(lost)}")
        self.lost = lost


def opened(connection: _Connection | None) -> _Connection:
    """A backend's connection, which exists only between `open` and `close`: a statement sent
    outside them is our own bug (a component used after shutdown), so it raises rather than
    waits for a connection that will not come."""
    if connection is None:
        msg = "database is not open"
        raise RuntimeError(msg)
    return connection


# The epoch each shard written for was taken under, by shard.
Fences = Mapping[int, int]


# Per write unit: the rows each of its statements returned, or the error that rolled it back.
UnitOutcome = list[list[Row]] | BaseException


# A read that takes longer than this is answered 503 rather than held: a request waiting on a
# database that no longer answers would otherwise hold its client, its memory and its pool slot.
READ_DEADLINE = 10.0


class Database(abc.ABC):
    dialect: ClassVar[str]
    # Errors of the backend's driver that mean "the database cannot answer now" (connection lost,
    # server shutting down, file locked), as opposed to a wrong query, which is our bug.
    unavailable_errors: ClassVar[tuple[type[BaseException], ...]] = (OSError,)
    read_deadline: float = READ_DEADLINE
    # Whether `open` applies the pending migrations (`run.py migrate --check` only looks), and
    # which: every one in `sql/` unless a caller names fewer (a test of an upgrade).
    migrate_on_open: bool = True
    migrations: Sequence[Migration] | None = None

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect and, unless `migrate_on_open` is off, apply pending migrations."""

    async def applied_migrations(self) -> set[int]:
        """The versions of the migrations applied to the open database; empty before the
        first."""
        raise NotImplementedError

    @abc.abstractmethod
    async def close(self) -> None: ...

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        """Apply every unit in one transaction, as if each were inside its own savepoint.

        `fences` names the epoch of each shard the units write for. The transaction first reads
        those shards' epochs under a shared lock, which a new owner's bump waits for, and raises
        `Fenced` if any moved on: a former owner's batch then commits nothing, however late it
        runs, and a batch that got its locks first commits before the new owner takes over.

        A unit that fails (StaleWrite, IntegrityConflict) is rolled back alone and reported in its
        slot; the others commit. When this returns, every unit reported as rows is durable. An
        exception from this method itself (connection lost) means nothing was committed.

        Savepoints cost round trips on every unit, and units almost never fail, so the batch is
        first tried as one plain transaction; only when a unit fails is it rolled back and run
        again with a savepoint per unit.

        Events are numbered in the same transaction (mps.persistence.outbox): an event's insert
        is given its number before it runs (`number_events`), and a batch holding a conditional
        event insert ends with the statements that number that one (`NUMBERING`).
        """
        finish = NUMBERING if numbers_late(units) else ()
        try:
            return list(await self._write_together(units, fences or {}, finish))
        except (StaleWrite, IntegrityConflict) as exc:
            if len(units) == 1:
                return [exc]
        return await self._write_isolated(units, fences or {}, finish)

    # The two ways of running a batch that `write` chooses between. Backends implement both;
    # they are not abstract so that a wrapper which overrides `write` itself need not.

    async def _write_together(
        self, units: Sequence[WriteUnit], fences: Fences, finish: Sequence[Statement]
    ) -> list[list[list[Row]]]:
        """All units in one transaction without savepoints, then `finish`; any failing unit
        aborts all."""
        raise NotImplementedError

    async def _write_isolated(
        self, units: Sequence[WriteUnit], fences: Fences, finish: Sequence[Statement]
    ) -> list[UnitOutcome]:
        """All units in one transaction, each in its own savepoint, then `finish`."""
        raise NotImplementedError

    @staticmethod
    def _check_fences(fences: Fences, current: Mapping[int, int]) -> None:
        """Raise `Fenced` for every shard whose current epoch is not the one written under."""
        lost = frozenset(s for s, epoch in fences.items() if current.get(s) != epoch)
        if lost:
            raise Fenced(lost)

    async def fetch(self, sql: str, *params: Any) -> list[Row]:
        """The rows of one read. Raises `Unavailable` when the database cannot answer in time,
        so a read failure is an answer (503) like a failed write, never a crashed actor."""
        try:
            async with asyncio.timeout(self.read_deadline):
                return await self._fetch(sql, *params)
        except TimeoutError as exc:
            msg = "the database did not answer in time"
            raise Unavailable(msg) from exc
        except self.unavailable_errors as exc:
            msg = "the database is unavailable"
            raise Unavailable(msg) from exc

    @abc.abstractmethod
    async def _fetch(self, sql: str, *params: Any) -> list[Row]: ...

    async def fetchrow(self, sql: str, *params: Any) -> Row | None:
        rows = await self.fetch(sql, *params)
        return rows[0] if rows else None

    async def fetchval(self, sql: str, *params: Any) -> Any:
        row = await self.fetchrow(sql, *params)
        return None if row is None else next(iter(row.values()))

    def scans(self) -> Database:
        """Where long background scans read (the reconciliation): these connections, unless a
        backend keeps them apart from the requests' reads."""
        return self

    async def ping(self) -> None:
        """Round trip to the server; raises when it is unreachable."""
        await self.fetchval("SELECT 1")


def open_database(url: str) -> Database:
    """A backend for `sqlite:///path` or `postgresql://…`, not yet connected."""
    if url.startswith("sqlite://"):
        from mps.persistence.sqlite import SqliteDatabase

        return SqliteDatabase(url.removeprefix("sqlite://").removeprefix("/") or ":memory:")
    if url.startswith(("postgresql://", "postgres://")):
        from mps.persistence.postgres import PostgresDatabase

        return PostgresDatabase(url)
    msg = f"unsupported database URL scheme: {url.split(':', 1)[0]}"
    raise ValueError(msg)
