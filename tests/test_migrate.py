"""`run.py migrate` (mps.migrate) and the rule that lets two versions share a database during a
rolling upgrade: a migration only adds to what the previous version uses (mps.persistence.
migrations).

The rule is checked twice, both on the real migration list: each migration is applied in turn
to a Postgres schema by the service's own runner, and what it changed in the catalog must leave
every table and column the previous step had, of the same type, and add only columns a
previous version's INSERT may leave out; then the previous release itself, taken from the
project's history (the commit before the newest migration was added), serves on a database while
`run.py migrate` applies the newest migration under it, keeps serving, and the current version
started on the same database serves what it wrote.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest

from mps.migrate import migrate
from mps.persistence.database import open_database
from mps.persistence.migrations import load_migrations
from tests.cluster import sign_up_on
from tests.conftest import PG_URL
from tests.helpers import free_port
from tests.server import RunningServer, release_before, run_py

API = "/api/v1"
AMOUNT = {"amountMinor": "2500", "currency": "USD"}
SECRETS = {
    "MPS_SESSION_SECRET": "migrate-test-session-secret-0123456789abcdef",
    "MPS_ENCRYPTION_KEY": "migrate-test-encryption-key-0123456789abcdef",
}


def _run_migrate(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_py("migrate", *args, env={"MPS_DATABASE_URL": database_url, **SECRETS})


# --- the command ------------------------------------------------------------------------------


@pytest.mark.both_backends
def test_migrate_check_exits_1_listing_what_is_pending_and_migrate_applies_it_once(
    empty_database_url: str,
) -> None:
    newest = load_migrations()[-1]
    newest_name = f"{newest.version:04d}_{newest.name}"

    # given a database nobody has migrated: everything is pending
    checked = _run_migrate(empty_database_url, "--check")
    assert checked.returncode == 1, checked.stderr
    assert "pending" in checked.stdout and newest_name in checked.stdout

    # when it is migrated
    applied = _run_migrate(empty_database_url)

    # then everything is applied, and neither a check nor a second run finds anything to do
    assert applied.returncode == 0, applied.stderr
    assert newest_name in applied.stdout
    again = _run_migrate(empty_database_url, "--check")
    assert again.returncode == 0, again.stderr
    assert f"up to date: {len(load_migrations())} migrations applied" in again.stdout
    assert _run_migrate(empty_database_url).returncode == 0


def test_migrate_exits_3_when_the_database_cannot_be_reached_and_2_on_bad_settings() -> None:
    unreachable = _run_migrate(f"postgresql://postgres@127.0.0.1:{free_port()}/nothing")
    assert unreachable.returncode == 3
    assert "run.py migrate:" in unreachable.stderr

    bad = _run_migrate("mysql://nowhere/x")
    assert bad.returncode == 2, bad.stderr


# --- each migration only adds -----------------------------------------------------------------

Columns = dict[tuple[str, str], tuple[str, bool, bool]]


async def _columns(url: str) -> Columns:
    """(table, column) -> (type, nullable, has a default), in the URL's schema."""
    schema = url.split("schema=", 1)[1]
    conn = await asyncpg.connect(PG_URL)
    try:
        rows = await conn.fetch(
            "SELECT table_name, column_name, data_type, is_nullable, column_default "
            "FROM information_schema.columns WHERE table_schema = $1",
            schema,
        )
    finally:
        await conn.close()
    return {
        (r["table_name"], r["column_name"]): (
            r["data_type"],
            r["is_nullable"] == "YES",
            r["column_default"] is not None,
        )
        for r in rows
    }


def _broken_by(before: Columns, after: Columns) -> list[str]:
    """What a node of the version before can no longer do on the schema after."""
    broken = []
    tables_before = {table for table, _ in before}
    for (table, column), (kind, nullable, _default) in before.items():
        now = after.get((table, column))
        if now is None:
            broken.append(f"{table}.{column} is gone")
        elif now[0] != kind:
            broken.append(f"{table}.{column} changed type from {kind} to {now[0]}")
        elif nullable and not now[1]:
            broken.append(f"{table}.{column} became NOT NULL")
    for (table, column), (_kind, nullable, default) in after.items():
        if (
            table in tables_before
            and (table, column) not in before
            and not nullable
            and not default
        ):
            broken.append(f"{table}.{column} is new, NOT NULL and has no default")
    return broken


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_every_migration_leaves_what_the_previous_version_reads_and_writes(
    empty_database_url: str,
) -> None:
    migrations = load_migrations()
    # given the schema after the first migration, made by the service's own runner
    await migrate(empty_database_url, write=True, migrations=migrations[:1])
    before = await _columns(empty_database_url)
    assert before, "the first migration made no table"
    broken: dict[str, list[str]] = {}
    for upto in range(2, len(migrations) + 1):
        # when the next migration is applied
        _done, applied = await migrate(empty_database_url, write=True, migrations=migrations[:upto])
        assert [m.version for m in applied] == [migrations[upto - 1].version]
        after = await _columns(empty_database_url)
        # then a node of the version before it finds every column it used, as it used it
        problems = _broken_by(before, after)
        if problems:
            broken[applied[0].name] = problems
        before = after
    assert broken == {}


# --- the previous release beside the newest migration -----------------------------------------


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        yield session


@pytest.fixture
def previous_release(tmp_path: Path) -> Path:
    """The project as it was just before the newest migration was added."""
    newest = load_migrations()[-1]
    path = f"mps/persistence/sql/{newest.version:04d}_{newest.name}.sql"
    return release_before(tmp_path / "previous", path, added=True)


async def _create(http: aiohttp.ClientSession, base: str, headers: dict[str, str]) -> str:
    async with http.post(f"{base}{API}/merchant/payments", json=AMOUNT, headers=headers) as r:
        assert r.status == 201, await r.text()
        payment_id: str = (await r.json())["id"]
        return payment_id


async def _payment_ids(http: aiohttp.ClientSession, base: str, headers: dict[str, str]) -> Any:
    async with http.get(f"{base}{API}/merchant/payments", headers=headers) as r:
        assert r.status == 200, await r.text()
        return {payment["id"] for payment in (await r.json())["data"]}


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_the_previous_release_keeps_serving_after_the_newest_migration_and_the_new_one_too(
    previous_release: Path, tmp_path: Path, empty_database_url: str, http: aiohttp.ClientSession
) -> None:
    env = {"MPS_DATABASE_URL": empty_database_url, **SECRETS, "MPS_RATE_LIMIT_SCALE": "0"}
    newest = load_migrations()[-1]
    for folder in ("old", "new"):
        (tmp_path / folder).mkdir()
    old_node = RunningServer(
        tmp_path / "old", env=env, ready_within=30.0, run_py=previous_release / "run.py"
    )
    with old_node as old:
        # given the previous release serving, on the schema it migrated itself
        ann = await sign_up_on(http, old.base_url, "ann@example.com")
        first = await _create(http, old.base_url, ann.headers())
        checked = _run_migrate(empty_database_url, "--check")
        assert checked.returncode == 1, checked.stdout + checked.stderr
        assert f"{newest.version:04d}_{newest.name}" in checked.stdout

        # when the newest migration is applied under it, as a deploy pipeline does first
        applied = _run_migrate(empty_database_url)
        assert applied.returncode == 0, applied.stderr

        # then the previous release goes on serving: writes, reads, sign-ups and sign-outs
        second = await _create(http, old.base_url, ann.headers())
        assert await _payment_ids(http, old.base_url, ann.headers()) == {first, second}
        bo = await sign_up_on(http, old.base_url, "bo@example.com")
        bos = await _create(http, old.base_url, bo.headers())
        async with http.post(f"{old.base_url}{API}/auth/logout", headers=ann.headers()) as r:
            assert r.status == 200, await r.text()
        assert old.stop(grace=30) == 0

    # and the new release, started on the same database, serves what the previous one wrote
    with RunningServer(tmp_path / "new", env=env) as new:
        assert await _payment_ids(http, new.base_url, bo.headers()) == {bos}
        assert await _create(http, new.base_url, bo.headers())
        async with http.get(f"{new.base_url}{API}/merchant/payments", headers=ann.headers()) as r:
            assert r.status == 401  # signed out under the previous release


def test_a_check_of_an_sqlite_file_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    database = tmp_path / "absent.db"

    checked = _run_migrate(f"sqlite:///{database}", "--check")

    assert checked.returncode == 1, checked.stderr
    assert "pending" in checked.stdout
    assert not database.exists()


async def test_a_backend_told_an_empty_list_of_migrations_applies_none(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'empty.db'}")
    db.migrations = []

    await db.open()
    try:
        applied = await db.applied_migrations()
    finally:
        await db.close()

    assert applied == set()
