"""SQLite backend (the embedded default), through aiosqlite.

One writer connection, owned by the persistence actor's calls to `write`, one reader connection
for requests, and one for background scans (`scans()`, opened on first use), so a reconciliation
pass over a million rows never holds up a request's read: WAL mode lets reads proceed while a
write transaction is open, and readers on separate connections proceed side by side.
`synchronous=FULL` makes each commit durable before `write` returns, which is what lets us
acknowledge it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import sqlite3
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import aiosqlite

from mps.errors import StaleWrite
from mps.persistence.database import Database, Fences, IntegrityConflict, UnitOutcome, opened
from mps.persistence.migrations import load_migrations, pending
from mps.persistence.outbox import counter_bump, event_counts, numbered
from mps.persistence.statements import Row, Statement, Step, WriteUnit, plan_batch

__all__ = ["SqliteDatabase"]

_PLACEHOLDER = re.compile(r"\$(\d+)")
# About five seconds of 10 ms waits, like the busy timeout.
_WAL_ATTEMPTS = 500


@functools.lru_cache(maxsize=1024)
def _sqlite_sql(sql: str) -> str:
    # The same few hundred SQL texts recur; rewriting each once saves a regex pass per statement.
    return _PLACEHOLDER.sub(r"?\1", sql)


async def _enable_wal(conn: aiosqlite.Connection) -> None:
    """Switch the file to WAL, waiting out another connection doing the same.

    SQLite does not call the busy handler for this switch when another connection holds a lock
    on a file still in rollback mode (waiting could deadlock), so `busy_timeout` does not cover
    it. WAL is a property of the file: once the other connection has switched it, we are done.
    """
    for _ in range(_WAL_ATTEMPTS - 1):
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise
            await asyncio.sleep(0.01)
        else:
            return
    await conn.execute("PRAGMA journal_mode=WAL")


def _create_private(path: Path) -> None:
    """Make the database file readable and writable by its owner only (0600), in a directory
    made owner-only (0700) if it has to be created, before SQLite opens it.

    SQLite creates the `-wal` and `-shm` files with the database file's permissions, so those
    follow. The file is created here with an explicit mode rather than under a narrowed umask:
    the umask is the whole process's, and other threads create files too. A file left by an
    earlier version with wider permissions is narrowed in place.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for each in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            loose = each.stat().st_mode & 0o077
        except FileNotFoundError:
            continue
        if loose:
            each.chmod(0o600)


class SqliteDatabase(Database):
    dialect: ClassVar[str] = "sqlite"
    # Locked past the busy timeout, disk I/O errors, a closed connection.
    unavailable_errors: ClassVar[tuple[type[BaseException], ...]] = (
        OSError,
        sqlite3.OperationalError,
        ValueError,
    )

    def __init__(self, path: str) -> None:
        self.path = path
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._scanner: aiosqlite.Connection | None = None
        self._scanner_opening = asyncio.Lock()
        self._closing = False
        self._scan_reads: _ScanReads | None = None

    async def open(self) -> None:
        self._closing = False
        try:
            if self.path != ":memory:":
                _create_private(Path(self.path))
                self._writer = await self._connect()
                self._reader = await self._connect()
            else:
                # An in-memory database exists per connection, so reads share the writer.
                self._writer = await self._connect()
                self._reader = self._writer
            if self.migrate_on_open:
                await self._migrate()
        except BaseException:
            # Nobody closes a database whose open() failed; its connection threads would linger.
            await self.close()
            raise

    async def _connect(self) -> aiosqlite.Connection:
        """A new connection, opened whole even when the caller is cancelled meanwhile (a
        scan's task stopped at shutdown): a connection abandoned half-way keeps a thread that
        answers, later, on an event loop that may be closed by then, and dies of it."""
        opening = asyncio.ensure_future(self._open_connection())
        try:
            return await asyncio.shield(opening)
        except asyncio.CancelledError:
            with contextlib.suppress(BaseException):
                await (await opening).close()
            raise

    async def _open_connection(self) -> aiosqlite.Connection:
        conn = await aiosqlite.connect(self.path, isolation_level=None)
        try:
            conn.row_factory = sqlite3.Row
            await conn.execute("PRAGMA busy_timeout=5000")
            await _enable_wal(conn)
            await conn.execute("PRAGMA synchronous=FULL")
            await conn.execute("PRAGMA foreign_keys=ON")
        except BaseException:
            await conn.close()
            raise
        return conn

    async def close(self) -> None:
        self._closing = True
        # After a scan opening its connection, if one is (else it would open one nobody closes).
        async with self._scanner_opening:
            scanner, self._scanner = self._scanner, None
        if scanner is not None:
            await scanner.close()
        if self._reader is not None and self._reader is not self._writer:
            await self._reader.close()
        if self._writer is not None:
            await self._writer.close()
        self._reader = self._writer = None

    @property
    def _w(self) -> aiosqlite.Connection:
        return opened(self._writer)

    async def applied_migrations(self) -> set[int]:
        conn = self._w
        cursor = await conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        )
        if await cursor.fetchone() is None:
            return set()
        cursor = await conn.execute("SELECT version FROM schema_migrations")
        return {row[0] for row in await cursor.fetchall()}

    async def _migrate(self) -> None:
        conn = self._w
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        cursor = await conn.execute("SELECT version FROM schema_migrations")
        applied = {row[0] for row in await cursor.fetchall()}
        for migration in pending(
            applied, load_migrations() if self.migrations is None else self.migrations
        ):
            await conn.execute("BEGIN IMMEDIATE")
            try:
                # Look again under the write lock: another process opening the same file may
                # have applied this migration since we read the list.
                cursor = await conn.execute(
                    "SELECT 1 FROM schema_migrations WHERE version = ?", (migration.version,)
                )
                if await cursor.fetchone() is None:
                    for statement in migration.statements():
                        await conn.execute(statement)
                    await conn.execute(
                        "INSERT INTO schema_migrations "
                        "VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ'))",
                        (migration.version, migration.name),
                    )
            except BaseException:
                await conn.execute("ROLLBACK")
                raise
            await conn.execute("COMMIT")

    # A group commit runs whole on the writer connection's thread, in one call: a call per
    # statement costs a thread hop and a turn of the busy event loop each, and a batch of 32
    # creates made about 80 of them. aiosqlite has no public way to run a function on its
    # thread; `_execute` and `_conn` are its own, and the version is pinned in pyproject.toml.

    async def _write_together(
        self, units: Sequence[WriteUnit], fences: Fences, finish: Sequence[Statement]
    ) -> list[list[list[Row]]]:
        outcomes: list[list[list[Row]]] = await self._on_writer_thread(
            _write_together, units, fences, finish, self._check_fences
        )
        return outcomes

    async def _write_isolated(
        self, units: Sequence[WriteUnit], fences: Fences, finish: Sequence[Statement]
    ) -> list[UnitOutcome]:
        outcomes: list[UnitOutcome] = await self._on_writer_thread(
            _write_isolated, units, fences, finish, self._check_fences
        )
        return outcomes

    async def _on_writer_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(connection, *args)` on the writer connection's own thread, in one call."""
        writer = self._w
        run: Callable[..., Awaitable[Any]] = writer._execute  # untyped in aiosqlite
        return await run(fn, writer._conn, *args)

    def scans(self) -> Database:
        if self.path == ":memory:":
            return self
        if self._scan_reads is None:
            self._scan_reads = _ScanReads(self)
        return self._scan_reads

    async def _scan_fetch(self, sql: str, *params: Any) -> list[Row]:
        opened(self._reader)
        async with self._scanner_opening:
            if self._closing:
                opened(None)  # closed while this scan waited for the scan connection
            if self._scanner is None:
                self._scanner = await self._connect()
            scanner = self._scanner
        rows = await scanner.execute_fetchall(_sqlite_sql(sql), params)
        return [dict(row) for row in rows]

    async def _fetch(self, sql: str, *params: Any) -> list[Row]:
        reader = opened(self._reader)
        # Executed and read to the end in one call on the connection's thread. As two calls, the
        # reads of concurrent requests interleave on the shared connection, and a statement
        # stepped but not yet finished keeps its read transaction open: the next read then runs
        # inside that older snapshot and may miss a write already acknowledged (seen: a
        # checkout's 404 for a payment answered 201 a moment before).
        rows = await reader.execute_fetchall(_sqlite_sql(sql), params)
        return [dict(row) for row in rows]


CheckFences = Callable[[Fences, Mapping[int, int]], None]


def _fence(conn: sqlite3.Connection, fences: Fences, check: CheckFences) -> None:
    if not fences:
        return
    # BEGIN IMMEDIATE holds the file's write lock, so no other node bumps an epoch until this
    # transaction ends: a plain read is enough.
    marks = ", ".join("?" for _ in fences)
    cursor = conn.execute(
        f"SELECT shard, epoch FROM shard_epochs WHERE shard IN ({marks})", tuple(fences)
    )
    check(fences, {row[0]: row[1] for row in cursor.fetchall()})


def _number(conn: sqlite3.Connection, units: Sequence[WriteUnit]) -> Sequence[WriteUnit]:
    """`units` with their events numbered (mps.persistence.outbox.number_events)."""
    counts = event_counts(units)
    if not counts:
        return units
    return numbered(units, counts, _apply(conn, counter_bump(counts)))


@contextmanager
def _batch(
    conn: sqlite3.Connection, fences: Fences, finish: Sequence[Statement], check: CheckFences
) -> Iterator[None]:
    """The batch's transaction: BEGIN IMMEDIATE and the fence, then the body, `finish` and
    COMMIT; ROLLBACK if anything fails."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        _fence(conn, fences, check)
        yield
        for statement in finish:
            _apply(conn, statement)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _write_together(
    conn: sqlite3.Connection,
    units: Sequence[WriteUnit],
    fences: Fences,
    finish: Sequence[Statement],
    check: CheckFences,
) -> list[list[list[Row]]]:
    outcomes: list[list[list[Row]]] = [[[] for _ in unit] for unit in units]
    with _batch(conn, fences, finish, check):
        for step in plan_batch(_number(conn, units)):
            if step.many and not step.keyed:
                _apply_many(conn, step)
                continue
            for unit, position, statement in step.members:
                outcomes[unit][position] = _apply(conn, statement)
    return outcomes


def _write_isolated(
    conn: sqlite3.Connection,
    units: Sequence[WriteUnit],
    fences: Fences,
    finish: Sequence[Statement],
    check: CheckFences,
) -> list[UnitOutcome]:
    outcomes: list[UnitOutcome] = []
    with _batch(conn, fences, finish, check):
        for unit in units:
            conn.execute("SAVEPOINT unit")
            try:
                [numbered_unit] = _number(conn, [unit])
                outcome: UnitOutcome = [_apply(conn, st) for st in numbered_unit]
            except (StaleWrite, IntegrityConflict) as exc:
                conn.execute("ROLLBACK TO unit")
                outcome = exc
            conn.execute("RELEASE unit")
            outcomes.append(outcome)
    return outcomes


def _apply_many(conn: sqlite3.Connection, step: Step) -> None:
    try:
        conn.executemany(_sqlite_sql(step.sql), step.params())
    except sqlite3.IntegrityError as exc:
        # Which unit broke it is not known here; `write` runs the batch again unit by unit.
        raise IntegrityConflict(str(exc)) from exc


def _apply(conn: sqlite3.Connection, statement: Statement) -> list[Row]:
    try:
        cursor = conn.execute(_sqlite_sql(statement.sql), statement.params)
    except sqlite3.IntegrityError as exc:
        raise (statement.conflict_error or IntegrityConflict)(str(exc)) from exc
    rows = [dict(row) for row in cursor.fetchall()] if statement.returns_rows else []
    affected = len(rows) if statement.returns_rows else cursor.rowcount
    if statement.expect_rows is not None and affected != statement.expect_rows:
        raise statement.stale(affected)
    return rows


class _ScanReads(Database):
    """The database as the background scans see it: reads on the scan connection, with time
    for whole-table passes."""

    dialect: ClassVar[str] = "sqlite"
    unavailable_errors = SqliteDatabase.unavailable_errors
    read_deadline = 120.0

    def __init__(self, owner: SqliteDatabase) -> None:
        self._owner = owner

    async def open(self) -> None:
        """The owner opens and closes the connections."""

    async def close(self) -> None:
        """The owner opens and closes the connections."""

    async def _fetch(self, sql: str, *params: Any) -> list[Row]:
        return await self._owner._scan_fetch(sql, *params)

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        msg = "background scans only read"
        raise TypeError(msg)
