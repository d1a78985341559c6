"""Memory with many payments: the server's RSS while payments pile up, at rest, and while
their actors are activated and passivated again.

    .venv/bin/python bench/memory.py --backend postgres --payments 1000000
    .venv/bin/python bench/memory.py --backend postgres --payments 100000 --touch 60000 \
        --settle 480                    # watch idle passivation (actor_idle_after) free memory
    .venv/bin/python bench/memory.py --backend sqlite --payments 100000 --touch 20000

The target: 1,000,000 payments created and left idle, server RSS at most 600 MB (--limit-mb,
decimal: 572.2 MiB), passivation keeping it there once payments are used again.
Options: --companies 16, --connections 64 --threads 2 (wrk's -c and -t), --chunk 30 (seconds
of each wrk run), --idle 20 (seconds left alone after the creates), --touch 200000 (payments
cancelled afterwards, each activating its payment actor), --settle 10 (seconds watched after
the touch; idle actors are passivated by a sweep every actor_idle_after / 2, so 450 s or more
sees every one of them go), --verbose (wrk's per-second progress lines, otherwise in
progress.log), and bench/load.py's --url, --server-pid, --pg-url, --broker-url, --keep, --out,
--wrk. Every file of a run goes to --out, by default var/bench/<time>-memory-<backend>/.

One run (the service is started by bench/load.py's machinery: `run.py` in development mode, a
fresh data dir or Postgres schema, rate limits and access log off):

1. Companies sign up through the dev mailbox. The service's RSS (VmRSS) and peak (VmHWM) are
   read from /proc/<pid>/status at every checkpoint below.
2. wrk runs the create mix (bench/wrk/mix.lua) in chunks of --chunk seconds until at least
   --payments creates were answered 201; after each chunk: the total so far, creates/s, RSS,
   peak, and RSS growth per payment created.
3. The service is left idle for --idle seconds; RSS again.
4. Passivation: --touch PENDING payments (the newest of each company, listed through the API)
   are cancelled with wrk's cancel mix, in chunks. Creating a payment activates no payment
   actor (the company actor writes the row), so this is what brings payment actors into
   memory; each shard's directory keeps at most payment_actor_capacity / shard_count of them
   and passivates the least recently used beyond that, and any idle for actor_idle_after. RSS
   during and after, and the most payment actors that can be active (the service does not
   report the count: it is computed from the shards the companies fall in).
5. Every acknowledged create (and cancel) is looked for in storage: with the Postgres backend
   by asyncpg in the run's schema, otherwise through the API's list. The summary gives the RSS
   curve, the peak, RSS after idle and after the touch, RSS growth per payment actor that can
   be active, and whether the target holds: for the payments created and left idle (the peak
   up to the end of --idle) and with the touch (the peak of the whole run).

Exit code 1 when an acknowledged write is missing or either peak is above --limit-mb.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import secrets
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import load  # noqa: E402
from mps.actors.shards import shard_of  # noqa: E402
from mps.config import Settings  # noqa: E402

MIB = 1024
PAGE = 100


# -- what is measured --------------------------------------------------------------------------


@dataclass
class Checkpoint:
    label: str
    created: int
    rss_kib: int
    hwm_kib: int


@dataclass
class Memory:
    """The server's RSS at each checkpoint, from /proc/<pid>/status."""

    pid: int | None
    checkpoints: list[Checkpoint] = field(default_factory=list)

    def read(self) -> tuple[int, int]:
        if self.pid is None:
            return 0, 0
        status = load._proc_status(self.pid)
        return status.get("VmRSS", 0), status.get("VmHWM", 0)

    def mark(self, label: str, created: int) -> Checkpoint:
        rss, hwm = self.read()
        point = Checkpoint(label, created, rss, hwm)
        self.checkpoints.append(point)
        return point

    def peak_kib(self) -> int:
        return max((c.hwm_kib for c in self.checkpoints), default=0)


def _mib(kib: int) -> str:
    return f"{kib / MIB:,.1f} MiB"


@dataclass
class Bound:
    """What caps the payment actors in memory, from the service's own settings."""

    shards: dict[int, list[int]]  # shard index -> indexes (1-based) of the companies in it
    per_shard: int
    settings: Settings

    @classmethod
    def of(cls, company_ids: list[str]) -> Bound:
        settings = Settings()
        shards: dict[int, list[int]] = {}
        for index, company_id in enumerate(company_ids, 1):
            shards.setdefault(shard_of(company_id, settings.shard_count), []).append(index)
        per_shard = max(1, settings.payment_actor_capacity // settings.shard_count)
        return cls(shards, per_shard, settings)

    @property
    def most_active(self) -> int:
        return len(self.shards) * self.per_shard

    def active_after(self, touched_by_company: Counter[int]) -> int:
        """The most payment actors active after touching these many payments of each company,
        within actor_idle_after (none passivated for idleness yet)."""
        return sum(
            min(self.per_shard, sum(touched_by_company[c] for c in companies))
            for companies in self.shards.values()
        )

    def describe(self) -> str:
        s = self.settings
        return (
            f"payment actors: at most {s.payment_actor_capacity:,} over {s.shard_count} shards "
            f"= {self.per_shard:,} active per shard (least recently used passivated beyond "
            f"that), and any idle for {s.actor_idle_after:g} s passivated; these companies "
            f"fall in {len(self.shards)} shards, so at most {self.most_active:,} payment actors "
            f"can be active at once, however many payments exist. A create activates only its "
            f"company's actor (at most {s.company_actor_capacity:,} company actors)."
        )


# -- phases ------------------------------------------------------------------------------------


@contextlib.contextmanager
def _progress(args: argparse.Namespace) -> Iterator[None]:
    """wrk's per-second progress lines go to progress.log unless --verbose."""
    if args.verbose:
        yield
        return
    with (args.out / "progress.log").open("a") as log, contextlib.redirect_stdout(log):
        yield


async def _drive(
    target: load.Target,
    mix: str,
    seconds: float,
    args: argparse.Namespace,
    datafile: Path,
    label: str,
) -> load.Run:
    with _progress(args):
        return await load._drive(target, mix, seconds, args, datafile, label)


def _statuses(run: load.Run) -> str:
    found = run.figures["statuses"]
    text = ", ".join(f"{s}: {n:,}" for s, n in sorted(found.items()))
    sockets = {k: v for k, v in run.figures["socketErrors"].items() if v}
    return text + (f"; socket errors {sockets}" if sockets else "")


@dataclass
class Created:
    ids: set[str] = field(default_factory=set)
    unreadable: int = 0
    seconds: float = 0.0
    errors: Counter[str] = field(default_factory=Counter)


async def _create(
    target: load.Target, args: argparse.Namespace, datafile: Path, memory: Memory, base_kib: int
) -> Created:
    created = Created()
    rate = 0.0
    chunk = 0
    print(
        f"\ncreating {args.payments:,} payments: wrk create mix, {args.connections} connections, "
        f"{args.threads} threads, chunks of {args.chunk:g} s"
    )
    while len(created.ids) < args.payments:
        chunk += 1
        remaining = args.payments - len(created.ids)
        seconds = args.chunk
        if rate > 0:
            # The last chunk: about what is left, and a little more, not a whole chunk.
            seconds = min(args.chunk, max(2.0, math.ceil(remaining / rate * 1.05 + 1)))
        run = await _drive(target, "create", seconds, args, datafile, f"create-{chunk:03d}")
        before = len(created.ids)
        created.ids.update(run.created)
        created.unreadable += len(run.unreadable)
        elapsed = run.figures["durationUs"] / 1e6
        created.seconds += elapsed
        for status, count in run.figures["statuses"].items():
            if status != "201":
                created.errors[status] += count
        new = len(created.ids) - before
        rate = new / max(elapsed, 1e-9)
        point = memory.mark(f"created {len(created.ids):,}", len(created.ids))
        per_payment = (point.rss_kib - base_kib) * 1024 / max(len(created.ids), 1)
        print(
            f"  {len(created.ids):>10,} created  (+{new:,} in {elapsed:.1f} s, {rate:,.0f}/s)  "
            f"RSS {_mib(point.rss_kib)}  peak {_mib(point.hwm_kib)}  "
            f"({per_payment:,.0f} B per payment over the start)",
            flush=True,
        )
        if new < len(run.created):
            print(f"  {len(run.created) - new:,} ids answered more than once")
        if new == 0:
            raise SystemExit(f"no payment created in a {elapsed:.0f} s chunk: {_statuses(run)}")
        if set(run.figures["statuses"]) - {"201"}:
            print(f"  responses: {_statuses(run)}")
    return created


async def _quiet(title: str, seconds: float, memory: Memory) -> None:
    """No load for `seconds`, RSS a few times meanwhile (at least every 30 s)."""
    if seconds <= 0:
        return
    print(f"\n{title}, {seconds:g} s without load")
    started = time.monotonic()
    step = min(30.0, max(1.0, seconds / 4))
    while (left := seconds - (time.monotonic() - started)) > 0:
        await asyncio.sleep(min(step, left))
        rss, hwm = memory.read()
        print(f"  {time.monotonic() - started:5.0f} s  RSS {_mib(rss)}  peak {_mib(hwm)}")


async def _pending(
    session: aiohttp.ClientSession, base: str, company: load.Company, wanted: int
) -> list[str]:
    """Up to `wanted` PENDING payments of the company, newest first, through the API."""
    headers = {"Authorization": f"Bearer {company.token}"}
    ids: list[str] = []
    cursor: str | None = None
    while len(ids) < wanted:
        params = {"limit": str(PAGE), "status": "PENDING", **({"cursor": cursor} if cursor else {})}
        async with session.get(
            f"{base}/api/v1/merchant/payments", params=params, headers=headers
        ) as response:
            body = await load._json(response, 200)
        ids += [p["id"] for p in body.get("items") or body.get("data") or []]
        cursor = body.get("nextCursor")
        if not cursor:
            break
    return ids[:wanted]


@dataclass
class Touched:
    pool: int = 0
    cancelled: set[str] = field(default_factory=set)
    by_company: Counter[int] = field(default_factory=Counter)
    # Cancels answered 409: the payment was cancelled by a request still in flight when an
    # earlier chunk's wrk stopped (its answer never read), or it is a repeat once a wrk thread's
    # share ran out. Each still reaches the payment's actor.
    conflicts: int = 0
    peak_kib: int = 0
    seconds: float = 0.0
    active: int = 0  # the most payment actors that can be active at the end


async def _touch(
    session: aiohttp.ClientSession,
    target: load.Target,
    args: argparse.Namespace,
    companies: list[load.Company],
    memory: Memory,
    bound: Bound,
    created: int,
) -> Touched:
    touched = Touched()
    if args.touch <= 0:
        return touched
    share = math.ceil(args.touch / len(companies))
    print(f"\ntouch: listing up to {share:,} PENDING payments of each company")
    lists = await asyncio.gather(*(_pending(session, target.base, c, share) for c in companies))
    pool = [(index, pid) for index, ids in enumerate(lists, 1) for pid in ids][: args.touch]
    company_of = {pid: index for index, pid in pool}
    touched.pool = len(pool)
    print(
        f"touch: cancelling {len(pool):,} payments (wrk cancel mix, chunks of {args.chunk:g} s); "
        "each cancel activates that payment's actor"
    )
    rps = 1000.0  # a guess for sizing the first chunk; measured after each
    chunk = 0
    while len(touched.cancelled) < len(pool):
        chunk += 1
        remaining = [(i, p) for i, p in pool if p not in touched.cancelled]
        datafile = args.out / "touch.data"
        load._write_data(datafile, companies, remaining)
        seconds = min(args.chunk, max(2.0, math.ceil(len(remaining) / rps * 1.05 + 1)))
        run = await _drive(target, "cancel", seconds, args, datafile, f"touch-{chunk:03d}")
        new = {p for p in run.cancelled if p in company_of} - touched.cancelled
        touched.cancelled |= new
        touched.by_company.update(company_of[p] for p in new)
        touched.conflicts += run.figures["statuses"].get("409", 0)
        elapsed = run.figures["durationUs"] / 1e6
        touched.seconds += elapsed
        touched.peak_kib = max(touched.peak_kib, run.rss_peak_kib)
        rps = max(run.rps, 1.0)
        point = memory.mark(f"touched {len(touched.cancelled):,}", created)
        touched.active = (
            bound.active_after(touched.by_company)
            if touched.seconds < bound.settings.actor_idle_after
            else bound.most_active
        )
        print(
            f"  {len(touched.cancelled):>10,} cancelled  (+{len(new):,} in {elapsed:.1f} s, "
            f"{len(new) / max(elapsed, 1e-9):,.0f}/s)  RSS {_mib(point.rss_kib)}  peak in chunk "
            f"{_mib(run.rss_peak_kib)}  payment actors active: at most {touched.active:,}",
            flush=True,
        )
        if set(run.figures["statuses"]) - {"200"}:
            print(f"  responses: {_statuses(run)}")
        if not new:
            print(
                f"  the other {len(remaining):,} answered 409: cancelled by requests in flight "
                "when an earlier chunk's wrk stopped (answers never read); touched all the same"
            )
            break
    return touched


# -- storage -----------------------------------------------------------------------------------


async def _verify_postgres(args: argparse.Namespace, created: Created, touched: Touched) -> bool:
    import asyncpg

    schema = f"load_{args.nonce}"  # what load._service names it
    conn = await asyncpg.connect(args.pg_url.split("?")[0], server_settings={"search_path": schema})
    try:
        await conn.execute("CREATE TEMP TABLE ack_created (id TEXT PRIMARY KEY)")
        await conn.copy_records_to_table("ack_created", records=[(i,) for i in created.ids])
        await conn.execute("CREATE TEMP TABLE ack_cancelled (id TEXT PRIMARY KEY)")
        await conn.copy_records_to_table("ack_cancelled", records=[(i,) for i in touched.cancelled])
        rows = await conn.fetchval("SELECT count(*) FROM payments")
        missing = await conn.fetch(
            "SELECT a.id FROM ack_created a LEFT JOIN payments p ON p.id = a.id"
            " WHERE p.id IS NULL ORDER BY a.id"
        )
        uncancelled = await conn.fetch(
            "SELECT a.id FROM ack_cancelled a LEFT JOIN payments p ON p.id = a.id"
            " WHERE p.status IS DISTINCT FROM 'CANCELLED' ORDER BY a.id"
        )
    finally:
        await conn.close()
    return _judge(
        created,
        touched,
        f"the payments table of schema {schema} holds {rows:,} rows",
        [r["id"] for r in missing],
        [r["id"] for r in uncancelled],
    )


async def _verify_api(
    session: aiohttp.ClientSession,
    base: str,
    companies: list[load.Company],
    created: Created,
    touched: Touched,
) -> bool:
    async def listed(company: load.Company) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {company.token}"}
        found: dict[str, str] = {}
        cursor: str | None = None
        while True:
            params = {"limit": str(PAGE), **({"cursor": cursor} if cursor else {})}
            async with session.get(
                f"{base}/api/v1/merchant/payments", params=params, headers=headers
            ) as response:
                body = await load._json(response, 200)
            for p in body.get("items") or body.get("data") or []:
                found[p["id"]] = p["status"]
            cursor = body.get("nextCursor")
            if not cursor:
                return found

    print("listing every payment through the API")
    status: dict[str, str] = {}
    for part in await asyncio.gather(*(listed(c) for c in companies)):
        status.update(part)
    return _judge(
        created,
        touched,
        f"the API lists {len(status):,} payments",
        sorted(i for i in created.ids if i not in status),
        sorted(i for i in touched.cancelled if status.get(i) != "CANCELLED"),
    )


def _judge(
    created: Created, touched: Touched, stored: str, missing: list[str], uncancelled: list[str]
) -> bool:
    print(f"\n{stored}")
    ok = load.report_stored("creates", len(created.ids), missing)
    if touched.cancelled:
        stored_cancels = load.report_stored(
            "cancels", len(touched.cancelled), uncancelled, "not CANCELLED"
        )
        ok = stored_cancels and ok
    if created.unreadable:
        ok = False
        print(f"acknowledged creates without a readable id: {created.unreadable:,}")
    return ok


# -- the run -----------------------------------------------------------------------------------


async def _sign_up(
    session: aiohttp.ClientSession, base: str, args: argparse.Namespace
) -> tuple[list[load.Company], list[str]]:
    companies: list[load.Company] = []
    company_ids: list[str] = []
    for n in range(args.companies):
        company = await load._sign_up(session, base, f"memory-{args.nonce}-{n}@example.com")
        headers = {"Authorization": f"Bearer {company.token}"}
        async with session.get(f"{base}/api/v1/auth/me", headers=headers) as response:
            company_ids.append((await load._json(response, 200))["company"]["id"])
        companies.append(company)
    return companies, company_ids


def _summary(
    args: argparse.Namespace,
    memory: Memory,
    created: Created,
    idle: Checkpoint,
    touched: Touched,
    after: Checkpoint,
    bound: Bound,
) -> bool:
    backend = "a running service" if args.url else args.backend
    limit_kib = args.limit_mb * 1e6 / 1024
    peak = memory.peak_kib()
    print(
        f"\nsummary: {backend}, {args.companies} companies, {args.connections} connections, "
        f"{args.threads} wrk threads"
    )
    rate = len(created.ids) / max(created.seconds, 1e-9)
    print(
        f"  payments created (acknowledged): {len(created.ids):,} in {created.seconds:,.0f} s "
        f"of load ({rate:,.0f}/s)"
    )
    if created.errors:
        print(f"  create answers other than 201: {dict(created.errors)}")
    print("  RSS curve (VmRSS, and VmHWM: the peak so far):")
    print(f"    {'checkpoint':<28} {'payments':>10} {'RSS MiB':>9} {'peak MiB':>9}")
    for c in memory.checkpoints:
        print(f"    {c.label:<28} {c.created:>10,} {c.rss_kib / MIB:>9.1f} {c.hwm_kib / MIB:>9.1f}")
    print(f"  peak RSS (VmHWM): {_mib(peak)}")
    print(f"  RSS after {args.idle:g} s idle: {_mib(idle.rss_kib)}")
    if touched.cancelled:
        print(
            f"  RSS after touching {touched.pool:,} payments ({len(touched.cancelled):,} "
            f"cancels answered 200, {touched.conflicts:,} answered 409, "
            f"{len(touched.cancelled) / max(touched.seconds, 1e-9):,.0f} cancels/s): "
            f"{_mib(after.rss_kib)} (highest sampled during the touch {_mib(touched.peak_kib)})"
        )
        growth = max(touched.peak_kib, after.rss_kib) - idle.rss_kib
        print(
            f"  RSS growth over the touch: {_mib(growth)}, {growth / max(touched.active, 1):,.1f} "
            f"KiB per payment actor that can be active at its end ({touched.active:,})"
        )
    print(f"  what bounds memory: {bound.describe()}")
    if memory.pid is None:
        print("  the server's pid is unknown (give --server-pid): no RSS figures, no verdict")
        return True
    verdicts = [("created and left idle", idle.hwm_kib)]
    if touched.cancelled:
        verdicts.append((f"and {touched.pool:,} of them touched", peak))
    holds = True
    for what, kib in verdicts:
        ok = kib <= limit_kib
        holds = holds and ok
        print(
            f"  target: RSS at most {args.limit_mb:g} MB ({limit_kib / MIB:,.1f} MiB), "
            f"{len(created.ids):,} payments {what}: {'holds' if ok else 'EXCEEDED'} "
            f"(peak {kib * 1024 / 1e6:,.1f} MB)"
        )
    return holds


async def main(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    connector = aiohttp.TCPConnector(limit=64)
    async with load._service(args) as target, aiohttp.ClientSession(connector=connector) as session:
        memory = Memory(target.pid)
        if target.pid is None:
            print("the server's pid is unknown (give --server-pid): RSS is not measured")
        start = memory.mark("started", 0)
        print(f"service at {target.base} (pid {target.pid}): RSS {_mib(start.rss_kib)}")
        print(f"signing up {args.companies} companies through the dev mailbox")
        companies, company_ids = await _sign_up(session, target.base, args)
        signed = memory.mark("signed up", 0)
        bound = Bound.of(company_ids)
        print(f"  RSS {_mib(signed.rss_kib)}")
        print(bound.describe())

        datafile = args.out / "create.data"
        load._write_data(datafile, companies, [])
        created = await _create(target, args, datafile, memory, signed.rss_kib)
        await _quiet("idle", args.idle, memory)
        idle = memory.mark(f"after {args.idle:g} s idle", len(created.ids))
        touched = await _touch(session, target, args, companies, memory, bound, len(created.ids))
        await _quiet("after the touch", args.settle, memory)
        after = memory.mark(f"{args.settle:g} s after the touch", len(created.ids))
        print(f"  RSS {_mib(after.rss_kib)}  peak {_mib(after.hwm_kib)}")

        if args.backend == "postgres" and not args.url:
            stored = await _verify_postgres(args, created, touched)
        else:
            stored = await _verify_api(session, target.base, companies, created, touched)
        holds = _summary(args, memory, created, idle, touched, after, bound)
    print(f"files: {args.out}")
    return 0 if stored and holds else 1


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="postgres")
    parser.add_argument("--payments", type=int, default=1_000_000, help="creates (1,000,000)")
    parser.add_argument("--companies", type=int, default=16)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chunk", type=float, default=30, help="seconds per wrk run (30)")
    parser.add_argument("--idle", type=float, default=20, help="seconds idle after creating (20)")
    parser.add_argument("--touch", type=int, default=200_000, help="payments cancelled (200,000)")
    parser.add_argument("--settle", type=float, default=10, help="seconds after the touch (10)")
    parser.add_argument("--limit-mb", type=float, default=600, help="the RSS target, MB (600)")
    parser.add_argument("--verbose", action="store_true", help="wrk's progress lines each second")
    load.service_arguments(parser)
    args = parser.parse_args()
    if args.connections < args.threads:
        parser.error("--connections must be at least --threads")
    if args.companies < 1 or args.payments < 1:
        parser.error("--companies and --payments must be at least 1")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    args.nonce = f"{stamp.replace('-', '')}{secrets.token_hex(3)}"
    # What load._drive reads besides the above.
    args.weights = load.DEFAULT_WEIGHTS
    args.nonblocking = False
    backend = "url" if args.url else args.backend
    args.out = args.out or ROOT / "var" / "bench" / f"{stamp}-memory-{backend}"
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(main(_arguments())))
