"""Postgres backend, through asyncpg.

Writes use one dedicated connection (the persistence actor sends one batch at a time); reads use a
pool. Migrations run under an advisory lock so that several nodes starting together apply each
one exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg

from mps.errors import StaleWrite
from mps.persistence.database import Database, IntegrityConflict, UnitOutcome
from mps.persistence.migrations import load_migrations
from mps.persistence.statements import Row, Statement, Step, WriteUnit, plan_batch

__all__ = ["PostgresDatabase"]

# Any constant works; it only has to be the same on every node.
_MIGRATION_LOCK = 7_311_052_001


def _split_schema(url: str) -> tuple[str, str | None]:
    """Take our own `schema=` query parameter out of the URL (asyncpg would reject it)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query)
    schema = next((v for k, v in query if k == "schema"), None)
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    return urlunsplit(parts._replace(query=rest)), schema


async def _keep_session(_conn: asyncpg.Connection) -> None:
    """Pool release without `Connection.reset()`, which costs a round trip per read. Readers never
    change session state (no SET, LISTEN, advisory locks or open transactions), so there is
    nothing to reset; a connection whose query was cancelled is closed by the pool itself."""


class PostgresDatabase(Database):
    dialect: ClassVar[str] = "postgres"
    unavailable_errors: ClassVar[tuple[type[BaseException], ...]] = (
        OSError,
        asyncpg.PostgresConnectionError,
        asyncpg.InterfaceError,
        asyncpg.CannotConnectNowError,
        asyncpg.OperatorInterventionError,
    )

    def __init__(self, url: str, *, pool_size: int = 10) -> None:
        self.url, self.schema = _split_schema(url)
        self._pool_size = pool_size
        self._pool: asyncpg.Pool | None = None
        self._writer: asyncpg.Connection | None = None
        self._turns = asyncio.Semaphore(pool_size)

    def _server_settings(self) -> dict[str, str]:
        return {"search_path": self.schema} if self.schema else {}

    async def open(self) -> None:
        try:
            self._writer = await self._connect()
            # `_migrate` creates the schema, under the migration lock: two nodes racing through
            # CREATE SCHEMA IF NOT EXISTS can both pass the check, and the second then fails.
            await self._migrate()
            self._pool = await asyncpg.create_pool(
                self.url,
                min_size=1,
                max_size=self._pool_size,
                server_settings=self._server_settings(),
                reset=_keep_session,
            )
        except BaseException:
            # Nobody closes a database whose open() failed; its connections would linger.
            await self.close()
            raise

    async def _connect(self) -> asyncpg.Connection:
        return await asyncpg.connect(self.url, server_settings=self._server_settings())

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
        if self._writer is not None:
            await self._writer.close()
        self._pool = self._writer = None

    @property
    def _w(self) -> asyncpg.Connection:
        if self._writer is None:
            msg = "database is not open"
            raise RuntimeError(msg)
        return self._writer

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
            for migration in load_migrations():
                if migration.version in applied:
                    continue
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

    async def _write_together(self, units: Sequence[WriteUnit]) -> list[list[list[Row]]]:
        conn = await self._writer_connection()
        outcomes: list[list[list[Row]]] = [[[] for _ in unit] for unit in units]
        try:
            async with conn.transaction():
                for step in plan_batch(units):
                    if step.many:
                        await self._apply_many(conn, step)
                    else:
                        unit, position, statement = step.members[0]
                        outcomes[unit][position] = await self._apply(conn, statement)
                return outcomes
        except (StaleWrite, IntegrityConflict):
            raise
        except BaseException:
            self._drop_if_stuck(conn)
            raise

    def _drop_if_stuck(self, conn: asyncpg.Connection) -> None:
        # The transaction could not even be rolled back: the session is in an unknown state, so
        # drop it; the next batch connects afresh instead of inheriting it.
        if not conn.is_closed() and conn.is_in_transaction():
            conn.terminate()

    async def _write_isolated(self, units: Sequence[WriteUnit]) -> list[UnitOutcome]:
        conn = await self._writer_connection()
        outcomes: list[UnitOutcome] = []
        try:
            async with conn.transaction():
                for unit in units:
                    try:
                        async with conn.transaction():  # nested: a savepoint
                            outcome: UnitOutcome = [await self._apply(conn, st) for st in unit]
                    except (StaleWrite, IntegrityConflict) as exc:
                        outcome = exc
                    outcomes.append(outcome)
        except BaseException:
            self._drop_if_stuck(conn)
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
            await conn.executemany(step.sql, [st.params for _, _, st in step.members])
        except asyncpg.IntegrityConstraintViolationError as exc:
            # Which unit broke it is not known here; `write` runs the batch again unit by unit.
            raise IntegrityConflict(str(exc)) from exc

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

    @contextlib.asynccontextmanager
    async def _reader(self) -> AsyncIterator[asyncpg.Connection]:
        if self._pool is None:
            msg = "database is not open"
            raise RuntimeError(msg)
        # The pool hands a released connection to whoever asks next, not to the longest waiter,
        # so under load some reads wait seconds while newcomers pass them. The semaphore, as
        # wide as the pool, queues readers first come, first served.
        async with self._turns, self._pool.acquire() as conn:
            yield conn

    async def _fetch(self, sql: str, *params: Any) -> list[Row]:
        async with self._reader() as conn:
            return [dict(r) for r in await conn.fetch(sql, *params)]

    async def drop_schema(self) -> None:
        """Tests only: remove the schema this database was opened on."""
        if self.schema:
            await self._w.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
