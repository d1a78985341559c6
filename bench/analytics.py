"""Analytics at scale: the three analytics routes over a merchant with 1,000,000 payments.

    .venv/bin/python bench/analytics.py --backend both --payments 1000000 --requests 200
    .venv/bin/python bench/analytics.py --backend sqlite --payments 20000     # a quick check

The target (printed, not enforced): p99 at most 100 ms on Postgres and 300 ms on SQLite per
route, for a 90-day window. Options: --backend sqlite|postgres|both, --payments 1000000,
--requests 200 (timed, after --warmup 20), --days 90 (the window), --soak 0, --seed 1 (the
distribution's random seed), --no-raw (skip the naive-SQL comparison), --pg-admin-url and
--pg-database mps_bench_analytics (dropped and created again each run), --broker-url (RabbitMQ
for Postgres, as bench/load.py runs it), --keep (the data dir and the database), --out.
Every file of a run (the server's logs) goes to --out, by default
var/bench/<time>-analytics/.

One run per backend:

1. Storage: SQLite in a fresh data dir, or Postgres in a fresh database (--pg-database,
   dropped and created again) with RabbitMQ under a cluster name of its own. The service
   (`run.py`, development mode for the dev mailbox, rate limits and access log off, started by
   bench/load.py's machinery) starts, one company signs up through the dev mailbox
   (bench/load.py's `_sign_up`), and the service stops: the company, its owner and session are
   what the service made.
2. Seed: --payments rows of `payments` for that company in test mode, written with the
   backend's bulk path (sqlite3 `executemany` in transactions of SEED_BATCH rows; asyncpg
   `copy_records_to_table`), in creation order, every index of the schema in place.
   created_at is uniform over the last 365 days; currencies USD/EUR/GBP 70/20/10; status PAID
   70 %, EXPIRED 12 %, PENDING 5 %, CANCELLED 5 %, REFUNDED 4 %, PARTIAL_REFUND 3 %,
   REVERSED 1 % (each with the timestamps, version, card and refunded amount its transitions
   leave); 2 % are paid children of 30 multi-use links; 4 % had a declined checkout first
   (a `payment_declines` row and the payment's `declines`). Ids are laid out as
   mps.domain.ids.new_id would have made them at creation time, references come from
   `payment_reference`, timestamps are the service's `iso` form.
3. Rollups: `analytics_days` is emptied (only this company exists) and filled by the backfill
   statement of migration 0010 itself, read from the migration file, then `failed_*` from
   `payment_declines` by day of declined_at. Then the reconciliation the service runs
   (`mismatches(db, None)`) must report no analytics mismatch: the seed's rollups are what the
   service's own writes would have produced. (Its ledger checks do report mismatches: the seed
   writes no ledger postings, refunds or settlements; they are counted and printed.) Postgres
   then gets the VACUUM ANALYZE that autovacuum would run after such an insert. Each step is
   timed.
4. Raw SQL (unless --no-raw): for the same window, the one-query aggregate over `payments` (and
   `payment_declines`) each route would need without rollups, and the route's own rollup read,
   timed directly on the database (median of RAW_RUNS after one warm-up), with the plan of the
   rollup read. Totals of both must agree.
5. The service starts again on the seeded storage. Sanity: two payments are created and paid
   through the API (bench/load.py's `_paid_payment`, the test card on the checkout); today's
   USD bucket must grow by their amount and count, and today's created and PAID counts by two:
   the service keeps writing rollups on top of the seed.
6. Measure: each route (and /merchant/analytics by week, by month and for one currency), a
   window of --days ending today, --warmup requests then --requests sequential ones on one
   keep-alive aiohttp session, every answer read whole and required to be 200; p50, p99, max.
   GET /api/v1/health/live the same way shows the client's and the pipeline's own cost.
   With --soak SECONDS, /merchant/analytics is then requested back to back for that long (70
   spans one of the service's reconciliation passes, which run at start and every 60 s and scan
   the payments), with the slowest samples and when they started.
7. /health's ledger and reconciliation states; when the service's reconciliation passes ended
   (each logs the seed's ledger mismatches as errors, so the server's log dates them) and which
   measurements they fell in; and, the service stopped, the reconciliation once more: no
   analytics mismatch after the service's own writes on top of the seed (the two payments,
   expiries of seeded payments due meanwhile).

"slow" counts the samples above SLOW_FACTOR times the route's median.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import platform
import random
import secrets
import shlex
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import load  # noqa: E402
from mps.cluster.node import delete_cluster  # noqa: E402
from mps.domain import ids  # noqa: E402
from mps.domain.analytics import PAID_STATUSES  # noqa: E402
from mps.domain.clock import iso  # noqa: E402
from mps.persistence.database import Database, open_database  # noqa: E402
from mps.persistence.migrations import load_migrations  # noqa: E402
from mps.persistence.queries import analytics as analytics_queries  # noqa: E402
from mps.persistence.queries.reconciliation import mismatches  # noqa: E402
from mps.persistence.statements import Statement  # noqa: E402

API = "/api/v1"
MODE = "test"
TARGET_MS = {"sqlite": 300.0, "postgres": 100.0}
SEED_BATCH = 50_000  # payments rows per transaction (SQLite) or COPY (Postgres)
RAW_RUNS = 5
YEAR_MS = 365 * 86_400_000
DAY_MS = 86_400_000
EXPIRY_MS = 86_400_000  # mps.domain.payments.DEFAULT_EXPIRY
LINKS_PER_CURRENCY = 10
LINK_CHILD_SHARE = 0.02
DECLINE_SHARE = 0.04
CURRENCIES = (("USD", 70), ("EUR", 20), ("GBP", 10))
STATUS_WEIGHTS = (
    ("PAID", 70),
    ("EXPIRED", 12),
    ("PENDING", 5),
    ("CANCELLED", 5),
    ("REFUNDED", 4),
    ("PARTIAL_REFUND", 3),
    ("REVERSED", 1),
)
# A sample this many times the route's median counts as slow (see the docstring).
SLOW_FACTOR = 5.0
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

PAYMENT_COLUMNS = (
    "id",
    "company_id",
    "mode",
    "version",
    "reference",
    "status",
    "amount_minor",
    "amount_refunded_minor",
    "currency",
    "description",
    "customer_email",
    "customer_phone",
    "customer_id",
    "expires_at",
    "allow_multiple",
    "success_url",
    "cancel_url",
    "webhook_url",
    "metadata",
    "link_payment_id",
    "card_brand",
    "card_last4",
    "declines",
    "paid_at",
    "created_at",
    "updated_at",
)
DECLINE_COLUMNS = (
    "id",
    "payment_id",
    "company_id",
    "mode",
    "currency",
    "amount_minor",
    "declined_at",
)


# -- the seed ----------------------------------------------------------------------------------


def _stamp(ms: int) -> str:
    """The service's timestamp form (mps.domain.clock.iso) of a Unix time in milliseconds."""
    return iso(EPOCH + timedelta(milliseconds=ms))


def _payment_id(ms: int, counter: int) -> str:
    """An id as mps.domain.ids.new_id lays it out at time `ms`: 10 time-ordered characters
    (milliseconds, then a counter within the millisecond) and 14 random ones."""
    return f"pay_{ids._base62((ms << 16) + counter, 10)}{ids.random_base62(14)}"


@dataclass
class Seeded:
    """What the generator wrote, by status, for the printout."""

    payments: int = 0
    declines: int = 0
    links: int = 0
    children: int = 0
    statuses: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class _Link:
    id: str
    currency: str
    amount: int
    description: str


def _payments(
    company_id: str, count: int, now_ms: int, rng: random.Random, seeded: Seeded
) -> Iterator[tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]]:
    """Batches of (payments rows, payment_declines rows), in creation order."""
    created = sorted(rng.randrange(now_ms - YEAR_MS, now_ms) for _ in range(count))
    currencies = [c for c, _ in CURRENCIES]
    currency_weights = [w for _, w in CURRENCIES]
    statuses = [s for s, _ in STATUS_WEIGHTS]
    status_weights = [w for _, w in STATUS_WEIGHTS]
    references: set[str] = set()
    links: dict[str, list[_Link]] = {c: [] for c in currencies}
    link_count = LINKS_PER_CURRENCY * len(currencies) if count >= 1000 else 0
    last_ms, counter = -1, 0

    def clamp(ms: int) -> int:
        return min(ms, now_ms)

    rows: list[tuple[Any, ...]] = []
    declines: list[tuple[Any, ...]] = []
    for n, t in enumerate(created):
        counter = counter + 1 if t == last_ms else 0
        last_ms = t
        payment_id = _payment_id(t, counter)
        reference = ids.payment_reference()
        while reference in references:
            reference = ids.payment_reference()
        references.add(reference)
        created_at = _stamp(t)
        expires_at: str | None = _stamp(t + EXPIRY_MS)
        amount = max(100, int(math.exp(rng.gauss(8.0, 1.0))))
        currency = rng.choices(currencies, currency_weights)[0]
        description: str | None = f"Order {n + 1}"
        allow_multiple = 0
        link_payment_id: str | None = None
        version, refunded = 1, 0
        paid_at: str | None = None
        card: tuple[str | None, str | None] = (None, None)
        declined: list[str] = []
        updated = t
        if n < link_count:
            # A multi-use link: never paid itself, no expiry; its children are the payments.
            currency = currencies[n % len(currencies)]
            description = f"Link {n + 1}"
            status, allow_multiple, expires_at = "PENDING", 1, None
            links[currency].append(_Link(payment_id, currency, amount, description))
            seeded.links += 1
        elif link_count and rng.random() < LINK_CHILD_SHARE:
            # A paid child of a link: created paid, at the checkout (checkout_succeeded).
            link = rng.choice(links[currency])
            amount, description, link_payment_id = link.amount, link.description, link.id
            status, expires_at, paid_at = "PAID", None, created_at
            card = ("visa", "4242")
            seeded.children += 1
        else:
            status = rng.choices(statuses, status_weights)[0]
            if status == "EXPIRED" and t + EXPIRY_MS + 1000 > now_ms:
                status = "PENDING"  # not due yet
            at = t
            if rng.random() < DECLINE_SHARE:
                at = clamp(at + rng.randrange(5_000, 60_000))
                version += 1
                declined = [_stamp(at)]
                declines.append(
                    (
                        f"{payment_id}:{version}",
                        payment_id,
                        company_id,
                        MODE,
                        currency,
                        amount,
                        declined[0],
                    )
                )
            if status in PAID_STATUSES:
                at = clamp(at + rng.randrange(20_000, 900_000))
                version += 1
                paid_at = _stamp(at)
                card = ("visa", "4242")
                if status in ("REFUNDED", "PARTIAL_REFUND"):
                    at = clamp(at + rng.randrange(3_600_000, 30 * DAY_MS))
                    version += 1
                    refunded = amount if status == "REFUNDED" else rng.randrange(1, amount)
                elif status == "REVERSED":
                    at = clamp(at + rng.randrange(DAY_MS, 60 * DAY_MS))
                    version += 1
            elif status == "CANCELLED":
                at = clamp(at + rng.randrange(60_000, 12 * 3_600_000))
                version += 1
            elif status == "EXPIRED":
                at = t + EXPIRY_MS + rng.randrange(0, 1000)  # the expiry sweep, each second
                version += 1
            elif t + EXPIRY_MS <= now_ms:
                expires_at = None  # PENDING a day on: created with noExpiry
            updated = at
        seeded.statuses[status if not allow_multiple else "link"] += 1
        rows.append(
            (
                payment_id,
                company_id,
                MODE,
                version,
                reference,
                status,
                amount,
                refunded,
                currency,
                description,
                None,
                None,
                None,
                expires_at,
                allow_multiple,
                None,
                None,
                None,
                "{}",
                link_payment_id,
                card[0],
                card[1],
                "[" + ",".join(f'"{d}"' for d in declined) + "]",
                paid_at,
                created_at,
                _stamp(updated),
            )
        )
        if len(rows) >= SEED_BATCH:
            seeded.payments += len(rows)
            seeded.declines += len(declines)
            yield rows, declines
            rows, declines = [], []
    if rows:
        seeded.payments += len(rows)
        seeded.declines += len(declines)
        yield rows, declines


def _insert_sql(table: str, columns: Sequence[str]) -> str:
    marks = ", ".join("?" for _ in columns)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"


def _seed_sqlite(path: Path, batches: Iterator[tuple[list[Any], list[Any]]]) -> None:
    """Every batch in a transaction of its own, with the service's connection settings."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        payments_sql = _insert_sql("payments", PAYMENT_COLUMNS)
        declines_sql = _insert_sql("payment_declines", DECLINE_COLUMNS)
        for rows, declines in batches:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(payments_sql, rows)
            conn.executemany(declines_sql, declines)
            conn.execute("COMMIT")
    finally:
        conn.close()


async def _seed_postgres(url: str, batches: Iterator[tuple[list[Any], list[Any]]]) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        for rows, declines in batches:
            async with conn.transaction():
                await conn.copy_records_to_table("payments", records=rows, columns=PAYMENT_COLUMNS)
                await conn.copy_records_to_table(
                    "payment_declines", records=declines, columns=DECLINE_COLUMNS
                )
    finally:
        await conn.close()


def _backfill_sql() -> str:
    """Migration 0010's INSERT ... SELECT that counts the payments that existed before the
    rollups, exactly as the migration runs it."""
    for migration in load_migrations():
        if migration.version == 10:
            found = [s for s in migration.statements() if "INSERT INTO analytics_days" in s]
            if len(found) == 1:
                return found[0]
    raise SystemExit("migration 0010's backfill (INSERT INTO analytics_days) not found")


# The failed_* figures the backfill leaves at zero: declines by their day, in the payment's
# currency (mps.domain.analytics.payment_deltas counts a decline on the payment's updated_at,
# which is what declined_at holds).
FAILED_SQL = (
    "INSERT INTO analytics_days (company_id, mode, currency, day, failed_count, failed_minor) "
    "SELECT company_id, mode, currency, substr(declined_at, 1, 10), COUNT(*), "
    "SUM(amount_minor) FROM payment_declines "
    "GROUP BY company_id, mode, currency, substr(declined_at, 1, 10) "
    "ON CONFLICT (company_id, mode, day, currency) DO UPDATE SET "
    "failed_count = excluded.failed_count, failed_minor = excluded.failed_minor"
)


async def _rollups(db: Database, company_id: str) -> None:
    others = await db.fetchval("SELECT COUNT(*) FROM companies WHERE id <> $1", company_id)
    if others:
        raise SystemExit(f"the database holds {others} other companies: it must be fresh")
    unit = (
        Statement("DELETE FROM analytics_days"),
        Statement(_backfill_sql()),
        Statement(FAILED_SQL),
    )
    [outcome] = await db.write([unit])
    if isinstance(outcome, BaseException):
        raise SystemExit(f"computing the rollups failed: {outcome!r}")


# -- raw SQL beside the rollups ----------------------------------------------------------------

PAID_IN = ", ".join(f"'{s}'" for s in sorted(PAID_STATUSES))
RAW_SQL = {
    "series (paid + declines by day)": (
        "SELECT currency, substr(paid_at, 1, 10) AS day, COUNT(*) AS n, "
        "SUM(amount_minor) AS minor, 0 AS failed, 0 AS failed_minor FROM payments "
        "WHERE company_id = $1 AND mode = $2 AND paid_at >= $3 AND paid_at < $4 "
        "GROUP BY currency, substr(paid_at, 1, 10) UNION ALL "
        "SELECT currency, substr(declined_at, 1, 10), 0, 0, COUNT(*), SUM(amount_minor) "
        "FROM payment_declines WHERE company_id = $1 AND mode = $2 AND declined_at >= $3 "
        "AND declined_at < $4 GROUP BY currency, substr(declined_at, 1, 10)"
    ),
    "statuses (created by status)": (
        "SELECT currency, status, COUNT(*) AS n, SUM(amount_minor) AS minor FROM payments "
        "WHERE company_id = $1 AND mode = $2 AND allow_multiple = 0 AND created_at >= $3 "
        "AND created_at < $4 GROUP BY currency, status"
    ),
    "conversion (two windows)": (
        "SELECT currency, CASE WHEN created_at >= $5 THEN 'current' ELSE 'previous' END AS period,"
        f" COUNT(*) AS created, SUM(CASE WHEN status IN ({PAID_IN}) THEN 1 ELSE 0 END) AS paid "
        "FROM payments WHERE company_id = $1 AND mode = $2 AND allow_multiple = 0 "
        "AND created_at >= $3 AND created_at < $4 GROUP BY 1, 2"
    ),
}


@dataclass
class Timed:
    label: str
    median_ms: float
    rows: int


async def _timed(db: Database, label: str, sql: str, *params: Any) -> tuple[Timed, list[Any]]:
    await db.fetch(sql, *params)  # warm-up
    times, rows = [], []
    for _ in range(RAW_RUNS):
        started = time.perf_counter()
        rows = await db.fetch(sql, *params)
        times.append((time.perf_counter() - started) * 1000)
    return Timed(label, statistics.median(times), len(rows)), rows


async def _raw(db: Database, company_id: str, window: tuple[date, date]) -> list[Timed]:
    start, end = window
    after = (end + timedelta(days=1)).isoformat()
    previous = (start - (end - start) - timedelta(days=1)).isoformat()
    timed = []
    rollup_days = len(
        await analytics_queries.days(db, company_id, MODE, start, end, None)
    )  # warm-up
    times = []
    for _ in range(RAW_RUNS):
        started = time.perf_counter()
        await analytics_queries.days(db, company_id, MODE, start, end, None)
        times.append((time.perf_counter() - started) * 1000)
    timed.append(Timed("rollup read (what each route runs)", statistics.median(times), rollup_days))
    rollups = await analytics_queries.days(db, company_id, MODE, start, end, None)
    for label, sql in RAW_SQL.items():
        params: list[Any] = [company_id, MODE, start.isoformat(), after]
        if label.startswith("conversion"):
            params = [company_id, MODE, previous, after, start.isoformat()]
        result, rows = await _timed(db, label, sql, *params)
        timed.append(result)
        if label.startswith("series"):
            raw = Counter[str]()
            for row in rows:
                raw[row["currency"]] += int(row["minor"])
            mine = Counter[str]()
            for figures in rollups:
                mine[figures.currency] += figures.counts["paid_minor"]
            if +raw != +mine:
                raise SystemExit(f"raw paid totals {dict(raw)} differ from the rollups' {mine}")
    return timed


async def _plan(db: Database, company_id: str, window: tuple[date, date]) -> list[str]:
    """The plan of the rollup read each route runs."""
    start, end = window
    sql = (
        "SELECT currency, day FROM analytics_days "
        "WHERE company_id = $1 AND mode = $2 AND day >= $3 AND day <= $4 ORDER BY day, currency"
    )
    params = (company_id, MODE, start.isoformat(), end.isoformat())
    if db.dialect == "postgres":
        rows = await db.fetch(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", *params)
        return [next(iter(r.values())) for r in rows]
    rows = await db.fetch(f"EXPLAIN QUERY PLAN {sql}", *params)
    return [str(r["detail"]) for r in rows]


# -- the service -------------------------------------------------------------------------------


@dataclass
class Storage:
    backend: str
    data_dir: Path
    database_url: str
    env: dict[str, str]
    cluster: str | None = None
    seeded_at: str = ""  # the seed's "now": later updates are the service's


@contextlib.asynccontextmanager
async def _storage(args: argparse.Namespace, backend: str) -> AsyncIterator[Storage]:
    data_dir = Path(tempfile.mkdtemp(prefix=f"mps-analytics-{backend}-"))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MPS_")},
        "MPS_DATA_DIR": str(data_dir),
        "MPS_MODE": "development",
        "MPS_RATE_LIMIT_SCALE": "0",
        "MPS_ACCESS_LOG": "off",
    }
    cluster = None
    if backend == "postgres":
        await _recreate_database(args.pg_admin_url, args.pg_database)
        url = _database_url(args.pg_admin_url, args.pg_database)
        cluster = f"mps-bench-analytics-{args.nonce}"
        env |= {
            "MPS_DATABASE_URL": url,
            "MPS_BROKER_URL": args.broker_url,
            "MPS_CLUSTER": "on",
            "MPS_CLUSTER_NAME": cluster,
        }
    else:
        url = f"sqlite:///{data_dir / 'mps.db'}"
    try:
        yield Storage(backend, data_dir, url, env, cluster)
    finally:
        if args.keep:
            kept = args.pg_database if backend == "postgres" else data_dir / "mps.db"
            print(f"kept: {kept}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
            if backend == "postgres":
                await _drop_database(args.pg_admin_url, args.pg_database)
        if cluster is not None:
            with contextlib.suppress(Exception):
                await delete_cluster(args.broker_url, cluster)


def _database_url(admin_url: str, name: str) -> str:
    return admin_url.split("?")[0].rsplit("/", 1)[0] + "/" + name


async def _recreate_database(admin_url: str, name: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


async def _drop_database(admin_url: str, name: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def _serve(storage: Storage, log: Path) -> AsyncIterator[load.Target]:
    """run.py on the storage until the block ends (stopped on any exit: load._process)."""
    port = load._free_port()
    env = {**storage.env, "MPS_PORT": str(port)}
    async with load._process([sys.executable, str(ROOT / "run.py")], log, env) as process:
        target = load.Target(f"http://127.0.0.1:{port}", process.pid)
        await load._wait_up(target.base, f"{API}/health/ready", process)
        yield target


# -- requests ----------------------------------------------------------------------------------


async def _get(
    session: aiohttp.ClientSession, url: str, token: str | None, params: dict[str, str]
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with session.get(url, params=params, headers=headers) as response:
        return await load._json(response, 200)


@dataclass
class Latency:
    label: str
    samples: list[float]  # ms, in order
    size: int  # bytes of the last answer
    started_at: float = 0.0  # wall clock (time.time) of the first timed request
    ended_at: float = 0.0
    moments: list[float] = field(default_factory=list)  # wall clock of each timed request

    def stalls(self, factor: float = 10.0, most: int = 5) -> str:
        """The slowest samples above `factor` times the median, with when they started."""
        median = self.quantile(0.5)
        slow = sorted(
            (
                (ms, at)
                for ms, at in zip(self.samples, self.moments, strict=True)
                if ms > factor * median
            ),
            reverse=True,
        )
        shown = ", ".join(
            f"{ms:,.0f} ms at {time.strftime('%H:%M:%S', time.localtime(at))}"
            for ms, at in slow[:most]
        )
        return f"{len(slow)} above {factor:g}x the median" + (f" ({shown})" if shown else "")

    def quantile(self, q: float) -> float:
        ordered = sorted(self.samples)
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

    @property
    def slow(self) -> int:
        median = self.quantile(0.5)
        return sum(1 for s in self.samples if s > SLOW_FACTOR * median)


async def _measure(
    session: aiohttp.ClientSession,
    url: str,
    token: str | None,
    params: dict[str, str],
    label: str,
    warmup: int,
    requests: int,
    seconds: float = 0.0,
) -> Latency:
    """`requests` sequential requests after `warmup`, or as many as fit in `seconds`."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    samples: list[float] = []
    moments: list[float] = []
    size = 0
    started_at = 0.0
    n = 0
    while n < warmup + requests or (seconds and time.time() < started_at + seconds):
        if n == warmup:
            started_at = time.time()
        n += 1
        moments.append(time.time())
        started = time.perf_counter()
        async with session.get(url, params=params, headers=headers) as response:
            body = await response.read()
            if response.status != 200:
                raise SystemExit(f"{label} answered {response.status}: {body[:300]!r}")
        elapsed = (time.perf_counter() - started) * 1000
        if n > warmup:
            samples.append(elapsed)
        size = len(body)
    return Latency(label, samples, size, started_at, time.time(), moments[warmup:])


def _routes(window: tuple[date, date]) -> list[tuple[str, str, dict[str, str]]]:
    start, end = window
    span = {"from": start.isoformat(), "to": end.isoformat()}
    return [
        ("/merchant/analytics", "/merchant/analytics", {**span, "interval": "day"}),
        ("  interval=week", "/merchant/analytics", {**span, "interval": "week"}),
        ("  interval=month", "/merchant/analytics", {**span, "interval": "month"}),
        ("  currency=USD", "/merchant/analytics", {**span, "currency": "USD"}),
        ("/merchant/analytics/payments", "/merchant/analytics/payments", span),
        ("/merchant/analytics/conversion", "/merchant/analytics/conversion", span),
    ]


@dataclass
class Today:
    revenue: int
    paid: int
    created: int
    paid_status: int


async def _today(session: aiohttp.ClientSession, base: str, token: str, day: date) -> Today:
    span = {"from": day.isoformat(), "to": day.isoformat(), "currency": "USD"}
    series = await _get(session, f"{base}{API}/merchant/analytics", token, span)
    [point] = series["series"]
    statuses = await _get(session, f"{base}{API}/merchant/analytics/payments", token, span)
    return Today(
        int(point["revenueMinor"]),
        int(point["paymentCount"]),
        int(statuses["count"]),
        int(statuses["statusCounts"]["PAID"]),
    )


async def _sanity(session: aiohttp.ClientSession, base: str, company: load.Company) -> str:
    """Two payments created and paid through the API show in today's figures."""
    day = datetime.now(UTC).date()
    before = await _today(session, base, company.token, day)
    in_flight = asyncio.Semaphore(1)
    late: list[str] = []
    for _ in range(2):
        await load._paid_payment(session, base, company, in_flight, late)
    after = await _today(session, base, company.token, day)
    if datetime.now(UTC).date() != day:
        return "skipped: the UTC day changed meanwhile"
    amount = 2 * int(load.REFUND_POOL_AMOUNT)
    grew = (
        after.revenue - before.revenue,
        after.paid - before.paid,
        after.created - before.created,
        after.paid_status - before.paid_status,
    )
    if grew != (amount, 2, 2, 2):
        raise SystemExit(
            f"today's USD figures grew by (revenue, paid, created, PAID) {grew}, "
            f"expected {(amount, 2, 2, 2)}: before {before}, after {after}"
        )
    return (
        f"2 payments paid through the API: today's USD revenue {before.revenue:,} -> "
        f"{after.revenue:,} (+{amount:,}), paid {before.paid} -> {after.paid}, created "
        f"{before.created} -> {after.created}, PAID {before.paid_status} -> {after.paid_status}"
    )


# -- one backend -------------------------------------------------------------------------------


@dataclass
class Result:
    backend: str
    storage: str = ""
    seeded: Seeded = field(default_factory=Seeded)
    seed_steps: list[tuple[str, float]] = field(default_factory=list)
    reconciliation: str = ""
    raw: list[Timed] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)
    sanity: str = ""
    health: str = ""
    latencies: list[Latency] = field(default_factory=list)
    load_before: str = ""
    after: str = ""
    passes: str = ""
    soak: Latency | None = None


async def _describe_storage(db: Database) -> str:
    if db.dialect == "postgres":
        return f"PostgreSQL {await db.fetchval('SHOW server_version')}"
    return f"SQLite {sqlite3.sqlite_version}"


async def _seed(
    args: argparse.Namespace, storage: Storage, company_id: str, result: Result
) -> None:
    now_ms = time.time_ns() // 1_000_000
    storage.seeded_at = _stamp(now_ms)
    rng = random.Random(args.seed)
    batches = _payments(company_id, args.payments, now_ms, rng, result.seeded)
    print(f"seeding {args.payments:,} payments ...", flush=True)
    started = time.perf_counter()
    if storage.backend == "sqlite":
        await asyncio.to_thread(_seed_sqlite, storage.data_dir / "mps.db", batches)
    else:
        await _seed_postgres(storage.database_url, batches)
    steps = [("payments and declines generated and inserted", time.perf_counter() - started)]
    db = open_database(storage.database_url)
    db.read_deadline = 3600.0  # this process's own checks may take long on 1,000,000 rows
    await db.open()
    try:
        result.storage = await _describe_storage(db)
        started = time.perf_counter()
        await _rollups(db, company_id)
        steps.append(("rollups (0010's backfill + declines)", time.perf_counter() - started))
        if db.dialect == "postgres":
            import asyncpg

            started = time.perf_counter()
            conn = await asyncpg.connect(storage.database_url)
            try:
                await conn.execute("VACUUM ANALYZE payments, payment_declines, analytics_days")
            finally:
                await conn.close()
            steps.append(("VACUUM ANALYZE", time.perf_counter() - started))
        started = time.perf_counter()
        found = await mismatches(db, None)
        seconds = time.perf_counter() - started
        analytics = [m for m in found if m.check.startswith("analytics")]
        if analytics:
            shown = "; ".join(str(m) for m in analytics[:5])
            raise SystemExit(f"{len(analytics)} analytics mismatches after the seed: {shown}")
        others = Counter(m.check for m in found)
        rollup_rows = await db.fetchval(
            "SELECT COUNT(*) FROM analytics_days WHERE company_id = $1", company_id
        )
        result.reconciliation = (
            f"reconciliation (mismatches(db, None)) in {seconds:.1f} s: no analytics mismatch "
            f"over {rollup_rows:,} rollup rows; ledger checks: "
            + (", ".join(f"{c} x{n}" for c, n in sorted(others.items())) or "none")
            + (" (no ledger postings, refunds or settlements are seeded)" if others else "")
        )
        result.seed_steps = steps
        print("  " + "; ".join(f"{label} {s:.1f} s" for label, s in steps))
        print(f"  {result.reconciliation}", flush=True)
        if not args.no_raw:
            window = _window(args.days)
            result.raw = await _raw(db, company_id, window)
            result.plan = await _plan(db, company_id, window)
    finally:
        await db.close()


def _window(days: int) -> tuple[date, date]:
    today = datetime.now(UTC).date()
    return today - timedelta(days=days - 1), today


async def _run_backend(args: argparse.Namespace, backend: str) -> Result:
    result = Result(backend)
    print(f"\n== {backend} ==", flush=True)
    timeout = aiohttp.ClientTimeout(total=120)
    async with _storage(args, backend) as storage:
        async with (
            _serve(storage, args.out / f"server-{backend}-1.log") as target,
            aiohttp.ClientSession(timeout=timeout) as session,
        ):
            company = await load._sign_up(session, target.base, f"analytics-{args.nonce}@ex.com")
            me = await _get(session, f"{target.base}{API}/auth/me", company.token, {})
            company_id = me["company"]["id"]
            print(f"signed up company {company_id} through the dev mailbox; stopping the service")
        await _seed(args, storage, company_id, result)
        async with (
            _serve(storage, args.out / f"server-{backend}-2.log") as target,
            aiohttp.ClientSession(timeout=timeout) as session,
        ):
            print("service restarted on the seeded storage")
            result.sanity = await _sanity(session, target.base, company)
            print(f"sanity: {result.sanity}", flush=True)
            window = _window(args.days)
            result.load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
            bare = await _measure(
                session,
                f"{target.base}{API}/health/live",
                None,
                {},
                "GET /health/live (baseline)",
                args.warmup,
                args.requests,
            )
            result.latencies.append(bare)
            _print_latency(bare, backend)
            for label, path, params in _routes(window):
                measured = await _measure(
                    session,
                    f"{target.base}{API}{path}",
                    company.token,
                    params,
                    label,
                    args.warmup,
                    args.requests,
                )
                result.latencies.append(measured)
                _print_latency(measured, backend)
            if args.soak > 0:
                label, path, params = _routes(window)[0]
                result.soak = await _measure(
                    session,
                    f"{target.base}{API}{path}",
                    company.token,
                    params,
                    f"{label} for {args.soak:g} s",
                    0,
                    1,
                    args.soak,
                )
                print(
                    f"  soak: {len(result.soak.samples):,} requests; {result.soak.stalls()}",
                    flush=True,
                )
                _print_latency(result.soak, backend)
            result.health = await _health(session, target.base, company.token)
            print(f"/health after the requests: {result.health}")
        every = result.latencies + ([result.soak] if result.soak else [])
        result.passes = _passes(args.out / f"server-{backend}-2.log", every)
        print(f"reconciliation passes of the service: {result.passes}")
        result.after = await _check_after(storage, company_id)
        print(f"after the run: {result.after}")
    return result


async def _health(session: aiohttp.ClientSession, base: str, token: str) -> str:
    """The ledger and reconciliation states /health reports (200 or 503)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with session.get(f"{base}{API}/health", headers=headers) as response:
        body = await response.json()
    services = body.get("services", {})
    return f"{response.status} {body.get('status')}; " + "; ".join(
        f"{name} {services.get(name, {}).get('status')}: {services.get(name, {}).get('detail')}"
        for name in ("ledger", "reconciliation")
    )


def _passes(log: Path, latencies: list[Latency]) -> str:
    """When the service's reconciliation passes ended, from its log (each pass logs the ledger
    mismatches of the seed as errors), and the measurements they fell in."""
    ends: list[float] = []
    failed = 0
    for line in log.read_text(errors="replace").splitlines():
        if "reconciliation mismatch" in line or "Reconciliation pass failed" in line:
            at = time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S"))
            failed += "pass failed" in line
            if not ends or at - ends[-1] > 2:
                ends.append(at)
    if not ends:
        return "none logged"
    found = []
    for at in ends:
        during = [m.label.strip() for m in latencies if m.started_at - 1 <= at <= m.ended_at + 1]
        stamp = time.strftime("%H:%M:%S", time.localtime(at))
        found.append(f"{stamp}" + (f" (ended during {', '.join(during)})" if during else ""))
    return f"{len(ends)} ended at " + ", ".join(found) + (f"; {failed} failed" if failed else "")


async def _check_after(storage: Storage, company_id: str) -> str:
    """The reconciliation again once the service stopped: its own writes on top of the seed
    (the sanity payments, expiries, the analytics rows they changed) kept the rollups true."""
    db = open_database(storage.database_url)
    db.read_deadline = 3600.0
    await db.open()
    try:
        found = [m for m in await mismatches(db, None) if m.check.startswith("analytics")]
        expired = await db.fetchval(
            "SELECT COUNT(*) FROM payments WHERE company_id = $1 AND status = 'EXPIRED' "
            "AND updated_at > $2",
            company_id,
            storage.seeded_at,
        )
    finally:
        await db.close()
    if found:
        shown = "; ".join(str(m) for m in found[:5])
        raise SystemExit(f"{len(found)} analytics mismatches after the run: {shown}")
    return (
        f"no analytics mismatch once the service stopped ({expired:,} seeded payments expired "
        "by the service meanwhile, besides the 2 paid)"
    )


# -- the report --------------------------------------------------------------------------------


def _print_latency(latency: Latency, backend: str) -> None:
    print(
        f"  {latency.label:<34} p50 {latency.quantile(0.5):7.2f}  p99 "
        f"{latency.quantile(0.99):7.2f}  max {max(latency.samples):7.2f} ms  "
        f"{latency.size:>6,} B  slow {latency.slow}",
        flush=True,
    )


def _report(args: argparse.Namespace, results: list[Result]) -> None:
    window = _window(args.days)
    print(
        f"\nsummary: {args.payments:,} payments, window {window[0]} .. {window[1]} "
        f"({args.days} days), {args.requests} sequential requests after {args.warmup} warm-up, "
        "one keep-alive session; ms"
    )
    header = f"  {'route':<34}"
    for r in results:
        header += f" | {r.backend + ' p50':>12} {'p99':>7} {'max':>7}"
    print(header)
    for index, latency in enumerate(results[0].latencies):
        line = f"  {latency.label:<34}"
        for r in results:
            mine = r.latencies[index]
            line += (
                f" | {mine.quantile(0.5):>12.2f} {mine.quantile(0.99):>7.2f} "
                f"{max(mine.samples):>7.2f}"
            )
        print(line)
    for r in results:
        target = TARGET_MS[r.backend]
        routes = r.latencies[1:]
        worst = max(routes, key=lambda x: x.quantile(0.99))
        verdict = "met" if worst.quantile(0.99) <= target else "NOT met"
        print(
            f"  {r.backend} ({r.storage}): target p99 <= {target:.0f} ms per route {verdict} "
            f"(worst p99 {worst.quantile(0.99):.2f} ms, {worst.label.strip()}); load average "
            f"before the requests {r.load_before}"
        )
        total = sum(s for _, s in r.seed_steps)
        steps = "; ".join(f"{label} {s:.1f} s" for label, s in r.seed_steps)
        seeded = r.seeded
        statuses = ", ".join(f"{s} {n:,}" for s, n in seeded.statuses.most_common())
        print(
            f"    seed {total:.1f} s ({steps}): {seeded.payments:,} payments ({statuses}; "
            f"{seeded.children:,} of them link children), {seeded.declines:,} declines"
        )
        print(f"    {r.reconciliation}")
        print(f"    {r.sanity}")
        if r.soak is not None:
            soak = r.soak
            over = sum(1 for ms in soak.samples if ms > target)
            print(
                f"    soak, {soak.label.strip()}: {len(soak.samples):,} requests, p50 "
                f"{soak.quantile(0.5):.2f}, p99 {soak.quantile(0.99):.2f}, p99.9 "
                f"{soak.quantile(0.999):.2f}, max {max(soak.samples):,.2f} ms; {over} over "
                f"{target:.0f} ms; {soak.stalls()}"
            )
        print(f"    /health after the requests: {r.health}")
        print(f"    the service's reconciliation passes: {r.passes}")
        print(f"    {r.after}")
        if r.raw:
            print("    on the database directly, median of 5 (ms, rows):")
            for timed in r.raw:
                print(f"      {timed.label:<38} {timed.median_ms:9.2f} {timed.rows:>6,}")
            print("    plan of the rollup read:")
            for line in r.plan:
                print(f"      {line}")


def print_machine(out: Path) -> None:
    """Make the run's folder, and say first what ran where, so its figures can be compared."""
    out.mkdir(parents=True, exist_ok=True)
    print(f"command: {shlex.join(sys.orig_argv)}")
    print(
        f"machine: nproc {len(os.sched_getaffinity(0))}, Python {platform.python_version()}, "
        f"Linux {platform.release()}, aiohttp {aiohttp.__version__}, SQLite "
        f"{sqlite3.sqlite_version}; files: {out}"
    )


def storage_arguments(parser: argparse.ArgumentParser, database: str) -> None:
    """The options of where a run keeps its data: the Postgres `database` it drops and creates,
    the broker, and the folder of its files."""
    parser.add_argument(
        "--pg-admin-url",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="where the bench database is dropped and created",
    )
    parser.add_argument("--pg-database", default=database)
    parser.add_argument("--broker-url", default="amqp://guest:guest@127.0.0.1:5672/")
    parser.add_argument("--keep", action="store_true", help="keep the data dir and database")
    parser.add_argument("--out", type=Path, help="where a run's files go")


def name_the_run(args: argparse.Namespace, bench: str) -> None:
    """A nonce of the run's own (for its schemas and queues), and its folder unless given."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    args.nonce = f"{stamp.replace('-', '')}{secrets.token_hex(3)}"
    args.out = args.out or ROOT / "var" / "bench" / f"{stamp}-{bench}"


async def main(args: argparse.Namespace) -> int:
    print_machine(args.out)
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    results = [await _run_backend(args, backend) for backend in backends]
    _report(args, results)
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--payments", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=200, help="timed requests per route")
    parser.add_argument("--warmup", type=int, default=20, help="untimed requests first")
    parser.add_argument("--days", type=int, default=90, help="the window, ending today")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the distribution")
    parser.add_argument(
        "--soak",
        type=float,
        default=0.0,
        help="then request /merchant/analytics for this many seconds (70 spans a "
        "reconciliation pass of the service)",
    )
    parser.add_argument("--no-raw", action="store_true", help="skip the raw SQL comparison")
    storage_arguments(parser, "mps_bench_analytics")
    args = parser.parse_args()
    if args.payments < 1 or args.requests < 1 or args.warmup < 0 or args.days < 1:
        parser.error("--payments, --requests and --days must be positive")
    name_the_run(args, "analytics")
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(main(_arguments())))
