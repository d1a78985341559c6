"""Migrated databases for the tests: migrated once per session, then given to each test empty.

Nearly every test needs a database, and migrating one costs far more than the test's own work
on it. So each backend is migrated once per session, by opening it exactly as the service opens
any database (`Database.open`, which applies the migrations), and every test starts from that
state with no row of any other test. The service still migrates on open in production; the
tests of migrations themselves take a database nobody has migrated (`empty_database_url`).

* SQLite: the migrated file is the template, and each test gets a copy of its own (copying is
  a tenth of a millisecond), written owner-only as the service writes its own.
* PostgreSQL: one schema per session, migrated by the service; before each test every table in
  it but `schema_migrations` is emptied, children before the parents their foreign keys name,
  in one round trip. No test changes the schema's structure (a dropped table would make the
  next emptying fail, loudly). The admin connection gives up on a lock after a few seconds, so
  a transaction some test left open fails the next test's setup instead of hanging the run.

`test_each_test_gets_a_migrated_database_holding_no_row_of_another_test` (test_persistence.py)
holds both backends to that promise.

Why not a copy per Postgres test: measured here (PostgreSQL 15, two cores, a load test running
on the same server), per test: migrating a new schema and dropping it, 85-100 ms; cloning the
migrated tables into a new schema with `CREATE TABLE … (LIKE … INCLUDING ALL)` in one round trip
and dropping it, 60-70 ms (and LIKE copies no foreign key); `CREATE DATABASE … TEMPLATE`, 27 ms
on a quiet server but 135 ms under load (it writes the whole 8 MB database through the WAL),
plus 15-30 ms to drop it; emptying the tables of the one migrated schema, 1.5 ms.
"""

from __future__ import annotations

import asyncio
import graphlib
import os
import secrets
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import asyncpg

from mps.persistence.database import open_database

__all__ = ["PostgresSchema", "SessionLoop", "copy_sqlite_template", "make_sqlite_template"]

T = TypeVar("T")

# Long enough for any honest wait on a lock, short enough to fail a setup rather than the run.
_LOCK_TIMEOUT_MS = 5_000


class SessionLoop:
    """An event loop running on a thread of its own for the whole session.

    What session fixtures open (the admin connection) must not belong to one test's event loop,
    and running a loop on the test's own thread could replace the loop the test has set. Fixtures
    hand it coroutines with `run`, which blocks until they are done.
    """

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="test-session-loop", daemon=True
        )
        self._thread.start()

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


async def _migrate(url: str) -> None:
    database = open_database(url)
    await database.open()
    await database.close()


async def make_sqlite_template(folder: Path) -> Path:
    path = folder / "template.db"
    await _migrate(f"sqlite:///{path}")
    return path


def copy_sqlite_template(template: Path, path: Path) -> None:
    """Copy the closed template to `path` (which must not exist yet), owner-only."""
    for suffix in ("", "-wal"):
        source = Path(f"{template}{suffix}")
        if suffix and not source.exists():
            continue  # a cleanly closed WAL database is one file
        fd = os.open(f"{path}{suffix}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as copy:
            copy.write(source.read_bytes())


class PostgresSchema:
    """The session's migrated Postgres schema. Use on the `SessionLoop` only."""

    def __init__(self, url: str, schema: str, admin: asyncpg.Connection, empty_sql: str) -> None:
        self.url = url  # what the service is given: the server's URL and `?schema=`
        self.schema = schema
        self._admin = admin
        self._empty_sql = empty_sql

    @classmethod
    async def create(cls, server_url: str) -> PostgresSchema:
        """Migrate a new schema on the server of `server_url`."""
        schema = f"t_session_{secrets.token_hex(6)}"
        url = f"{server_url}?schema={schema}"
        admin = await asyncpg.connect(
            server_url, server_settings={"lock_timeout": str(_LOCK_TIMEOUT_MS)}
        )
        try:
            await _migrate(url)
            empty_sql = await _emptying_sql(admin, schema)
        except BaseException:
            await admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            await admin.close()
            raise
        return cls(url, schema, admin, empty_sql)

    async def empty(self) -> None:
        """Delete every row but the migrations' own: the schema as it was when migrated."""
        await self._admin.execute(self._empty_sql)

    async def drop(self) -> None:
        try:
            await self._admin.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
        finally:
            await self._admin.close()


async def _emptying_sql(admin: asyncpg.Connection, schema: str) -> str:
    tables = await admin.fetch(
        "SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename <> $2",
        schema,
        "schema_migrations",
    )
    references = await admin.fetch(
        "SELECT c.conrelid::regclass::text AS child, c.confrelid::regclass::text AS parent "
        "FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace "
        "WHERE c.contype = 'f' AND n.nspname = $1",
        schema,
    )
    parents: dict[str, set[str]] = {r["tablename"]: set() for r in tables}
    for r in references:
        # regclass text is qualified only when the schema is not on the search path
        parents[_unqualified(r["child"])].add(_unqualified(r["parent"]))
    # Parents come first in the order; children must go first, or their keys would refuse.
    order = reversed(list(graphlib.TopologicalSorter(parents).static_order()))
    return ";\n".join(f'DELETE FROM "{schema}"."{table}"' for table in order)


def _unqualified(name: str) -> str:
    return name.rpartition(".")[2].strip('"')
