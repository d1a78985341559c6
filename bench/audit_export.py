"""Audit export: GET /api/v1/team/audit/export streams a company's whole trail, and the server's
memory does not grow with the number of entries.

    .venv/bin/python bench/audit_export.py --backend sqlite --counts 1000,10000,100000
    .venv/bin/python bench/audit_export.py --backend postgres --counts 1000,10000,100000

The claim: the export (mps/http/routes/team.py, `export_audit`) reads the chain a chunk of
`audit_chain`'s 1,000 rows at a time and writes each chunk before reading the next, so the
server's peak RSS during a download is about the same for 1,000 entries and for 100,000.
Options: --counts (trail lengths, smallest first, 1000,10000,100000), --formats (jsonl,csv),
--repeat 1 (downloads of each format at each length), and bench/load.py's --pg-url,
--broker-url, --keep, --out. Every file of a run goes to --out, by default
var/bench/<time>-audit-export-<backend>/.

One run (the service is started by bench/load.py's machinery: `run.py` in development mode, a
fresh data dir or Postgres schema, rate limits and access log off):

1. A company signs up through the dev mailbox; opening its session is the trail's first entry.
2. For each N of --counts, the trail is topped up to N entries directly in storage, while the
   server runs: entries built and chained with the service's own code (`AuditEntry`, `link`
   from the head `load_head` reads, `entry_insert`) and written through its `Database`, 1,000
   statements per unit. The company actor keeps its own head in memory; nothing after the
   sign-up asks it to audit anything (the export and verify routes only read), so its head is
   never used again and the chain stays whole.
3. The export is downloaded in each format: the client reads chunks as they come and discards
   them, counting bytes and lines, while the server's VmRSS is read from /proc/<pid>/status
   every 50 ms. Per download: the time, the time to the first body chunk, the bytes,
   entries/s, RSS before, the peak sampled during, and the growth; and "HWM +", the peak the
   kernel recorded over the RSS before (VmHWM, reset through /proc/<pid>/clear_refs before the
   request: it sees what 50 ms sampling misses, to within the kernel's counter batching). The
   smallest N is downloaded once more first, as a warm-up, so that the one-time costs of the
   first full chunk are not counted against it. The jsonl download must have N lines, the csv
   one N + 1 (its header).
4. GET /api/v1/team/audit/verify at the largest N, sampled the same way: its time and `checked`
   (which must be N, and the chain valid).

Exit code 1 when a download's line count or the verdict is not what the trail holds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import secrets
import shlex
import sqlite3
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import load  # noqa: E402
from mps.domain.audit import AuditContext, AuditEntry, link  # noqa: E402
from mps.domain.clock import iso, utcnow  # noqa: E402
from mps.domain.ids import new_id  # noqa: E402
from mps.persistence import audit_store  # noqa: E402
from mps.persistence.database import Database, open_database  # noqa: E402

MIB = 1024
SAMPLE_EVERY = 0.05  # seconds between two readings of the server's VmRSS
UNIT = 1000  # audit_entries inserts per write unit
UNITS_PER_WRITE = 10  # units per Database.write (one transaction)
FORMATS = ("jsonl", "csv")


def _mib(kib: float) -> str:
    return f"{kib / MIB:,.1f} MiB"


# -- the machine and the server ----------------------------------------------------------------


def _machine() -> str:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = f" ({line.partition(':')[2].strip()})"
                break
    return (
        f"nproc {len(os.sched_getaffinity(0))}{model}, Python {platform.python_version()}, "
        f"Linux {platform.release()}, aiohttp {aiohttp.__version__}"
    )


def _database_url(pid: int) -> str:
    """The database the server was started with, from its environment: bench/load.py's
    `_service` gives it a fresh data dir (SQLite) or a URL naming a fresh schema (Postgres)."""
    env: dict[str, str] = {}
    for item in Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace").split("\0"):
        name, sep, value = item.partition("=")
        if sep:
            env[name] = value
    if url := env.get("MPS_DATABASE_URL"):
        return url
    return f"sqlite:///{Path(env['MPS_DATA_DIR']) / 'mps.db'}"


async def _storage(db: Database, url: str) -> str:
    if url.startswith("sqlite"):
        return f"SQLite {sqlite3.sqlite_version}"
    return f"PostgreSQL {await db.fetchval('SHOW server_version')}"


def _rss(pid: int) -> int:
    return load._proc_status(pid).get("VmRSS", 0)


def _reset_peak(pid: int) -> bool:
    """Set the server's VmHWM back to its current RSS (clear_refs "5", Linux 4.0 and later), so
    that VmHWM after a request is the peak during it as the kernel recorded it, not only what
    sampling caught."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


@dataclass
class Rss:
    """The server's VmRSS around one request (KiB): before it, the highest sampled while it
    ran (every SAMPLE_EVERY seconds, and once more at its end), and VmHWM afterwards: the peak
    during the request when VmHWM could be reset before it (`exact`)."""

    before_kib: int
    peak_kib: int
    exact: bool
    samples: int = 0
    after_kib: int = 0
    hwm_kib: int = 0

    @property
    def growth_kib(self) -> int:
        return self.peak_kib - self.before_kib

    @property
    def hwm_growth(self) -> str:
        """VmHWM over the RSS before, MiB ("-" when VmHWM could not be reset)."""
        return f"{(self.hwm_kib - self.before_kib) / MIB:+.1f}" if self.exact else "-"

    def note(self, kib: int) -> None:
        self.samples += 1
        self.peak_kib = max(self.peak_kib, kib)


@contextlib.asynccontextmanager
async def _watched(pid: int) -> AsyncIterator[Rss]:
    """The server's RSS sampled while the body of the `async with` runs."""
    exact = _reset_peak(pid)
    before = _rss(pid)
    rss = Rss(before, before, exact)

    async def sample() -> None:
        while True:
            await asyncio.sleep(SAMPLE_EVERY)
            rss.note(_rss(pid))

    task = asyncio.create_task(sample())
    try:
        yield rss
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        status = load._proc_status(pid)
        rss.note(status.get("VmRSS", 0))
        rss.after_kib, rss.hwm_kib = status.get("VmRSS", 0), status.get("VmHWM", 0)


# -- the trail ---------------------------------------------------------------------------------


@dataclass
class Owner:
    token: str
    company_id: str
    user_id: str


async def _sign_up(session: aiohttp.ClientSession, base: str, nonce: str) -> Owner:
    company = await load._sign_up(session, base, f"audit-{nonce}@example.com")
    headers = {"Authorization": f"Bearer {company.token}"}
    async with session.get(f"{base}/api/v1/auth/me", headers=headers) as response:
        me = await load._json(response, 200)
    return Owner(company.token, me["company"]["id"], me["user"]["id"])


def _entry(context: AuditContext) -> AuditEntry:
    """An entry of the size and shape the service writes (a target, a detail or two)."""
    return AuditEntry(
        id=new_id("aud"),
        at=iso(utcnow()),
        action="bench.entry",
        context=context,
        target_type="payment",
        target_id=new_id("pay"),
        details={"amountMinor": "1500", "currency": "USD"},
    )


async def _fill(db: Database, owner: Owner, total: int) -> tuple[int, float]:
    """Top the company's trail up to `total` entries, chained onto its stored head: the entries
    added and the seconds it took."""
    started = time.perf_counter()
    head = await audit_store.load_head(db, owner.company_id)
    if head.seq > total:
        raise SystemExit(f"the trail already holds {head.seq:,} entries, more than {total:,}")
    first = head.seq
    context = AuditContext("user", owner.user_id, "127.0.0.1")
    while head.seq < total:
        size = min(UNIT * UNITS_PER_WRITE, total - head.seq)
        linked, head = link((_entry(context) for _ in range(size)), head)
        statements = [audit_store.entry_insert(owner.company_id, e) for e in linked]
        units = [statements[i : i + UNIT] for i in range(0, len(statements), UNIT)]
        for outcome in await db.write(units):
            if isinstance(outcome, BaseException):
                raise SystemExit(f"inserting audit entries failed: {outcome!r}")
    return head.seq - first, time.perf_counter() - started


# -- downloads ---------------------------------------------------------------------------------


@dataclass
class Download:
    label: str  # the trail's length, or "warm-up"
    entries: int
    kind: str
    seconds: float
    first_chunk: float  # seconds from the request to the first chunk of the body
    size: int
    lines: int
    chunked: bool
    rss: Rss

    @property
    def expected_lines(self) -> int:
        return self.entries + (1 if self.kind == "csv" else 0)

    @property
    def complete(self) -> bool:
        return self.lines == self.expected_lines


async def _download(
    session: aiohttp.ClientSession,
    base: str,
    pid: int,
    owner: Owner,
    kind: str,
    entries: int,
    label: str,
) -> Download:
    headers = {"Authorization": f"Bearer {owner.token}"}
    url = f"{base}/api/v1/team/audit/export"
    first_chunk = 0.0
    size = lines = 0
    async with _watched(pid) as rss:
        started = time.perf_counter()
        async with session.get(url, params={"format": kind}, headers=headers) as response:
            if response.status != 200:
                await load._json(response, 200)  # exits, showing the answer
            async for chunk in response.content.iter_any():
                if not size:
                    first_chunk = time.perf_counter() - started
                size += len(chunk)
                lines += chunk.count(b"\n")
            chunked = response.headers.get("Transfer-Encoding", "").lower() == "chunked"
        seconds = time.perf_counter() - started
    return Download(label, entries, kind, seconds, first_chunk, size, lines, chunked, rss)


@dataclass
class Verified:
    entries: int
    seconds: float
    valid: bool
    checked: int
    rss: Rss


async def _verify(
    session: aiohttp.ClientSession, base: str, pid: int, owner: Owner, entries: int
) -> Verified:
    headers = {"Authorization": f"Bearer {owner.token}"}
    async with _watched(pid) as rss:
        started = time.perf_counter()
        async with session.get(f"{base}/api/v1/team/audit/verify", headers=headers) as response:
            body = await load._json(response, 200)
        seconds = time.perf_counter() - started
    return Verified(entries, seconds, bool(body["valid"]), int(body["checked"]), rss)


ROW = "  {:>10} {:<5} {:>7} {:>7} {:>6} {:>9} {:>7} {:>8} {:>6} {:>7} {:>6}  {}"  # fmt: skip


def _row_header() -> str:
    return ROW.format(
        "entries", "kind", "seconds", "1st ms", "MiB", "entries/s",
        "RSS MiB", "peak MiB", "growth", "samples", "HWM +", "lines",
    )  # fmt: skip


def _row(d: Download) -> str:
    lines = f"{d.lines:,}" + ("" if d.complete else f" EXPECTED {d.expected_lines:,}")
    return ROW.format(
        d.label,
        d.kind,
        f"{d.seconds:.2f}",
        f"{d.first_chunk * 1000:.1f}",
        f"{d.size / 2**20:,.1f}",
        f"{d.entries / max(d.seconds, 1e-9):,.0f}",
        f"{d.rss.before_kib / MIB:.1f}",
        f"{d.rss.peak_kib / MIB:.1f}",
        f"{d.rss.growth_kib / MIB:+.1f}",
        d.rss.samples,
        d.rss.hwm_growth,
        lines,
    )


# -- the run -----------------------------------------------------------------------------------


def _summary(
    args: argparse.Namespace, downloads: list[Download], verified: Verified, storage: str
) -> None:
    measured = [d for d in downloads if d.label != "warm-up"]
    print(
        f"\nsummary: {storage}, {', '.join(args.formats)}; server VmRSS sampled every "
        f"{SAMPLE_EVERY * 1000:.0f} ms; growth = peak during the download - RSS before it"
    )
    print(_row_header())
    for d in measured:
        print(_row(d))
    print(
        f"  verify at {verified.entries:,} entries: {verified.seconds:.2f} s, checked "
        f"{verified.checked:,}, {'valid' if verified.valid else 'NOT VALID'}, RSS "
        f"{_mib(verified.rss.before_kib)} -> peak {_mib(verified.rss.peak_kib)} "
        f"({verified.rss.growth_kib / MIB:+.1f} MiB sampled, {verified.rss.hwm_growth} by VmHWM)"
    )
    smallest, largest = min(args.counts), max(args.counts)
    for kind in args.formats:
        low = next(d for d in measured if d.kind == kind and d.entries == smallest)
        high = next(d for d in measured if d.kind == kind and d.entries == largest)
        print(
            f"  {kind}: peak RSS growth {low.rss.growth_kib / MIB:+.1f} MiB (VmHWM "
            f"{low.rss.hwm_growth}) at {smallest:,} entries, {high.rss.growth_kib / MIB:+.1f} "
            f"MiB ({high.rss.hwm_growth}) at {largest:,}; the body at "
            f"{largest:,} is {_mib(high.size / 1024)} "
            f"({'chunked' if high.chunked else 'NOT chunked'}): a server holding it whole "
            "would grow by at least that"
        )
    if not all(d.rss.exact for d in downloads):
        print("  VmHWM could not be reset (/proc/<pid>/clear_refs): only sampled peaks")


async def main(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"command: {shlex.join(sys.orig_argv)}")
    print(f"machine: {_machine()}")
    timeout = aiohttp.ClientTimeout(total=None, sock_read=120)
    async with (
        load._service(args) as target,
        aiohttp.ClientSession(timeout=timeout) as session,
    ):
        if target.pid is None:
            raise SystemExit("the server's pid is unknown: no RSS to measure")
        pid = target.pid
        url = _database_url(pid)
        db = open_database(url)
        await db.open()
        try:
            storage = await _storage(db, url)
            print(f"service at {target.base} (pid {pid}, {storage}): RSS {_mib(_rss(pid))}")
            owner = await _sign_up(session, target.base, args.nonce)
            head = await audit_store.load_head(db, owner.company_id)
            print(
                f"signed up company {owner.company_id}: its trail holds {head.seq} entries; "
                f"RSS {_mib(_rss(pid))}"
            )
            downloads: list[Download] = []
            for index, count in enumerate(args.counts):
                added, seconds = await _fill(db, owner, count)
                print(
                    f"trail topped up to {count:,} entries: +{added:,} in {seconds:.1f} s "
                    f"({added / max(seconds, 1e-9):,.0f}/s); server RSS {_mib(_rss(pid))}",
                    flush=True,
                )
                if index == 0:
                    print(_row_header())
                # The first count is downloaded once more first, to warm up (the first full
                # chunk's one-time costs); then each is measured --repeat times.
                labels = [f"{count:,}"] + [f"{count:,} #{n}" for n in range(2, args.repeat + 1)]
                for label in ["warm-up", *labels] if index == 0 else labels:
                    for kind in args.formats:
                        done = await _download(session, target.base, pid, owner, kind, count, label)
                        downloads.append(done)
                        print(_row(done), flush=True)
            verified = await _verify(session, target.base, pid, owner, max(args.counts))
            print(
                f"verify: {verified.seconds:.2f} s, checked {verified.checked:,}, valid "
                f"{verified.valid}, RSS growth {verified.rss.growth_kib / MIB:+.1f} MiB "
                f"(HWM {verified.rss.hwm_growth})"
            )
        finally:
            await db.close()
    _summary(args, downloads, verified, storage)
    print(f"files: {args.out}")
    ok = all(d.complete for d in downloads)
    ok = ok and verified.valid and verified.checked == verified.entries
    return 0 if ok else 1


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument(
        "--counts", default="1000,10000,100000", help="trail lengths (1000,10000,100000)"
    )
    parser.add_argument("--formats", default=",".join(FORMATS), help="jsonl,csv (both)")
    parser.add_argument("--repeat", type=int, default=1, help="downloads of each count (1)")
    parser.add_argument(
        "--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres", help="postgres only"
    )
    parser.add_argument("--broker-url", help="default: RabbitMQ on loopback for postgres")
    parser.add_argument("--keep", action="store_true", help="keep the data dir or schema")
    parser.add_argument("--out", type=Path, help="where a run's files go")
    args = parser.parse_args()
    try:
        args.counts = sorted({int(c.replace("_", "")) for c in args.counts.split(",") if c})
    except ValueError:
        parser.error("--counts must be whole numbers, e.g. 1000,10000,100000")
    if not args.counts or min(args.counts) < 1:
        parser.error("--counts must be at least 1")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    args.formats = [f for f in args.formats.split(",") if f]
    if not args.formats or set(args.formats) - set(FORMATS):
        parser.error("--formats: jsonl, csv or both")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    args.nonce = f"{stamp.replace('-', '')}{secrets.token_hex(3)}"
    # What load._service reads besides the above: always a server of our own.
    args.url = None
    args.server_pid = None
    args.out = args.out or ROOT / "var" / "bench" / f"{stamp}-audit-export-{args.backend}"
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(main(_arguments())))
