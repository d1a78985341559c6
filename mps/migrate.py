"""`run.py migrate`: apply the database's pending migrations and exit, or say whether any are
pending, for a deploy pipeline that migrates before it rolls new nodes out.

    python run.py migrate            # apply what is pending, then exit
    python run.py migrate --check    # only look; writes nothing

It reads the service's own configuration (the same environment and options as `run.py`) and
applies migrations exactly as a starting node does (mps.persistence: in order, each once, under
the migration lock, so it may run while nodes start or serve). Nodes still migrate on start, so
running this is a choice: it moves the schema change out of a node's start-up and lets the
pipeline stop on a failed migration before any node of the new version runs.

Exit codes: 0 when nothing is pending (after applying it, without `--check`), 1 when `--check`
finds migrations pending, 2 for bad configuration, 3 when the database cannot be reached or a
migration fails (nothing of the failed migration is kept: each runs in a transaction).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from mps.config import ConfigError, load_settings
from mps.persistence.database import open_database
from mps.persistence.migrations import Migration, load_migrations, pending
from mps.persistence.sqlite import SqliteDatabase

__all__ = ["main", "migrate"]

PENDING = 1
BAD_CONFIGURATION = 2
FAILED = 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="run.py migrate",
        description="Apply the database's pending migrations and exit. Takes run.py's options "
        "(--data-dir, --database-url, --mode) and environment.",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="list the pending migrations and exit 1 if there are any; write nothing",
    )
    return parser


async def migrate(
    database_url: str, *, write: bool, migrations: Sequence[Migration] | None = None
) -> tuple[list[Migration], list[Migration]]:
    """The migrations applied before this call, and those pending then: applied now unless
    `write` is off, and then only those the database holds afterwards (a node starting at the
    same time may apply them itself, under the same lock). `migrations` replaces the full list
    (a test of an upgrade); an empty one is an empty list, not every migration."""
    available = load_migrations() if migrations is None else list(migrations)
    db = open_database(database_url)
    if not write and isinstance(db, SqliteDatabase) and not _exists(db.path):
        # Opening would create the file, and a check writes nothing: nothing is applied yet.
        return [], pending(set(), available)
    db.migrate_on_open = False
    db.migrations = available
    await db.open()
    try:
        applied = await db.applied_migrations()
        waiting = pending(applied, available)
        if write and waiting:
            await db.close()
            # Opened again, migrating: the backend's own runner applies them, under its lock.
            db.migrate_on_open = True
            await db.open()
            # Read once the runner is done, not from before its lock was taken.
            now = await db.applied_migrations()
            waiting = [m for m in waiting if m.version in now]
    finally:
        await db.close()
    done = [m for m in available if m.version in applied]
    return done, waiting


def _exists(path: str) -> bool:
    return path == ":memory:" or Path(path).exists()


def _name(migration: Migration) -> str:
    return f"{migration.version:04d}_{migration.name}"


def main(argv: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    args, service_args = _parser().parse_known_args(argv)
    env = env if env is not None else os.environ
    try:
        settings = load_settings(service_args, env)
        open_database(settings.database_url)  # a URL no backend takes is configuration too
    except (ConfigError, ValueError) as exc:
        print(f"run.py migrate: {exc}", file=sys.stderr)
        return BAD_CONFIGURATION
    try:
        done, waiting = asyncio.run(migrate(settings.database_url, write=not args.check))
    except Exception as exc:
        # A database that cannot be reached, or a migration that failed (rolled back).
        print(f"run.py migrate: {type(exc).__name__}: {exc}", file=sys.stderr)
        return FAILED
    latest = f"{_name(done[-1])}" if done else "none"
    if not waiting:
        print(f"The database is up to date: {len(done)} migrations applied (latest {latest}).")
        return 0
    names = ", ".join(_name(m) for m in waiting)
    if args.check:
        print(f"{len(waiting)} migration(s) pending after {latest}: {names}")
        return PENDING
    print(f"Applied {len(waiting)} migration(s) after {latest}: {names}")
    return 0
