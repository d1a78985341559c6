"""A company actor's activation: the one read of mps.persistence.company_snapshot against the
dozen sequential reads it replaced, whose books were a sum over every posting.

    .venv/bin/python bench/activation.py --backend both --payments 20000 --runs 50
    .venv/bin/python bench/activation.py --backend sqlite --payments 1000     # a quick check

One company is seeded straight through the storage layer (its row, then --payments paid
payments settled at once: a `payment` and a `settlement` movement each, four postings, written
by the ledger's own `movement_statements`, so the balance snapshots are what the service keeps).
Then, --runs times each, alternating:

* before: the reads the activation made until the snapshot: the company row, members, the sum of
  the merchant's postings and of the open settlements, bank accounts, open payouts, invoice
  numbers, audit head, roles, policies and open approvals, one after another;
* after: `load_company`, one statement.

Printed: the median and p90 of each in milliseconds, per backend. SQLite is a file in a fresh
temporary directory; Postgres a schema of its own (`?schema=`, dropped after the run) on
--pg-url. Speed goals live here, not in the tests; on a busy machine the figures are
indicative only.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

from mps.domain.clock import iso
from mps.domain.company import Company
from mps.domain.ledger import Books
from mps.persistence import approval_store, audit_store, invoice_store, payout_store, team_store
from mps.persistence.company_snapshot import load_company
from mps.persistence.company_store import company_insert
from mps.persistence.database import Database, open_database
from mps.persistence.ledger_store import movement_statements
from mps.persistence.queries import companies

COMPANY = "co_bench_activation"
BATCH = 500  # payments per write


async def _seed(db: Database, payments: int) -> None:
    now = iso(datetime.now(UTC))
    await db.write([(company_insert(Company(COMPANY, "Bench Ltd", 1, now)),)])
    books = Books()
    for start in range(0, payments, BATCH):
        units = []
        for i in range(start, min(start + BATCH, payments)):
            movements = books.payment("test", "USD", f"pay_{i}", 1000 + i % 97, now, 0)
            units.append(tuple(movement_statements(COMPANY, movements)))
        await db.write(units)


async def _before(db: Database) -> None:
    """The sequential reads of the activation before the snapshot (its books summed)."""
    await companies.company(db, COMPANY)
    await companies.member_roles(db, COMPANY)
    await db.fetch(
        "SELECT mode, currency, account, SUM(amount_minor) AS total FROM ledger_postings "
        "WHERE company_id = $1 AND account IN ($2, $3, $4) GROUP BY mode, currency, account",
        COMPANY,
        "available",
        "pending",
        "reserved",
    )
    await db.fetch(
        "SELECT mode, currency, SUM(amount_minor) AS total FROM settlements "
        "WHERE company_id = $1 AND settled_at IS NULL GROUP BY mode, currency",
        COMPANY,
    )
    await payout_store.load_bank_accounts(db, COMPANY)
    await payout_store.load_open_payouts(db, COMPANY)
    await invoice_store.load_invoice_numbers(db, COMPANY)
    await audit_store.load_head(db, COMPANY)
    await team_store.load_roles(db, COMPANY)
    await approval_store.load_policies(db, COMPANY)
    await approval_store.load_open(db, COMPANY)


async def _after(db: Database) -> None:
    assert await load_company(db, COMPANY) is not None


async def _timed(work: Callable[[Database], Awaitable[None]], db: Database) -> float:
    started = time.perf_counter()
    await work(db)
    return (time.perf_counter() - started) * 1000


def _summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"median {statistics.median(ordered):7.2f} ms   p90 {p90:7.2f} ms"


async def _run(backend: str, url: str, payments: int, runs: int) -> None:
    db = open_database(url)
    await db.open()
    try:
        started = time.perf_counter()
        await _seed(db, payments)
        print(f"{backend}: {payments} payments seeded in {time.perf_counter() - started:.1f} s")
        results: dict[str, list[float]] = {"before": [], "after": []}
        for work in (_before, _after):
            await work(db)  # warm: statements prepared, pages cached
        for _ in range(runs):
            results["before"].append(await _timed(_before, db))
            results["after"].append(await _timed(_after, db))
        for name, samples in results.items():
            print(f"  {name:6} {_summary(samples)}")
    finally:
        await db.close()


async def _postgres(pg_url: str, payments: int, runs: int) -> None:
    schema = f"bench_activation_{secrets.token_hex(4)}"
    try:
        await _run("postgres", f"{pg_url}?schema={schema}", payments, runs)
    finally:
        admin: Any = await asyncpg.connect(pg_url)
        try:
            await admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await admin.close()


async def main(args: argparse.Namespace) -> None:
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite:///{Path(folder) / 'bench.db'}"
            await _run("sqlite", url, args.payments, args.runs)
    if args.backend in ("postgres", "both"):
        await _postgres(args.pg_url, args.payments, args.runs)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--payments", type=int, default=20_000, help="paid payments to seed")
    parser.add_argument("--runs", type=int, default=50, help="timed activations of each kind")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/mps_test")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
