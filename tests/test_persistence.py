"""Migrations, unit-by-unit group commits and the persistence actor, on real SQLite and Postgres
(mps.persistence, mps.actors.persistence)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import asyncpg
import orjson
import pytest

from mps.actors.persistence import Commit, PersistenceActor
from mps.actors.runtime import ask, stop
from mps.domain.payments import Payment
from mps.errors import KeyAlreadyStored, StaleWrite, Unavailable
from mps.persistence.analytics_store import rollup_statements
from mps.persistence.database import (
    Database,
    Fenced,
    Fences,
    IntegrityConflict,
    UnitOutcome,
    open_database,
)
from mps.persistence.migrations import load_migrations
from mps.persistence.outbox import event_insert, event_row
from mps.persistence.payment_store import payment_from_row
from mps.persistence.postgres import PostgresDatabase
from mps.persistence.queries.idempotency import store_response
from mps.persistence.sqlite import SqliteDatabase
from mps.persistence.statements import (
    Row,
    Statement,
    WriteUnit,
    insert,
    plan_batch,
    versioned_update,
)
from mps.persistence.webhook_store import endpoint_failing
from tests.actors import assert_nobody_left_waiting
from tests.fakes import WrappedDatabase, wait_until
from tests.helpers import eventually

pytestmark = pytest.mark.both_backends

PATIENCE = 10.0
NOW = "2026-01-01T00:00:00.000Z"


def new_user(user_id: str) -> Statement:
    return insert(
        "users", {"id": user_id, "email": f"{user_id}@example.com", "name": None, "created_at": NOW}
    )


def new_user_returning_id(user_id: str) -> Statement:
    statement = new_user(user_id)
    return Statement(statement.sql + " RETURNING id", statement.params)


def new_company(company_id: str, data: str = "{}") -> Statement:
    return insert(
        "companies",
        {
            "id": company_id,
            "version": 1,
            "name": company_id,
            "created_at": NOW,
            "updated_at": NOW,
            "data": data,
        },
    )


def rename_missing_user() -> Statement:
    return Statement(
        "UPDATE users SET name = $1 WHERE id = $2", ("nobody", "usr_missing"), expect_rows=1
    )


async def user_ids(database: Database) -> list[str]:
    return [r["id"] for r in await database.fetch("SELECT id FROM users ORDER BY id")]


async def assert_only_the_middle_unit_refused(
    database: Database, outcomes: list[Any], error: type[Exception]
) -> None:
    """Of three units written together over an existing usr_a (one inserting usr_b, a middle
    one reusing usr_a, one inserting usr_d), the middle one failed with `error` and wrote
    nothing, and the others committed."""
    assert isinstance(outcomes[1], error)
    assert not isinstance(outcomes[0], BaseException)
    assert not isinstance(outcomes[2], BaseException)
    assert await user_ids(database) == ["usr_a", "usr_b", "usr_d"]


class BreakingDatabase(WrappedDatabase):
    """A real database whose next group commit fails part-way, as a lost connection would.

    The failure comes from the server, after every unit of the batch has been executed inside the
    transaction, so what it proves is the backend's rollback, not an early return.
    """

    def __init__(self, real: Database) -> None:
        super().__init__(real)
        self.break_next = False
        self.writes = 0

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        self.writes += 1
        if self.break_next:
            self.break_next = False
            # Not a unit's own failure (a constraint or a version), so the whole batch fails.
            units = [*units, (Statement("SELECT no_such_column FROM users"),)]
        return await self.real.write(units, fences)


class StuckDatabase(BreakingDatabase):
    """A real database whose writes never finish, as behind a hung network link."""

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        self.writes += 1
        await asyncio.Event().wait()
        raise AssertionError  # unreachable: the wait above never ends


@pytest.fixture
async def writer(database: Database) -> AsyncIterator[PersistenceActor]:
    actor = PersistenceActor.launch(database)
    yield actor
    await stop(actor.actor_ref)


async def test_migrations_are_applied_once_when_the_database_is_reopened(
    empty_database_url: str,
) -> None:
    # given a new database the service has migrated on its first open
    expected = [m.version for m in load_migrations()]
    first = open_database(empty_database_url)
    await first.open()

    # when
    again = open_database(empty_database_url)
    try:
        await again.open()
        versions = [
            r["version"]
            for r in await again.fetch("SELECT version FROM schema_migrations ORDER BY version")
        ]
        companies = await first.fetchval("SELECT COUNT(*) FROM companies")
    finally:
        await asyncio.gather(first.close(), again.close())

    # then
    assert versions == expected
    assert companies == 0


async def test_migrations_are_applied_once_when_two_nodes_open_a_new_database_together(
    empty_database_url: str,
) -> None:
    # given: two processes' worth of connections to one database nobody has migrated yet
    first, second = open_database(empty_database_url), open_database(empty_database_url)

    # when
    try:
        async with asyncio.timeout(PATIENCE):
            await asyncio.gather(first.open(), second.open())
        versions = [
            r["version"]
            for r in await first.fetch("SELECT version FROM schema_migrations ORDER BY version")
        ]
    finally:
        await asyncio.gather(first.close(), second.close())

    # then
    assert versions == [m.version for m in load_migrations()]


@pytest.mark.parametrize("turn", ["one", "another"])
async def test_each_test_gets_a_migrated_database_holding_no_row_of_another_test(
    database: Database, turn: str
) -> None:
    # given the database this test was given (tests/databases.py): whichever turn runs second
    # would see the rows the first left, were the databases of two tests not kept apart
    if database.dialect == "sqlite":
        listing = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'"
    else:
        listing = "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()"
    tables = [r["name"] for r in await database.fetch(listing)]

    # when
    counts = {t: await database.fetchval(f'SELECT COUNT(*) FROM "{t}"') for t in tables}
    versions = [
        r["version"]
        for r in await database.fetch("SELECT version FROM schema_migrations ORDER BY version")
    ]
    await database.write([(new_user(f"usr_{turn}"), new_company(f"co_{turn}"))])

    # then
    assert {"companies", "payments", "users"} <= set(tables)
    assert counts == {t: len(versions) if t == "schema_migrations" else 0 for t in tables}
    assert versions == [m.version for m in load_migrations()]


async def test_write_rolls_back_only_the_stale_unit_when_its_row_count_does_not_match(
    database: Database,
) -> None:
    # given: the middle unit writes a row, then finds its guarded update matched nothing
    units = [
        (new_user("usr_a"),),
        (new_user("usr_b"), rename_missing_user()),
        (new_user("usr_c"),),
    ]

    # when
    outcomes = await database.write(units)

    # then
    assert outcomes[0] == [[]] and outcomes[2] == [[]]
    assert isinstance(outcomes[1], StaleWrite)
    assert await user_ids(database) == ["usr_a", "usr_c"]


async def test_write_rolls_back_only_the_conflicting_unit_when_a_primary_key_is_taken(
    database: Database,
) -> None:
    # given
    await database.write([(new_user("usr_a"),)])
    units = [
        (new_user("usr_b"),),
        (new_user("usr_c"), new_user("usr_a")),
        (new_user("usr_d"),),
    ]

    # when
    outcomes = await database.write(units)

    # then
    await assert_only_the_middle_unit_refused(database, outcomes, IntegrityConflict)


async def test_write_returns_the_rows_of_each_statement_when_they_use_returning(
    database: Database,
) -> None:
    # when
    outcomes = await database.write(
        [(new_user_returning_id("usr_a"), new_user("usr_b")), (new_user_returning_id("usr_c"),)]
    )

    # then
    assert outcomes == [[[{"id": "usr_a"}], []], [[{"id": "usr_c"}]]]


async def test_versioned_update_is_refused_when_the_version_is_stale(
    database: Database,
) -> None:
    # given
    await database.write([(new_company("cmp_a", '{"n": 0}'),)])
    first = versioned_update("companies", "id", "cmp_a", 1, {"data": '{"n": 1}'})
    stale = versioned_update("companies", "id", "cmp_a", 1, {"data": '{"n": 2}'})

    # when
    accepted, refused = await database.write([(first,), (stale,)])

    # then
    assert accepted == [[{"id": "cmp_a"}]]  # its key, as every versioned update returns
    assert isinstance(refused, StaleWrite)
    row = await database.fetchrow("SELECT version, data FROM companies WHERE id = $1", "cmp_a")
    assert row == {"version": 2, "data": '{"n": 1}'}


async def test_persistence_actor_groups_commits_when_many_writers_ask_at_once(
    database: Database, writer: PersistenceActor
) -> None:
    # given
    count = 300

    # when
    async with asyncio.timeout(PATIENCE):
        replies = await asyncio.gather(
            *(
                ask(writer.actor_ref, Commit((new_user_returning_id(f"usr_{i:04d}"),)))
                for i in range(count)
            )
        )

    # then: each writer got the rows of its own unit, and fewer transactions than writes were paid
    assert replies == [[[{"id": f"usr_{i:04d}"}]] for i in range(count)]
    assert writer.units == count
    assert writer.commits < count
    assert await user_ids(database) == [f"usr_{i:04d}" for i in range(count)]


async def test_persistence_actor_refuses_only_the_stale_writer_when_it_shares_a_group(
    database: Database, writer: PersistenceActor
) -> None:
    # given
    persistence = writer.actor_ref
    await ask(persistence, Commit((new_company("cmp_a"),)))
    commits_before = writer.commits

    # when: three writes queued together, the middle one from an outdated snapshot
    futures = [
        persistence.ask(Commit((new_user("usr_a"),)), block=False),
        persistence.ask(
            Commit(
                (new_user("usr_b"), versioned_update("companies", "id", "cmp_a", 7, {"name": "B"}))
            ),
            block=False,
        ),
        persistence.ask(Commit((new_user("usr_c"),)), block=False),
    ]
    async with asyncio.timeout(PATIENCE):
        first, refused, third = await asyncio.gather(*futures, return_exceptions=True)

    # then
    assert writer.commits == commits_before + 1
    assert first == [[]] and third == [[]]
    assert isinstance(refused, StaleWrite)
    assert await user_ids(database) == ["usr_a", "usr_c"]
    assert persistence.is_alive()


async def test_acknowledged_commit_is_seen_when_a_new_database_object_opens_the_same_url(
    database: Database, database_url: str
) -> None:
    # given
    writer = PersistenceActor.start(database)
    await ask(writer, Commit((new_user("usr_durable"),)))
    await stop(writer)
    await database.close()

    # when
    reopened = open_database(database_url)
    await reopened.open()
    try:
        found = await user_ids(reopened)
    finally:
        await reopened.close()

    # then
    assert found == ["usr_durable"]


async def test_group_commit_answers_unavailable_to_every_writer_when_the_database_fails(
    database: Database,
) -> None:
    # given
    breaking = BreakingDatabase(database)
    writer = PersistenceActor.start(breaking)
    breaking.break_next = True

    try:
        # when
        futures = [writer.ask(Commit((new_user(f"usr_{i}"),)), block=False) for i in range(5)]
        async with asyncio.timeout(PATIENCE):
            outcomes = await asyncio.gather(*futures, return_exceptions=True)
        later = await ask(writer, Commit((new_user_returning_id("usr_later"),)))
    finally:
        await stop(writer)

    # then: one failed transaction, none of it kept, and the writer carried on
    assert breaking.writes == 2
    assert all(isinstance(o, Unavailable) for o in outcomes), outcomes
    assert later == [[{"id": "usr_later"}]]
    assert await user_ids(database) == ["usr_later"]


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_persistence_actor_recovers_when_the_server_drops_its_connection(
    database: Database,
) -> None:
    # given: the writer's session is killed by the server between two commits
    writer = PersistenceActor.start(database)
    try:
        await ask(writer, Commit((new_user("usr_before"),)))
        assert isinstance(database, PostgresDatabase)
        pid = database._w.get_server_pid()
        assert await database.fetchval("SELECT pg_terminate_backend($1)", pid) is True

        # when: the first commit after the loss may fail; the ones after it must not
        outcomes: list[Any] = []
        async with asyncio.timeout(PATIENCE):
            for i in range(3):
                try:
                    outcomes.append(await ask(writer, Commit((new_user(f"usr_after_{i}"),))))
                except Unavailable as exc:
                    outcomes.append(exc)
    finally:
        await stop(writer)

    # then
    assert outcomes[1:] == [[[]], [[]]]
    committed = [o for o in outcomes if not isinstance(o, BaseException)]
    assert len(await user_ids(database)) == 1 + len(committed)


async def test_writers_get_an_error_when_the_persistence_actor_is_cancelled_mid_commit(
    database: Database,
) -> None:
    # given: a group commit in progress and another write queued behind it
    stuck = StuckDatabase(database)
    writer = PersistenceActor.launch(stuck)
    in_commit = writer.actor_ref.ask(Commit((new_user("usr_a"),)), block=False)
    await wait_until(lambda: stuck.writes == 1)
    queued = writer.actor_ref.ask(Commit((new_user("usr_b"),)), block=False)

    # when
    writer.task.cancel()

    # then
    await assert_nobody_left_waiting(in_commit, queued, "cancelled during a group commit", PATIENCE)
    assert stuck.writes == 1


async def test_persistence_actor_keeps_serving_after_an_unexpected_message(
    database: Database,
) -> None:
    # given
    writer = PersistenceActor.start(database)
    try:
        # when something it does not understand reaches it
        with pytest.raises(TypeError):
            await ask(writer, "not a commit")

        # then the only writer is still alive and commits
        assert await ask(writer, Commit((new_user("usr_after"),))) == [[]]
    finally:
        await stop(writer)

    assert await user_ids(database) == ["usr_after"]


async def test_a_batch_without_failures_commits_without_savepoints_and_one_with_falls_back(
    database: Database,
) -> None:
    # given a batch whose units all succeed, and one whose middle unit is stale
    good = [(new_user(f"usr_{n}"),) for n in range(3)]
    stale = (Statement("UPDATE users SET name = 'x' WHERE id = 'usr_nobody'", expect_rows=1),)

    # when
    first = await database.write(good)
    second = await database.write([(new_user("usr_a"),), stale, (new_user("usr_b"),)])

    # then both commit what they should, unit by unit
    assert first == [[[]], [[]], [[]]]
    assert second[0] == [[]] and second[2] == [[]]
    assert isinstance(second[1], StaleWrite)
    assert await user_ids(database) == ["usr_0", "usr_1", "usr_2", "usr_a", "usr_b"]


def test_a_batch_plan_groups_one_sql_across_units_and_keeps_each_unit_in_order() -> None:
    first = (new_user("usr_a"), new_user_returning_id("usr_b"), new_company("co_a"))
    second = (new_user("usr_c"), new_company("co_b"))

    steps = plan_batch([first, second])

    order = [[(unit, position) for unit, position, _ in step.members] for step in steps]
    assert order == [[(0, 0), (1, 0)], [(0, 1)], [(1, 1)], [(0, 2)]]
    assert [step.many for step in steps] == [True, False, False, False]


def test_a_batch_plan_sends_a_run_of_one_sql_within_a_unit_as_one_step() -> None:
    # given a unit inserting three users in a row, then a company, then one more user, and a
    # second unit inserting one user
    first = [new_user("usr_a"), new_user("usr_b"), new_user("usr_c"), new_company("co_a")]
    first.append(new_user("usr_d"))
    second = [new_user("usr_e")]

    # when
    steps = plan_batch([first, second])

    # then the run and the other unit's insert go together, in order; the rest keep their place
    order = [[(unit, position) for unit, position, _ in step.members] for step in steps]
    assert order == [[(0, 0), (0, 1), (0, 2), (1, 0)], [(0, 3)], [(0, 4)]]


async def test_a_unit_with_a_run_of_one_sql_commits_every_row_of_it(database: Database) -> None:
    # when one unit inserts many rows of one table, and a second unit one more
    outcomes = await database.write(
        [tuple(new_user(f"usr_{n:02}") for n in range(20)), (new_user("usr_zz"),)]
    )

    # then every row is stored
    assert outcomes == [[[]] * 20, [[]]]
    assert await user_ids(database) == [f"usr_{n:02}" for n in range(20)] + ["usr_zz"]


async def test_a_unit_breaking_a_constraint_inside_a_grouped_statement_fails_alone(
    database: Database,
) -> None:
    # given a batch whose units all insert with one SQL, sent as one statement, one of them
    # reusing a taken id, its constraint naming the error the caller handles
    await database.write([(new_user("usr_a"),)])
    taken = new_user("usr_a")
    guarded = Statement(taken.sql, taken.params, conflict_error=KeyAlreadyStored)
    units = [(new_user("usr_b"),), (guarded,), (new_user("usr_d"),)]

    # when
    outcomes = await database.write(units)

    # then only that unit is refused, with the guard's own error
    await assert_only_the_middle_unit_refused(database, outcomes, KeyAlreadyStored)


async def test_writers_are_answered_503_when_their_group_commit_outlasts_the_deadline(
    database: Database,
) -> None:
    # given a writer whose database never finishes a write
    stuck = StuckDatabase(database)
    writer = PersistenceActor.launch(stuck, deadline=0.05)
    try:
        # when a unit is committed
        with pytest.raises(Unavailable, match="in time"):
            await writer.actor_ref.ask(Commit((new_user("usr_a"),)), block=False)
    finally:
        writer.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await writer.task

    # then it was answered, and nothing was written
    assert stuck.writes == 1
    assert await user_ids(database) == []


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_reads_recover_when_the_server_drops_a_reader_connection(
    database: Database,
) -> None:
    # given every session of the database but the writer's killed by the server
    assert isinstance(database, PostgresDatabase)
    await database.write([(new_user("usr_a"),)])
    assert await user_ids(database) == ["usr_a"]
    admin = await asyncpg.connect(database.url)
    try:
        killed = await admin.fetchval(
            "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND pid <> $1 AND datname = current_database() "
            "AND backend_type = 'client backend' AND state = 'idle' "
            "AND query LIKE '%FROM users%'",
            database._w.get_server_pid(),
        )
    finally:
        await admin.close()
    assert killed >= 1

    # when reads follow: a read on a dropped session may fail, and is then 503
    outcomes: list[Any] = []
    for _ in range(25):
        try:
            outcomes.append(await user_ids(database))
        except Unavailable as exc:
            outcomes.append(exc)

    # then every reader slot has connected afresh and answers
    assert outcomes[-10:] == [["usr_a"]] * 10


@pytest.mark.both_backends
async def test_a_read_made_after_a_commit_sees_it_while_other_reads_are_under_way(
    database: Database,
) -> None:
    # given many rows, so each read of all of them takes a while, and readers doing just that
    await database.write([tuple(new_user(f"usr_bulk{n:04d}") for n in range(300))])
    stop_reading = asyncio.Event()

    async def read_everything() -> None:
        while not stop_reading.is_set():
            await database.fetch("SELECT * FROM users")

    readers = [asyncio.create_task(read_everything()) for _ in range(4)]
    try:
        # when users are written one by one, each read back as soon as its commit returns
        missed = []
        for n in range(100):
            await database.write([(new_user(f"usr_new{n:04d}"),)])
            row = await database.fetchrow("SELECT id FROM users WHERE id = $1", f"usr_new{n:04d}")
            if row is None:
                missed.append(n)
    finally:
        stop_reading.set()
        await asyncio.gather(*readers)

    # then every read saw the commit made before it (no read ran in an older snapshot)
    assert missed == []


async def _running_scan(database: Database, rows: int) -> asyncio.Task[list[Row]]:
    """A background scan counting `rows` generated rows, returned once it is seen running.

    Postgres shows every session's running statement (pg_stat_activity), found by a token in
    its text. SQLite shows no other connection's statements, so the scan says itself when it
    has begun: its first row comes from a function on the scan connection (opened by a first
    scan, and reached privately, as nothing public names it)."""
    token = f"scan_{uuid.uuid4().hex}"
    if isinstance(database, SqliteDatabase):
        await database.scans().fetch("SELECT 1")
        begun = threading.Event()

        def scan_started() -> int:  # called on the scan connection's thread
            begun.set()
            return 1

        assert database._scanner is not None
        await database._scanner.create_function("scan_started", 0, scan_started)
        first = "scan_started()"
    else:
        first = "1"
    scan = asyncio.create_task(
        database.scans().fetch(
            f"WITH RECURSIVE n(i) AS (SELECT {first} UNION ALL SELECT i + 1 FROM n "
            f"WHERE i < {rows}) SELECT count(*) AS c, '{token}' AS token FROM n"
        )
    )
    if isinstance(database, SqliteDatabase):
        await wait_until(begun.is_set, within=PATIENCE)
    else:
        await eventually(
            lambda: database.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1",
                f"%{token}%",
            ),
            within=PATIENCE,
            every=0.005,
            what="the scan running on the server",
        )
    return scan


async def test_a_long_background_scan_does_not_hold_up_other_reads(database: Database) -> None:
    # given a scan of a few seconds, as a reconciliation pass over a million payments takes,
    # seen running before anything else is read
    scan = await _running_scan(database, 3000000)

    # when a request's read is made meanwhile
    value = await database.fetchval("SELECT 1")

    # then it was answered while the scan still ran: before the scan's own answer, which it
    # would have waited behind on a shared connection
    assert value == 1
    assert not scan.done(), "the scan should still be running"
    assert (await scan)[0]["c"] == 3000000


def _sqlite_connection_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if "_connection_worker_thread" in t.name}


async def _no_connection_thread_left(besides: set[threading.Thread]) -> None:
    """Wait until every SQLite connection's thread but those `besides` has ended. A connection
    left open outlives its event loop: its thread answers on the closed loop later and dies of
    it, in whatever test runs then."""
    await wait_until(lambda: not _sqlite_connection_threads() - besides, within=PATIENCE)


async def _first_scan_opening(path: Path) -> tuple[SqliteDatabase, asyncio.Future[list[Row]]]:
    """A SQLite database just opened, and its first scan, caught opening the scan connection."""
    database = SqliteDatabase(str(path))
    await database.open()
    scan = asyncio.ensure_future(database.scans().fetch("SELECT 1"))
    await asyncio.sleep(0)
    return database, scan


async def test_closing_while_a_first_scan_opens_its_connection_leaves_no_connection_open(
    tmp_path: Path,
) -> None:
    # given the first background scan, opening the scan connection
    before = _sqlite_connection_threads()
    database, scan = await _first_scan_opening(tmp_path / "scanned.db")

    # when the database closes meanwhile (a shutdown while a reconciliation pass starts)
    await database.close()
    with contextlib.suppress(RuntimeError):
        await scan

    # then every connection it opened is closed, the scan's too, and a scan after is refused
    await _no_connection_thread_left(besides=before)
    with pytest.raises(RuntimeError, match="not open"):
        await database.scans().fetch("SELECT 1")


async def test_a_scan_cancelled_while_its_connection_opens_leaves_it_closed(
    tmp_path: Path,
) -> None:
    # given the first scan, cancelled while it opens the scan connection (its task stopped at
    # shutdown)
    before = _sqlite_connection_threads()
    database, scan = await _first_scan_opening(tmp_path / "scanned.db")
    scan.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await scan

    # then the database closes every connection it has, and no thread is left behind
    await database.close()
    await _no_connection_thread_left(besides=before)


def new_user_unless_known(user_id: str, email: str) -> Statement:
    """Inserts the user unless the email is taken; returns the row's id only when inserted."""
    return Statement(
        "INSERT INTO users (id, email, name, created_at) VALUES ($1, $2, NULL, $3) "
        "ON CONFLICT (email) DO NOTHING RETURNING id",
        (user_id, email, NOW),
        keyed_by=0,
    )


def rename_user(user_id: str, name: str) -> Statement:
    return Statement(
        "UPDATE users SET name = $1 WHERE id = $2 RETURNING id",
        (name, user_id),
        expect_rows=1,
        keyed_by=1,
    )


def test_a_batch_plan_sends_keyed_statements_of_one_sql_together() -> None:
    # given two units renaming users, the first three in a row
    first = [rename_user("usr_a", "A"), rename_user("usr_b", "B"), rename_user("usr_c", "C")]
    second = [rename_user("usr_d", "D"), new_user("usr_e")]

    # when
    steps = plan_batch([first, second])

    # then the four renames are one keyed step, apart from the insert
    order = [[(unit, position) for unit, position, _ in step.members] for step in steps]
    assert order == [[(0, 0), (0, 1), (0, 2), (1, 0)], [(1, 1)]]
    assert [(step.keyed, step.many) for step in steps] == [(True, False), (False, False)]


async def test_keyed_statements_sent_together_each_get_their_own_rows(database: Database) -> None:
    # given a user whose email a later insert repeats
    await database.write([(new_user("usr_a"),)])

    # when three units insert unless the email is known, and one unit inserts two in a row
    outcomes = await database.write(
        [
            (new_user_unless_known("usr_b", "b@example.com"),),
            (new_user_unless_known("usr_x", "usr_a@example.com"),),
            (
                new_user_unless_known("usr_c", "c@example.com"),
                new_user_unless_known("usr_d", "d@example.com"),
            ),
        ]
    )

    # then each statement got the rows of its own key: none for the one that inserted nothing
    assert outcomes == [[[{"id": "usr_b"}]], [[]], [[{"id": "usr_c"}], [{"id": "usr_d"}]]]
    assert await user_ids(database) == ["usr_a", "usr_b", "usr_c", "usr_d"]


async def test_a_keyed_statement_matching_no_row_fails_only_its_unit(database: Database) -> None:
    # given two users
    await database.write([(new_user("usr_a"),), (new_user("usr_b"),)])

    # when three units rename, the middle one a user that does not exist
    outcomes = await database.write(
        [
            (rename_user("usr_a", "Ann"),),
            (new_user("usr_c"), rename_user("usr_missing", "Nobody")),
            (rename_user("usr_b", "Bob"),),
        ]
    )

    # then only the middle unit is refused, and rolled back whole
    assert outcomes[0] == [[{"id": "usr_a"}]] and outcomes[2] == [[{"id": "usr_b"}]]
    assert isinstance(outcomes[1], StaleWrite)
    names = await database.fetch("SELECT id, name FROM users ORDER BY id")
    assert [(r["id"], r["name"]) for r in names] == [("usr_a", "Ann"), ("usr_b", "Bob")]


async def test_keyed_statements_naming_one_key_twice_still_get_their_own_rows(
    database: Database,
) -> None:
    await database.write([(new_user("usr_a"),)])

    outcomes = await database.write(
        [(rename_user("usr_a", "First"),), (rename_user("usr_a", "Second"),)]
    )

    assert outcomes == [[[{"id": "usr_a"}]], [[{"id": "usr_a"}]]]
    [row] = await database.fetch("SELECT name FROM users WHERE id = 'usr_a'")
    assert row["name"] == "Second"


def test_a_stored_payment_reads_back_equal_to_the_one_written_in_every_field() -> None:
    # given a payment with every field set, as storage holds it
    written = Payment(
        id="pay_1",
        company_id="cmp_1",
        mode="live",
        reference="PAY-0123456789",
        status="PARTIAL_REFUND",
        amount_minor=2500,
        currency="EUR",
        created_at="2026-11-23T10:00:00.000Z",
        updated_at="2026-11-23T11:00:00.000Z",
        version=4,
        description="Blue mug",
        customer_email="buyer@example.com",
        customer_phone="+2348031234567",
        customer_id="cus_1",
        expires_at="2026-11-24T10:00:00.000Z",
        allow_multiple=True,
        success_url="https://shop.test/ok",
        cancel_url="https://shop.test/no",
        webhook_url="https://shop.test/hook",
        metadata={"orderId": "A-17", "n": 3},
        link_payment_id="pay_0",
        amount_refunded_minor=500,
        card_brand="visa",
        card_last4="4242",
        paid_at="2026-11-23T10:30:00.000Z",
        declines=("2026-11-23T10:20:00.000Z",),
    )
    row = {
        **asdict(written),
        "metadata": orjson.dumps(written.metadata).decode(),
        "declines": orjson.dumps(list(written.declines)).decode(),
        "allow_multiple": 1,
    }

    # when it is read back, then it is the same payment, field for field
    read = payment_from_row(row)
    assert read == written
    assert vars(read).keys() == {f.name for f in fields(Payment)}


def _event(company_id: str, event_type: str, created_at: str = "2026-11-23T10:00:00.000Z") -> Row:
    return event_row(
        company_id=company_id, mode="test", event_type=event_type, created_at=created_at, obj={}
    )


def _conditional_event(row: Row, when_user: str) -> Statement:
    """An event inserted only if the user exists: it may insert nothing."""
    marks = ", ".join(f"${i}" for i in range(1, len(row) + 1))
    return Statement(
        f"INSERT INTO events ({', '.join(row)}) SELECT {marks} "
        f"WHERE EXISTS (SELECT 1 FROM users WHERE id = ${len(row) + 1})",
        (*row.values(), when_user),
    )


async def _numbers(database: Database, company_id: str) -> list[tuple[str, int]]:
    rows = await database.fetch(
        "SELECT type, sequence FROM events WHERE company_id = $1 ORDER BY sequence", company_id
    )
    return [(row["type"], row["sequence"]) for row in rows]


async def test_events_are_numbered_in_batch_order_as_they_are_inserted_per_company(
    database: Database,
) -> None:
    # given a batch of units writing events of two companies, one unit with two
    units = [
        (event_insert(_event("co_a", "a.first")),),
        (event_insert(_event("co_b", "b.first")),),
        (event_insert(_event("co_a", "a.second")), event_insert(_event("co_a", "a.third"))),
    ]

    # when it is written twice
    await database.write(units)
    await database.write([(event_insert(_event("co_a", "a.fourth")),)])

    # then each company counts from 1, in the order of the batch, then of the commits
    assert await _numbers(database, "co_a") == [
        ("a.first", 1),
        ("a.second", 2),
        ("a.third", 3),
        ("a.fourth", 4),
    ]
    assert await _numbers(database, "co_b") == [("b.first", 1)]


async def _take_shard(database: Database, shard: int, epoch: int) -> None:
    await database.write(
        [[Statement(
            "INSERT INTO shard_epochs (shard, epoch, node, taken_at) VALUES ($1, $2, 'n', 't') "
            "ON CONFLICT (shard) DO UPDATE SET epoch = excluded.epoch",
            (shard, epoch),
        )]]
    )  # fmt: skip


async def test_a_batch_under_a_former_epoch_commits_nothing_and_numbers_nothing(
    database: Database,
) -> None:
    # given shards 1 and 2 taken at epochs 5 and 7, and a batch of events written for both
    await _take_shard(database, 1, 5)
    await _take_shard(database, 2, 7)
    units = [(event_insert(_event("co_a", "a.first")),), (event_insert(_event("co_b", "b")),)]

    # when it is written under epoch 4 of shard 1, then under the current epochs
    with pytest.raises(Fenced) as fenced:
        await database.write(units, {1: 4, 2: 7})
    await database.write(units, {1: 5, 2: 7})

    # then the first write committed nothing, not even a number, and only shard 1 was lost
    assert fenced.value.lost == frozenset({1})
    assert await _numbers(database, "co_a") == [("a.first", 1)]
    assert await _numbers(database, "co_b") == [("b", 1)]


async def test_a_unit_rolled_back_alone_gives_its_event_numbers_back(database: Database) -> None:
    # given a batch whose middle unit inserts an event, then fails its guard
    units = [
        (event_insert(_event("co_a", "kept.first")),),
        (event_insert(_event("co_a", "rolled.back")), rename_missing_user()),
        (event_insert(_event("co_a", "kept.second")),),
    ]

    # when it is written
    outcomes = await database.write(units)

    # then the others' events are numbered without a gap
    assert isinstance(outcomes[1], StaleWrite)
    assert await _numbers(database, "co_a") == [("kept.first", 1), ("kept.second", 2)]


async def test_a_conditional_event_is_numbered_only_when_inserted_and_after_the_others(
    database: Database,
) -> None:
    # given a batch with an event inserted only if its user exists (one does, one does not)
    await database.write([(new_user("usr_here"),)])
    units = [
        (_conditional_event(_event("co_a", "if.here", "2026-11-23T09:00:00.000Z"), "usr_here"),),
        (event_insert(_event("co_a", "plain")),),
        (_conditional_event(_event("co_a", "if.missing"), "usr_missing"),),
    ]

    # when it is written
    await database.write(units)

    # then the events inserted are numbered once each, without a gap
    assert await _numbers(database, "co_a") == [("plain", 1), ("if.here", 2)]


def _stored_response(company_id: str, key: str, created_at: str, expires_at: str) -> Statement:
    [statement] = store_response(
        {
            "company_id": company_id,
            "idem_key": key,
            "fingerprint": f"fp-{company_id}",
            "status_code": 201,
            "headers": "{}",
            "body": "{}",
            "created_at": created_at,
            "expires_at": expires_at,
        }
    )
    return statement


async def test_a_live_stored_key_refuses_its_unit_alone_and_one_key_of_two_companies_stores_both(
    database: Database,
) -> None:
    # given a key company A stored an hour ago, still live
    await database.write([(_stored_response("co_a", "k1", "T10", "T99"),)])

    # when one batch stores k1 again for A, k1 for company B, and k2 for A
    outcomes = await database.write(
        [
            (new_user("usr_a"), _stored_response("co_a", "k1", "T11", "T99")),
            (_stored_response("co_b", "k1", "T11", "T99"),),
            (_stored_response("co_a", "k2", "T11", "T99"),),
        ]
    )

    # then only A's second k1 is refused, and nothing of its unit lands
    assert isinstance(outcomes[0], KeyAlreadyStored)
    assert outcomes[1] == [[{"idem_key": "k1"}]] and outcomes[2] == [[{"idem_key": "k2"}]]
    stored = await database.fetch(
        "SELECT company_id, idem_key, created_at FROM idempotency_keys "
        "ORDER BY company_id, idem_key"
    )
    assert [tuple(row.values()) for row in stored] == [
        ("co_a", "k1", "T10"),
        ("co_a", "k2", "T11"),
        ("co_b", "k1", "T11"),
    ]
    assert await user_ids(database) == []


async def test_an_expired_stored_key_is_replaced(database: Database) -> None:
    # given a key whose stored response expired at T20
    await database.write([(_stored_response("co_a", "k1", "T10", "T20"),)])

    # when it is stored again at T21
    [outcome] = await database.write([(_stored_response("co_a", "k1", "T21", "T99"),)])

    # then the new response replaced it
    assert outcome == [[{"idem_key": "k1"}]]
    row = await database.fetchrow("SELECT created_at, expires_at FROM idempotency_keys")
    assert row is not None and (row["created_at"], row["expires_at"]) == ("T21", "T99")


def _created(payment_id: str, currency: str, amount: int) -> Payment:
    return Payment(
        id=payment_id,
        company_id="co_a",
        mode="test",
        reference=f"PAY-{payment_id}",
        status="PENDING",
        amount_minor=amount,
        currency=currency,
        created_at="2026-11-23T10:00:00.000Z",
        updated_at="2026-11-23T10:00:00.000Z",
    )


def test_a_batch_sums_the_rollup_upserts_of_one_row_into_one() -> None:
    # given three units creating payments: two in USD, one in EUR, all on one day
    units = [
        rollup_statements(None, _created("pay_1", "USD", 100)),
        rollup_statements(None, _created("pay_2", "EUR", 700)),
        rollup_statements(None, _created("pay_3", "USD", 250)),
    ]

    # when the batch is planned
    [step] = plan_batch(units)

    # then one executemany carries one upsert per row, its counters summed
    sums = {params[2]: params[4:6] for params in step.params()}
    assert len(step.members) == 3
    assert sums == {"USD": (2, 350), "EUR": (1, 700)}


async def test_summed_rollups_store_what_the_upserts_one_by_one_would(database: Database) -> None:
    # given a company's row already counting one USD payment
    await database.write([(new_company("co_a"),)])
    await database.write([rollup_statements(None, _created("pay_0", "USD", 50))])

    # when a batch of three creates is written
    outcomes = await database.write(
        [
            rollup_statements(None, _created("pay_1", "USD", 100)),
            rollup_statements(None, _created("pay_2", "EUR", 700)),
            rollup_statements(None, _created("pay_3", "USD", 250)),
        ]
    )

    # then each row holds every payment once
    assert all(isinstance(outcome, list) for outcome in outcomes)
    rows = await database.fetch(
        "SELECT currency, created_count, created_minor FROM analytics_days ORDER BY currency"
    )
    assert [tuple(row.values()) for row in rows] == [("EUR", 1, 700), ("USD", 3, 400)]


def test_a_batch_sends_a_repeatable_statement_once_per_parameters() -> None:
    # given four deliveries' successes: three to one endpoint, one to another
    units = [
        [endpoint_failing(endpoint, False, "2026-11-23T10:00:00.000Z")]
        for endpoint in ("we_1", "we_1", "we_2", "we_1")
    ]

    # when the batch is planned
    [step] = plan_batch(units)

    # then each endpoint's clock is cleared once, in the order first asked
    assert len(step.members) == 4
    assert step.params() == [("we_1",), ("we_2",)]


def test_statements_that_are_neither_repeatable_nor_summed_are_all_sent() -> None:
    units = [[new_user("usr_a")], [new_user("usr_a")]]

    [step] = plan_batch(units)

    assert len(step.params()) == 2
