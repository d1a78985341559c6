"""`run.py reseal`: every sealed value still under the previous encryption key, sealed afresh
under the current one, so that the previous key can be removed (SECURITY.md, "Rotating
secrets").

    python run.py reseal            # re-seal, then say whether the previous key can go
    python run.py reseal --check    # only count; writes nothing

It reads the service's own configuration (the same environment and options as `run.py`), walks
each sealed column (`SEALED_COLUMNS`) in pages of its primary key and replaces a value only
where the row still holds what was read, so it can run beside live nodes: a value the service
rewrote meanwhile is sealed with the current key already. Values opened here stay in memory.
The exit code is 0 when nothing is left under the previous key, 1 when something is (a value
no configured key opens, or `--check` found work), 2 for bad configuration.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag

from mps.auth.keyring import Keyring
from mps.config import ConfigError, load_settings
from mps.persistence.database import Database, open_database
from mps.persistence.queries.sealed import (
    SEALED_COLUMNS,
    SealedColumn,
    replace_each,
    replace_sealed,
    sealed_page,
)
from mps.persistence.statements import Statement

__all__ = ["Tally", "main", "reseal"]

PAGE = 500


@dataclass
class Tally:
    """What one column held: values under the current key, values re-sealed (or, checking,
    that would be), values the service rewrote between the read and the write, and values
    no configured key opens."""

    current: int = 0
    resealed: int = 0
    rewritten: int = 0
    unreadable: int = 0


async def _reseal_column(
    db: Database, keyring: Keyring, sealed: SealedColumn, *, write: bool, page: int
) -> Tally:
    tally = Tally()
    after: tuple[str, ...] | None = None
    while rows := await sealed_page(db, sealed, after, page):
        after = tuple(rows[-1][column] for column in sealed.key)
        writes: list[Statement] = []
        for row in rows:
            try:
                fresh = keyring.reseal(row["sealed"], sealed.purpose)
            except (InvalidTag, ValueError):
                tally.unreadable += 1
                continue
            if fresh is None:
                tally.current += 1
                continue
            key = tuple(row[column] for column in sealed.key)
            writes.append(replace_sealed(sealed, key, row["sealed"], fresh))
        if not write:
            tally.resealed += len(writes)
            continue
        replaced = await replace_each(db, writes)
        tally.resealed += replaced.count(True)
        tally.rewritten += replaced.count(False)
    return tally


async def reseal(
    db: Database, keyring: Keyring, *, write: bool = True, page: int = PAGE
) -> dict[str, Tally]:
    """Each sealed column's tally, in `SEALED_COLUMNS` order."""
    return {
        sealed.name: await _reseal_column(db, keyring, sealed, write=write, page=page)
        for sealed in SEALED_COLUMNS
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="run.py reseal",
        description="Seal every value still under the previous encryption key with the current "
        "one. Takes run.py's options (--data-dir, --database-url, --mode) and environment.",
    )
    parser.add_argument("--check", action="store_true", help="count only; write nothing")
    return parser


async def _run(database_url: str, keyring: Keyring, *, write: bool) -> int:
    db = open_database(database_url)
    await db.open()
    try:
        tallies = await reseal(db, keyring, write=write)
    finally:
        await db.close()
    verb = "re-sealed" if write else "to re-seal"
    for name, tally in tallies.items():
        print(
            f"{name}: {tally.resealed} {verb}, {tally.current} under the current key"
            + (f", {tally.rewritten} rewritten by the service meanwhile" if tally.rewritten else "")
            + (f", {tally.unreadable} that no configured key opens" if tally.unreadable else "")
        )
    unreadable = sum(t.unreadable for t in tallies.values())
    waiting = 0 if write else sum(t.resealed for t in tallies.values())
    if unreadable:
        print(
            f"{unreadable} value(s) open under neither key: keep MPS_ENCRYPTION_KEY_PREVIOUS "
            "until you know why (a third, older key?)."
        )
        return 1
    if waiting:
        print(f"{waiting} value(s) are under the previous key: run without --check.")
        return 1
    if keyring.encryption_key_previous:
        print("Nothing is sealed under the previous key: MPS_ENCRYPTION_KEY_PREVIOUS can go.")
    else:
        print("Every value opens under the current key.")
    return 0


def main(argv: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    args, service_args = _parser().parse_known_args(argv)
    env = env if env is not None else os.environ
    try:
        settings = load_settings(service_args, env)
    except ConfigError as exc:
        print(f"run.py reseal: {exc}", file=sys.stderr)
        return 2
    keyring = Keyring(
        settings.session_secret,
        settings.encryption_key,
        encryption_key_previous=settings.encryption_key_previous,
    )
    return asyncio.run(_run(settings.database_url, keyring, write=not args.check))
