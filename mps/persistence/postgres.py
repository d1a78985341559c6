"""Postgres backend, through asyncpg.

Writes use one dedicated connection (the persistence actor sends one batch at a time); reads use a
fixed set of reader connections taken in turn. Migrations run under an advisory lock so that
several nodes starting together apply each one exactly once.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg

from mps.errors import StaleWrite
from mps.persistence.database import (
    Database,
    Fenced,
    Fences,
    IntegrityConflict,
    UnitOutcome,
    opened,
)
from mps.persistence.migrations import load_migrations, pending
from mps.persistence.outbox import counter_bump, event_counts, number_events, numbered
from mps.persistence.statements import Row, Statement, Step, WriteUnit, plan_batch

__all__ = ["PostgresDatabase"]

# Any constant works; it only has to be the same on every node.
_MIGRATION_LOCK = 7_311_052_001


def _fence_sql(param: int) -> str:
    """The epochs of the shards listed in parameter `param`. FOR SHARE: a node taking one of
    them (an UPDATE of its row) waits until this transaction ends, so no batch under the old
    epoch commits after the new one is taken."""
    return f"SELECT shard, epoch FROM shard_epochs WHERE shard = ANY(${param}::int[]) FOR SHARE"


# Errors after which a session cannot be used again: the server ended it (a restart, a failover,
# an idle timeout, an operator's pg_terminate_backend), the socket broke, or asyncpg's protocol is
# stuck. The last happens when a session the server ended while it sat idle is used before
# asyncpg has read the socket's end: the server's farewell put the protocol in a state no query
# can start from ("cannot switch to state 12; another operation (2) is in progress").
_SESSION_LOST: tuple[type[BaseException], ...] = (
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.OperatorInterventionError,  # admin or crash shutdown, "cannot connect now"
    asyncpg.InterfaceError,  # the connection is closed or does not exist
    asyncpg.InternalClientError,
)


def _split_schema(url: str) -> tuple[str, str | None]:
    """Take our own `schema=` query parameter out of the URL (asyncpg would reject it)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query)
    schema = next((v for k, v in query if k == "schema"), None)
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    return urlunsplit(parts._replace(query=rest)), schema


class PostgresDatabase(Database):
    dialect: ClassVar[str] = "postgres"
    unavailable_errors: ClassVar[tuple[type[BaseException], ...]] = (
        *_SESSION_LOST,
        # Too many connections, disk full, out of memory: the server's, and passing.
        asyncpg.InsufficientResourcesError,
    )

    def __init__(self, url: str, *, readers: int = 10) -> None:
        self.url, self.schema = _split_schema(url)
        self._readers = readers
        # Idle reader connections; None marks a slot whose connection was dropped.
        self._idle: deque[asyncpg.Connection | None] = deque()
        # Reader connections in use by a read right now.
        self._busy: set[asyncpg.Connection] = set()
        self._writer: asyncpg.Connection | None = None
        # Set by `close`: a read that comes later (background work that outlived the app) is
        # refused rather than connecting afresh, which would leave a connection nobody closes.
        self._closed = False
        self._turns = asyncio.Semaphore(readers)

    def _server_settings(self) -> dict[str, str]:
        return {"search_path": self.schema} if self.schema else {}

    async def open(self) -> None:
        self._closed = False
        try:
            self._writer = await self._connect()
            # `_migrate` creates the schema, under the migration lock: two nodes racing through
            # CREATE SCHEMA IF NOT EXISTS can both pass the check, and the second then fails.
            if self.migrate_on_open:
                await self._migrate()
            self._idle = deque(
                await asyncio.gather(*(self._connect() for _ in range(self._readers)))
            )
        except BaseException:
            # Nobody closes a database whose open() failed; its connections would linger.
            await self.close()
            raise

    async def _connect(self) -> asyncpg.Connection:
        return await asyncpg.connect(self.url, server_settings=self._server_settings())

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, deque()
        for conn in idle:
            if conn is not None and not conn.is_closed():
                await conn.close()
        # A read still running when the database closes (background work that outlived the
        # requests) would otherwise put its connection back in a pool nobody closes again.
        busy, self._busy = self._busy, set()
        for conn in busy:
            if not conn.is_closed():
                conn.terminate()
        if self._writer is not None:
            await self._writer.close()
        self._writer = None

    @property
    def _w(self) -> asyncpg.Connection:
        return opened(self._writer)

    async def applied_migrations(self) -> set[int]:
        conn = self._w
        # Looked up in the search path, the schema's: absent until the first migration.
        if await conn.fetchval("SELECT to_regclass('schema_migrations')") is None:
            return set()
        return {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}

    async def _migrate(self) -> None:
        conn = self._w
        await conn.execute("SELECT pg_advisory_lock($1)", _MIGRATION_LOCK)
        try:
            if self.schema:
                await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            applied = {
                r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")
            }
            for migration in pending(
                applied, load_migrations() if self.migrations is None else self.migrations
            ):
                async with conn.transaction():
                    for statement in migration.statements():
                        await conn.execute(statement)
                    await conn.execute(
                        "INSERT INTO schema_migrations VALUES ($1, $2, "
                        "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))",
                        migration.version,
                        migration.name,
                    )
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", _MIGRATION_LOCK)

    async def _fence(self, conn: asyncpg.Connection, fences: Fences) -> None:
        if not fences:
            return
        rows = await conn.fetch(_fence_sql(1), list(fences))
        self._check_fences(fences, {r["shard"]: r["epoch"] for r in rows})

    async def _fence_and_number(
        self, conn: asyncpg.Connection, fences: Fences, units: Sequence[WriteUnit]
    ) -> Sequence[WriteUnit]:
        """`_fence`, then `number_events`, in one round trip when the batch needs both.

        Each round trip of the writer waits for a turn of the busy event loop (several
        milliseconds under load), and a group commit's time is what a create waits for."""
        counts = event_counts(units)
        if not fences or not counts:
            await self._fence(conn, fences)
            return await number_events(units, lambda st: self._apply(conn, st))
        bump = counter_bump(counts)
        # One statement: the fence's rows (shard, epoch), then the counters' (company_id, mode,
        # last). Both queries run whole, as the outer query reads every row of each.
        sql = (
            f"WITH fence AS ({_fence_sql(len(bump.params) + 1)}), bump AS ({bump.sql}) "
            "SELECT shard, epoch, NULL::text AS company_id, NULL::text AS mode, "
            "NULL::bigint AS last FROM fence "
            "UNION ALL SELECT NULL, NULL, company_id, mode, last FROM bump"
        )
        rows = await self._apply(conn, Statement(sql, (*bump.params, list(fences))))
        self._check_fences(fences, {r["shard"]: r["epoch"] for r in rows if r["shard"] is not None})
        return numbered(units, counts, [r for r in rows if r["company_id"] is not None])

    async def _write_together(
        self, units: Sequence[WriteUnit], fences: Fences, finish: Sequence[Statement]
    ) -> list[list[list[Row]]]:
        conn = await self._writer_connection()
        outcomes: list[list[list[Row]]] = [[[] for _ in unit] for unit in units]
        try:
            async with conn.transaction():
                units = await self._fence_and_number(conn, fences, units)
                for step in plan_batch(units):
                    if step.keyed:
                        answers = await self._apply_keyed(conn, step)
                        for (unit, position, _), rows in zip(step.members, answers, strict=True):
                            outcomes[unit][position] = rows
                    elif step.many:
                        await self._apply_many(conn, step)
                    else:
                        unit, position, statement = step.members[0]
                        outcomes[unit][position] = await self._apply(conn, statement)
                for statement in finish:
                    await self._apply(conn, statement)
                return outcomes
        except (StaleWrite, IntegrityConflict, Fenced):
            raise
        except BaseException as exc:
            self._drop_if_stuck(conn, exc)
            raise

    @staticmethod
    def _drop_if_stuck(conn: asyncpg.Connection, exc: BaseException) -> None:
        # The transaction could not even be rolled back, or the session itself failed: its state
        # is unknown, so drop it; the next batch connects afresh instead of inheriting it. This
        # batch is answered Unavailable: whether a COMMIT cut off mid-way landed is not known.
        if not conn.is_closed() and (conn.is_in_transaction() or isinstance(exc, _SESSION_LOST)):
            conn.terminate()

    async def _write_isolated(
        self, units: Sequence[WriteUnit], fences: Fences, finish: Sequence[Statement]
    ) -> list[UnitOutcome]:
        conn = await self._writer_connection()
        outcomes: list[UnitOutcome] = []
        try:
            async with conn.transaction():
                await self._fence(conn, fences)
                for unit in units:
                    try:
                        async with conn.transaction():  # nested: a savepoint
                            [numbered] = await number_events(
                                [unit], lambda st: self._apply(conn, st)
                            )
                            outcome: UnitOutcome = [await self._apply(conn, st) for st in numbered]
                    except (StaleWrite, IntegrityConflict) as exc:
                        outcome = exc
                    outcomes.append(outcome)
                for statement in finish:
                    await self._apply(conn, statement)
        except Fenced:
            raise
        except BaseException as exc:
            self._drop_if_stuck(conn, exc)
            raise
        return outcomes

    async def _writer_connection(self) -> asyncpg.Connection:
        conn = self._w
        if conn.is_closed():
            # The server ended the session (a restart, a failover, an idle timeout). The batch
            # that found out was answered Unavailable; this one gets a new session, rather than
            # every write failing until the process restarts. Should the server still be down,
            # connecting raises and this batch is answered Unavailable in turn.
            conn = self._writer = await self._connect()
        return conn

    @staticmethod
    async def _apply_many(conn: asyncpg.Connection, step: Step) -> None:
        try:
            await conn.executemany(step.sql, step.params())
        except asyncpg.IntegrityConstraintViolationError as exc:
            # Which unit broke it is not known here; `write` runs the batch again unit by unit.
            raise IntegrityConflict(str(exc)) from exc

    @classmethod
    async def _apply_keyed(cls, conn: asyncpg.Connection, step: Step) -> list[list[Row]]:
        """Each member's rows, the members sent in one round trip and their rows told apart by
        their first column, the key each member names."""
        statements = [st for _, _, st in step.members]
        keys = [st.key for st in statements]
        if len(set(keys)) != len(keys):
            # Two members of one key could not tell whose the rows are: one at a time.
            return [await cls._apply(conn, st) for st in statements]
        try:
            records = await conn.fetchmany(step.sql, [st.params for st in statements])
        except asyncpg.IntegrityConstraintViolationError as exc:
            raise IntegrityConflict(str(exc)) from exc
        by_key: dict[Any, list[Row]] = {}
        for record in records:
            by_key.setdefault(record[0], []).append(dict(record))
        answers = []
        for statement, key in zip(statements, keys, strict=True):
            rows = by_key.get(key, [])
            if statement.expect_rows is not None and len(rows) != statement.expect_rows:
                raise statement.stale(len(rows))
            answers.append(rows)
        return answers

    @staticmethod
    async def _apply(conn: asyncpg.Connection, statement: Statement) -> list[Row]:
        try:
            if statement.returns_rows:
                records = await conn.fetch(statement.sql, *statement.params)
                rows = [dict(r) for r in records]
                affected = len(rows)
            else:
                status = await conn.execute(statement.sql, *statement.params)
                rows = []
                # The command tag ends with the row count: "UPDATE 1", "INSERT 0 1".
                affected = int(status.rsplit(" ", 1)[-1]) if status[-1:].isdigit() else 0
        except asyncpg.IntegrityConstraintViolationError as exc:
            raise (statement.conflict_error or IntegrityConflict)(str(exc)) from exc
        if statement.expect_rows is not None and affected != statement.expect_rows:
            raise statement.stale(affected)
        return rows

    def _give_back(self, conn: asyncpg.Connection | None) -> None:
        if conn is None:
            self._idle.append(None)  # connecting failed: the slot connects on its next read
            return
        self._busy.discard(conn)
        if self._closed:
            # `close` ran while this read was out: the connection goes with the pool.
            if not conn.is_closed():
                conn.terminate()
            self._idle.append(None)
            return
        self._idle.append(conn)

    def _drop(self, conn: asyncpg.Connection | None) -> None:
        """Forget a reader whose session is unusable or in an unknown state; its slot connects
        afresh on its next read. The caller puts the slot back."""
        if conn is None:
            return
        self._busy.discard(conn)
        if not conn.is_closed():
            conn.terminate()

    async def _fetch(self, sql: str, *params: Any) -> list[Row]:
        # A fixed set of reader connections, taken first come, first served (the semaphore is
        # FIFO). Not asyncpg's pool: its acquire and release cost a fifth of a simple read, and
        # it hands a released connection to whoever asks next, so under load some reads waited
        # seconds while newcomers passed them. Readers never change session state, so a
        # connection needs no reset between reads.
        if self._closed:
            msg = "the database is closed"
            raise ConnectionError(msg)
        async with self._turns:
            conn = self._idle.popleft()
            retried = False
            while True:
                # A session the server ended is usually seen closed here already; one ended a
                # moment ago may not be, and fails below instead.
                fresh = False
                try:
                    if conn is None or conn.is_closed():
                        fresh = True
                        conn = None
                        conn = await self._connect()
                    self._busy.add(conn)
                    rows = await conn.fetch(sql, *params)
                except _SESSION_LOST:
                    self._drop(conn)
                    conn = None
                    if fresh or retried:
                        # A session made just now failed: the server is down or refusing, and
                        # this read is answered 503 (Database.fetch).
                        self._idle.append(None)
                        raise
                    # The session had sat idle, and the server ended it meanwhile. A read can
                    # run again, once, on a new session: the client need not see the fault.
                    retried = True
                    continue
                except asyncpg.PostgresError:
                    # The server refused the query; the session itself is fine.
                    self._give_back(conn)
                    raise
                except BaseException:
                    # Cancelled or failed mid-query: the session's state is unknown, so it is
                    # not reused; the next read on this slot connects afresh.
                    self._drop(conn)
                    self._idle.append(None)
                    raise
                self._give_back(conn)
                return [dict(r) for r in rows]
