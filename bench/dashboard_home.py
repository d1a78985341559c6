"""The dashboard's Home at scale: its whole data load over a merchant with 1,000,000 payments.

    .venv/bin/python bench/dashboard_home.py --backend both --payments 1000000 --loads 100
    .venv/bin/python bench/dashboard_home.py --backend sqlite --payments 20000   # a quick check

The target (printed, not enforced): the Home's data in at most 300 ms (p99 of the whole load)
at 1,000,000 payments, per backend. Options: --backend sqlite|postgres|both, --payments,
--loads 100 (timed, after --warmup 10), --range 30 (the Home's default range, in days),
--invoices 20000 (--overdue 10 of them), --approvals 5000 (--pending 20), --webhooks 5,
--seed 1, --pg-admin-url and --pg-database mps_bench_home (dropped and created again each
run), --broker-url, --keep, --out (the server's logs; by default var/bench/<time>-home/).

One run per backend:

1. Storage, sign-up and the payments seed are bench/analytics.py's (its docstring): one company
   signed up through the dev mailbox, --payments rows written with the backend's bulk path, the
   rollups filled by migration 0010's backfill, checked by the service's reconciliation.
2. The rest of what Home reads, written beside them: --invoices invoices (--overdue of them
   OVERDUE, the others SENT, PAID or VOID) and --approvals approval requests (--pending of them
   PENDING, asked by another member, so they wait for the owner's vote; the rest decided), in
   creation order over the last year: few open among many, as a merchant's are, so that a list
   walking every row to fill its page shows. Then, through the API with the service running
   again, --webhooks endpoints, one of them disabled.
3. Measure: one load is what the browser does when it opens /dashboard (main.js, layout.js,
   pages/home.js): GET /auth/me, and once it answers, in parallel, the company picker's
   /auth/companies and the Home's seven reads (balance; analytics over the range by day;
   approvals awaiting my vote, limit 100; webhook endpoints, limit 100; KYC; overdue invoices,
   limit 20; the 5 most recent payments), each only when the owner's scopes allow it as the
   page does. One aiohttp session holds at most 6 keep-alive connections, as a browser does
   for one HTTP/1.1 origin, so two of the eight wait for a connection. A load's time runs from
   the first request to the last answer read whole; every answer must be 200. --warmup loads,
   then --loads timed ones back to back: the whole load's p50/p99/max and each call's own.
   Then each call alone, --loads times in a row on the same session, with GET /health/live as
   the baseline: the reference, measured in the same run, for what sharing the service with
   the other calls of the load costs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import analytics, load  # noqa: E402
from mps.domain import ids  # noqa: E402

API = analytics.API
MODE = analytics.MODE
TARGET_MS = 300.0
# Chromium's connections per HTTP/1.1 origin: the Home's eight parallel reads share six.
BROWSER_CONNECTIONS = 6
OTHER_MEMBER = "usr_benchotherapprover01"
INVOICE_COLUMNS = (
    "id",
    "company_id",
    "mode",
    "version",
    "status",
    "invoice_number",
    "number_sequence",
    "currency",
    "amount_minor",
    "customer_email",
    "customer_name",
    "items",
    "due_date",
    "overdue_from",
    "paid_at",
    "voided_at",
    "last_sent_at",
    "created_at",
    "updated_at",
)
APPROVAL_COLUMNS = (
    "id",
    "company_id",
    "mode",
    "action",
    "status",
    "requested_by",
    "payload",
    "required_approvals",
    "created_at",
    "expires_at",
    "decided_at",
)


@dataclass(frozen=True)
class Call:
    label: str
    path: str
    params: dict[str, str]
    scope: str | None  # the scope the page checks before it asks; None: always asked


def home_calls(range_days: int) -> list[Call]:
    """The parallel reads of one Home load, after /auth/me, as the page makes them."""
    today = datetime.now(UTC).date()
    span = {
        "from": (today - timedelta(days=range_days - 1)).isoformat(),
        "to": today.isoformat(),
        "interval": "day",
    }
    return [
        Call("/auth/companies", "/auth/companies", {}, None),
        Call("/merchant/balance", "/merchant/balance", {}, "payouts:read"),
        Call(f"/merchant/analytics {range_days} d", "/merchant/analytics", span, "analytics:read"),
        Call(
            "/team/approvals/requests awaiting",
            "/team/approvals/requests",
            {"awaitingMyVote": "true", "limit": "100"},
            "team:read",
        ),
        Call("/merchant/webhooks", "/merchant/webhooks", {"limit": "100"}, "settings:read"),
        Call("/merchant/kyc", "/merchant/kyc", {}, "settings:read"),
        Call(
            "/merchant/invoices OVERDUE",
            "/merchant/invoices",
            {"status": "OVERDUE", "limit": "20"},
            "invoices:read",
        ),
        Call("/merchant/payments limit 5", "/merchant/payments", {"limit": "5"}, "payments:read"),
    ]


# -- the rest of what Home reads ---------------------------------------------------------------


def _invoices(
    company_id: str, count: int, overdue: int, now_ms: int, rng: random.Random
) -> list[tuple[Any, ...]]:
    created = sorted(rng.randrange(now_ms - analytics.YEAR_MS, now_ms) for _ in range(count))
    late = set(rng.sample(range(1, count + 1), min(overdue, count)))
    rows = []
    for n, t in enumerate(created, start=1):
        amount = rng.randrange(1_000, 500_000)
        created_at = analytics._stamp(t)
        due = datetime.fromtimestamp(t / 1000, UTC).date() + timedelta(days=30)
        overdue_from = analytics._stamp(t + 31 * analytics.DAY_MS)
        paid_at = voided_at = None
        if n in late:
            status, updated = "OVERDUE", overdue_from
        elif t + 31 * analytics.DAY_MS > now_ms:
            status, updated = "SENT", created_at  # not due yet
        elif rng.random() < 0.9:
            status = "PAID"
            paid_at = updated = analytics._stamp(
                t + rng.randrange(analytics.DAY_MS, 30 * analytics.DAY_MS)
            )
        else:
            status = "VOID"
            voided_at = updated = analytics._stamp(
                t + rng.randrange(analytics.DAY_MS, 30 * analytics.DAY_MS)
            )
        rows.append(
            (
                ids.new_id("inv"),
                company_id,
                MODE,
                2 if status == "SENT" else 3,
                status,
                f"INV-{n:06d}",
                n,
                "USD",
                amount,
                f"customer{n % 500}@example.com",
                f"Customer {n % 500}",
                orjson.dumps([["Services", 1, amount]]).decode(),
                due.isoformat(),
                overdue_from,
                paid_at,
                voided_at,
                created_at,
                created_at,
                updated,
            )
        )
    return rows


def _approvals(
    company_id: str, count: int, waiting: int, now_ms: int, rng: random.Random
) -> list[tuple[Any, ...]]:
    created = sorted(rng.randrange(now_ms - analytics.YEAR_MS, now_ms) for _ in range(count))
    open_ones = set(rng.sample(range(count), min(waiting, count)))
    rows = []
    for n, t in enumerate(created):
        pending = n in open_ones
        status = "PENDING" if pending else rng.choice(["EXECUTED", "REJECTED", "EXPIRED"])
        payload = {"amountMinor": str(rng.randrange(10_000, 10_000_000)), "currency": "USD"}
        rows.append(
            (
                ids.new_id("apr"),
                company_id,
                MODE,
                "payout.create",
                status,
                OTHER_MEMBER,
                orjson.dumps(payload).decode(),
                1,
                analytics._stamp(t),
                # Pending ones do not expire during the run.
                analytics._stamp((now_ms if pending else t) + 7 * analytics.DAY_MS),
                None if pending else analytics._stamp(t + 3_600_000),
            )
        )
    return rows


def _insert_sqlite(path: Path, tables: list[tuple[str, tuple[str, ...], list[Any]]]) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("BEGIN IMMEDIATE")
        for table, columns, rows in tables:
            conn.executemany(analytics._insert_sql(table, columns), rows)
        conn.execute("COMMIT")
    finally:
        conn.close()


async def _insert_postgres(url: str, tables: list[tuple[str, tuple[str, ...], list[Any]]]) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        async with conn.transaction():
            for table, columns, rows in tables:
                await conn.copy_records_to_table(table, records=rows, columns=columns)
        await conn.execute("VACUUM ANALYZE invoices, approval_requests")
    finally:
        await conn.close()


async def _seed_rest(args: argparse.Namespace, storage: analytics.Storage, company_id: str) -> str:
    now_ms = time.time_ns() // 1_000_000
    rng = random.Random(args.seed + 1)
    invoices = _invoices(company_id, args.invoices, args.overdue, now_ms, rng)
    approvals = _approvals(company_id, args.approvals, args.pending, now_ms, rng)
    tables = [
        ("invoices", INVOICE_COLUMNS, invoices),
        ("approval_requests", APPROVAL_COLUMNS, approvals),
    ]
    if storage.backend == "sqlite":
        await asyncio.to_thread(_insert_sqlite, storage.data_dir / "mps.db", tables)
    else:
        await _insert_postgres(storage.database_url, tables)
    overdue = sum(1 for r in invoices if r[4] == "OVERDUE")
    pending = sum(1 for r in approvals if r[4] == "PENDING")
    return (
        f"{len(invoices):,} invoices ({overdue} OVERDUE), {len(approvals):,} approval requests "
        f"({pending} PENDING, awaiting the owner's vote)"
    )


async def _webhooks(session: aiohttp.ClientSession, base: str, token: str, count: int) -> str:
    headers = {"Authorization": f"Bearer {token}"}
    made = []
    for n in range(count):
        # Nothing listens there: with development mode's private targets allowed, a real
        # endpoint that would fail its deliveries.
        body = {"url": f"http://127.0.0.1:9/hooks/{n}", "events": ["payment.*"]}
        async with session.post(f"{base}{API}/merchant/webhooks", json=body, headers=headers) as r:
            made.append((await load._json(r, 201))["id"])
    if made:
        url = f"{base}{API}/merchant/webhooks/{made[0]}"
        async with session.patch(url, json={"status": "disabled"}, headers=headers) as r:
            await load._json(r, 200)
    return f"{len(made)} webhook endpoints through the API ({min(1, len(made))} disabled)"


# -- one Home load -----------------------------------------------------------------------------


@dataclass
class Loads:
    whole: list[float] = field(default_factory=list)
    me: list[float] = field(default_factory=list)
    calls: dict[str, list[float]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    # The same calls one at a time, the reference for what waiting beside the others costs.
    alone: dict[str, list[float]] = field(default_factory=dict)


async def _timed_get(
    session: aiohttp.ClientSession, url: str, headers: dict[str, str], params: dict[str, str]
) -> tuple[float, bytes]:
    started = time.perf_counter()
    async with session.get(url, params=params, headers=headers) as response:
        body = await response.read()
        if response.status != 200:
            raise SystemExit(f"GET {url} {params} answered {response.status}: {body[:300]!r}")
    return (time.perf_counter() - started) * 1000, body


async def _home_load(
    session: aiohttp.ClientSession, base: str, token: str, calls: list[Call]
) -> tuple[float, float, list[tuple[str, float, int]]]:
    """(whole ms, /auth/me ms, each parallel call's ms and size)."""
    headers = {"Authorization": f"Bearer {token}"}
    started = time.perf_counter()
    me_ms, body = await _timed_get(session, f"{base}{API}/auth/me", headers, {})
    scopes = set(orjson.loads(body)["scopes"])
    asked = [c for c in calls if c.scope is None or c.scope in scopes]
    answers = await asyncio.gather(
        *(_timed_get(session, f"{base}{API}{c.path}", headers, c.params) for c in asked)
    )
    whole = (time.perf_counter() - started) * 1000
    return whole, me_ms, [(c.label, ms, len(b)) for c, (ms, b) in zip(asked, answers, strict=True)]


async def _measure(args: argparse.Namespace, base: str, token: str) -> Loads:
    calls = home_calls(args.range)
    found = Loads()
    connector = aiohttp.TCPConnector(limit_per_host=BROWSER_CONNECTIONS)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        for n in range(args.warmup + args.loads):
            whole, me_ms, each = await _home_load(session, base, token, calls)
            if n < args.warmup:
                continue
            found.whole.append(whole)
            found.me.append(me_ms)
            for label, ms, size in each:
                found.calls.setdefault(label, []).append(ms)
                found.sizes[label] = size
        headers = {"Authorization": f"Bearer {token}"}
        alone = [Call("/health/live (baseline)", "/health/live", {}, None)]
        alone += [Call("/auth/me", "/auth/me", {}, None), *calls]
        for call in alone:
            if call.label not in found.sizes and call.path not in ("/health/live", "/auth/me"):
                continue  # the page did not ask for it
            for n in range(args.warmup + args.loads):
                ms, _ = await _timed_get(session, f"{base}{API}{call.path}", headers, call.params)
                if n >= args.warmup:
                    found.alone.setdefault(call.label, []).append(ms)
    return found


def quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[max(0, -(-int(q * 1000) * len(ordered) // 1000) - 1)]


# -- one backend -------------------------------------------------------------------------------


@dataclass
class Result:
    backend: str
    storage: str = ""
    seed: str = ""
    rest: str = ""
    load_before: str = ""
    load_after: str = ""
    loads: Loads = field(default_factory=Loads)


async def _run_backend(args: argparse.Namespace, backend: str) -> Result:
    result = Result(backend)
    print(f"\n== {backend} ==", flush=True)
    timeout = aiohttp.ClientTimeout(total=120)
    async with analytics._storage(args, backend) as storage:
        async with (
            analytics._serve(storage, args.out / f"server-{backend}-1.log") as target,
            aiohttp.ClientSession(timeout=timeout) as session,
        ):
            company = await load._sign_up(session, target.base, f"home-{args.nonce}@ex.com")
            me = await analytics._get(session, f"{target.base}{API}/auth/me", company.token, {})
            company_id = me["company"]["id"]
            print(f"signed up company {company_id}; stopping the service to seed")
        seeded = analytics.Result(backend)
        await analytics._seed(args, storage, company_id, seeded)
        result.storage = seeded.storage
        statuses = ", ".join(f"{s} {n:,}" for s, n in seeded.seeded.statuses.most_common())
        result.seed = (
            f"{seeded.seeded.payments:,} payments ({statuses}), {seeded.seeded.declines:,} "
            "declines in " + "; ".join(f"{label} {s:.1f} s" for label, s in seeded.seed_steps)
        )
        result.rest = await _seed_rest(args, storage, company_id)
        async with analytics._serve(storage, args.out / f"server-{backend}-2.log") as target:
            async with aiohttp.ClientSession(timeout=timeout) as session:
                result.rest += "; " + await _webhooks(
                    session, target.base, company.token, args.webhooks
                )
            print(f"seeded: {result.seed}\n  {result.rest}", flush=True)
            result.load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
            result.loads = await _measure(args, target.base, company.token)
            result.load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
        _print(result)
    return result


def _alone(loads: Loads, label: str) -> str:
    samples = loads.alone.get(label)
    if not samples:
        return ""
    return f"{quantile(samples, 0.5):7.2f} {quantile(samples, 0.99):7.2f}"


# -- the report --------------------------------------------------------------------------------


def _line(label: str, samples: list[float]) -> str:
    return (
        f"{label:<36} {quantile(samples, 0.5):8.2f} {quantile(samples, 0.99):8.2f} "
        f"{max(samples):8.2f}"
    )


def _print(r: Result) -> None:
    loads = r.loads
    print(f"  {'ms':<36} {'p50':>8} {'p99':>8} {'max':>8} {'size':>9}   alone: p50, p99")
    print("  " + _line("whole Home load", loads.whole))
    print(
        "  "
        + _line("  /auth/me (first, alone)", loads.me)
        + f"{'':>10}   {_alone(loads, '/auth/me')}"
    )
    for label, samples in sorted(loads.calls.items(), key=lambda kv: -quantile(kv[1], 0.5)):
        print(
            "  "
            + _line(f"  {label}", samples)
            + f" {loads.sizes[label]:>7,} B   {_alone(loads, label)}"
        )
    print("  " + _line("GET /health/live alone (baseline)", loads.alone["/health/live (baseline)"]))
    whole_alone = sum(quantile(s, 0.5) for s in loads.alone.values()) - quantile(
        loads.alone["/health/live (baseline)"], 0.5
    )
    print(f"  sum of the calls' p50 one at a time: {whole_alone:.2f} ms")
    verdict = "met" if quantile(loads.whole, 0.99) <= TARGET_MS else "NOT met"
    print(
        f"  {r.backend} ({r.storage}): target p99 <= {TARGET_MS:.0f} ms for the whole load "
        f"{verdict}; load average {r.load_before} before, {r.load_after} after",
        flush=True,
    )


async def main(args: argparse.Namespace) -> int:
    analytics.print_machine(args.out)
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    results = [await _run_backend(args, backend) for backend in backends]
    print(
        f"\nsummary: {args.payments:,} payments, Home range {args.range} days, {args.loads} "
        f"loads after {args.warmup} warm-up, {BROWSER_CONNECTIONS} keep-alive connections"
    )
    for r in results:
        print(f"\n{r.backend}: {r.seed}\n  {r.rest}")
        _print(r)
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--payments", type=int, default=1_000_000)
    parser.add_argument("--loads", type=int, default=100, help="timed Home loads")
    parser.add_argument("--warmup", type=int, default=10, help="untimed loads first")
    parser.add_argument("--range", type=int, default=30, help="the Home's range, in days")
    parser.add_argument("--invoices", type=int, default=20_000)
    parser.add_argument("--overdue", type=int, default=10, help="of the invoices")
    parser.add_argument("--approvals", type=int, default=5000)
    parser.add_argument("--pending", type=int, default=20, help="of the approval requests")
    parser.add_argument("--webhooks", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1, help="random seed of the distribution")
    analytics.storage_arguments(parser, "mps_bench_home")
    args = parser.parse_args()
    if min(args.payments, args.loads, args.range) < 1 or args.warmup < 0:
        parser.error("--payments, --loads and --range must be positive")
    # What bench/analytics.py's seed reads besides these.
    args.no_raw = True
    args.days = args.range
    analytics.name_the_run(args, "home")
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(main(_arguments())))
