"""Load harness: wrk against the whole service, read against a bare aiohttp endpoint.

    .venv/bin/python bench/load.py --backend sqlite --mix create --duration 10
    .venv/bin/python bench/load.py --backend postgres --mix create --duration 10
    .venv/bin/python bench/load.py --backend postgres --mix get --duration 10
    .venv/bin/python bench/load.py --backend postgres --mix list --duration 10
    .venv/bin/python bench/load.py --backend postgres --mix mixed --companies 8 --profile
    .venv/bin/python bench/load.py --url http://127.0.0.1:8080 --mix list   # a running service

Mixes: create, get, list, checkout (pays multi-use links with the test card), cancel, refund
(1 minor unit at a time from a pool of paid payments), and mixed (--weights, by default
create=20,get=50,list=20,checkout=5,cancel=5; refund=N adds refunds). Options:
--connections 64 --threads 2 (wrk's -c and -t), --companies 4 (the load is spread over that
many companies, each signed up through the real flow), --seed-seconds, --refund-payments 256
(the paid payments the refunds are spread over), --bare-duration, --no-bare, --profile (and
--nonblocking), --keep (the data dir or schema), --out DIR. Every file of a run (wrk's
output, the ids it collected, the server's log, the profile) goes to --out, by default
var/bench/<time>-<mix>-<backend>/. The exit code is 1 when an acknowledged write is missing.

One run:

1. The bare endpoint (bench/bare.py, its own process) is loaded with the same wrk settings and
   the same Lua script, so the service's figures can be read as multiples of what aiohttp and
   the loop cost on this machine right now (it is shared and noisy; absolute figures drift).
2. The service starts (`run.py`, development mode for the dev mailbox, a fresh temporary data
   dir, rate limits and access log off; with --backend postgres a fresh schema and RabbitMQ),
   or --url names one already running on loopback (its pid is found by its listening port, or
   given with --server-pid, for the RSS figure and the profile).
3. Companies sign up (signup, code from GET /dev/mailbox, otp/verify). The mixes that read or
   cancel existing payments first run the create mix for --seed-seconds; the payments stored
   then (listed through the API) are the ones wrk gets and cancels. checkout pays one
   multi-use link per company. refund (or refund=N in --weights) creates and pays
   --refund-payments payments of 1,000,000.00 USD spread over the companies (32 at a time):
   the service serializes the refunds of one payment (each waits for the one before to
   commit), so each wrk thread walks the pool round-robin from its own start.
4. wrk drives the mix (bench/wrk/mix.lua: a unique Idempotency-Key per POST, tokens rotated);
   meanwhile a line a second shows the server's RSS and CPU and wrk's CPU, so a run where
   wrk, not the service, is the bottleneck shows itself. With --profile, py-spy samples the
   server for the same time (bench/flame.py turns its stacks into a summary and an SVG).
5. Durability: every create answered 201, every checkout answered PAID, every payment
   answered CANCELLED and every refund answered 201 is looked for in what the service lists
   afterwards (cursor paging over every company's payments and refunds); "acknowledged creates
   stored: N/N" (and refunds, ...) and the exit code say whether all are.

Open loop (--rate, --find-rate; the create mix only):

    .venv/bin/python bench/load.py --backend sqlite --rate 1000 --duration 8
    .venv/bin/python bench/load.py --backend sqlite --find-rate --duration 8 --open-connections 1024
    .venv/bin/python bench/load.py --backend sqlite --rate 1000 --max-in-flight 32 \\
        --open-connections 1024

wrk is closed-loop, so it hides queueing: while the service stalls, wrk's connections wait and
send nothing, and the requests that would have arrived meanwhile are never timed (coordinated
omission). In the open loop (bench/open_loop.py says how, and why a Python generator) creates
are due on a fixed schedule, --rate a second, and each is timed from its due time to its answer.
--rate R runs at R for --duration; --find-rate searches the highest rate held (every create
answered 201, p99 <= --p99-ms, 30 by default, and the generator's send lag p99 <= 5 ms) in
--step-seconds steps, doubling from --rate (200 when not given) until a step is not held, then
halving the bracket --search-steps times. Then the service runs at the held rate and at
--overload (2) times it, each time after the bare endpoint at the same rate: the bare
endpoint's p99 shows the generator held the schedule (were it the limit, the bare endpoint
would show it too), and the service's p50 and p99 are printed as multiples of the bare's. Past
what the node can serve, the excess should come back 503 overloaded with Retry-After, fast
(MPS_MAX_IN_FLIGHT, mps/http/admission.py; --max-in-flight sets it for the run, 0 turns it
off), the accepted creates with a bounded p99, and every acknowledged create stored: the run
prints the accepted and the 503 latencies apart, and the 503s that carried Retry-After.
--processes (2) generator processes share the rate, each with at most --open-connections (256)
connections; give more (1024) for an overload run, or the generator's own cap, not the
service, holds the excess back.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import secrets
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
MIXES = ("create", "get", "list", "checkout", "cancel", "refund", "mixed")
DEFAULT_WEIGHTS = "create=20,get=50,list=20,checkout=5,cancel=5"
PAGE = 100
# A payment of the refund pool: 1 minor unit per refund, so it never runs out (a 409 would).
REFUND_POOL_AMOUNT = "100000000"
# Creates and payments in flight while the refund pool is prepared.
PREPARE_IN_FLIGHT = 32
# Tries of a pool payment's checkout that answers 404 just after the payment's 201.
PAY_ATTEMPTS = 5
# Reads of the dev mailbox before a sign-up's code is given up on.
MAILBOX_TRIES = 100
TEST_CARD = {"number": "4242424242424242", "expMonth": 12, "expYear": 2099, "cvc": "123"}
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# -- processes ---------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process in KiB ({} once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    found = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0])
    return found


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    # utime and stime are fields 14 and 15 of stat; fields[0] here is field 3.
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def _children(pid: int) -> list[int]:
    """The child processes of `pid` (Linux's /proc): a `--workers` supervisor's workers."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                found += [
                    int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()
                ]
    return found


def _group(pid: int) -> list[int]:
    """A server's processes: itself and its workers (none but itself without --workers)."""
    return [pid, *_children(pid)]


def _group_cpu(pids: Sequence[int]) -> float:
    return sum(_cpu_seconds(pid) for pid in pids)


def _infrastructure() -> list[int]:
    """Postgres' and RabbitMQ's processes on this machine (the shared components a create uses;
    whatever else uses them meanwhile is counted too)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if (proc / "comm").read_text().strip() in ("postgres", "beam.smp"):
                    found.append(int(proc.name))
    return found


def _machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine, all cores, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle and iowait
    total = sum(values[:8])  # guest time is counted in user already
    return (total - idle) / _CLOCK_TICKS, total / _CLOCK_TICKS


def _listener_pid(port: int) -> int | None:
    """The pid of the process listening on this TCP port, where /proc lets us see it."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                cols = line.split()
                if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{cols[9]}]")
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd) in inodes:
                    return int(proc.name)
    return None


async def _wait_up(base: str, probe: str, process: asyncio.subprocess.Process | None) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(300):
            if process is not None and process.returncode is not None:
                raise SystemExit(f"the server exited with {process.returncode} while starting")
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(base + probe) as response:
                    if response.status == 200:
                        return
            await asyncio.sleep(0.1)
    raise SystemExit(f"{base} did not come up")


@contextlib.asynccontextmanager
async def _process(args: list[str], log: Path, env: dict[str, str]) -> AsyncIterator[Any]:
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            *args, env=env, stdout=out, stderr=asyncio.subprocess.STDOUT, cwd=ROOT
        )
        try:
            yield process
        finally:
            if process.returncode is None:
                process.terminate()
                try:
                    await asyncio.wait_for(process.wait(), 15)
                except TimeoutError:
                    process.kill()
                    await process.wait()


@dataclass
class Target:
    base: str
    # The server's process, for its RSS, CPU and profile; None when it cannot be found.
    pid: int | None


# -- the service's API -------------------------------------------------------------------------


@dataclass
class Company:
    token: str
    links: list[str] = field(default_factory=list)


async def _json(response: aiohttp.ClientResponse, expect: int) -> dict[str, Any]:
    raw = await response.read()
    if response.status != expect:
        text = raw[:500].decode(errors="replace")
        raise SystemExit(f"{response.method} {response.url} answered {response.status}: {text}")
    body: dict[str, Any] = orjson.loads(raw)
    return body


async def _sign_up(session: aiohttp.ClientSession, base: str, email: str) -> Company:
    async with session.post(
        f"{base}/api/v1/auth/signup", json={"companyName": "Load Ltd", "email": email}
    ) as response:
        login_id = (await _json(response, 201))["loginId"]
    # With --workers the code is in the mailbox of the worker that sent it: a new connection
    # each time reaches one worker or another.
    for _ in range(MAILBOX_TRIES):
        async with session.get(
            f"{base}/api/v1/dev/mailbox", params={"to": email}, headers={"Connection": "close"}
        ) as response:
            if response.status == 404:
                raise SystemExit("no dev mailbox: the service must run in development mode")
            mail = (await _json(response, 200)).get("data") or []
        if mail:
            break
        await asyncio.sleep(0.05)
    else:
        raise SystemExit(f"no sign-up code for {email} in any worker's mailbox")
    code = mail[0]["otp"]
    async with session.post(
        f"{base}/api/v1/auth/otp/verify", json={"loginId": login_id, "code": code}
    ) as response:
        return Company((await _json(response, 200))["sessionToken"])


async def _create_link(session: aiohttp.ClientSession, base: str, company: Company) -> str:
    body = {
        "amountMinor": "1500",
        "currency": "USD",
        "description": "load checkout",
        "allowMultiplePayments": True,
        "noExpiry": True,
    }
    headers = {"Authorization": f"Bearer {company.token}"}
    async with session.post(
        f"{base}/api/v1/merchant/payments", json=body, headers=headers
    ) as response:
        reference: str = (await _json(response, 201))["reference"]
        return reference


async def _paid_payment(
    session: aiohttp.ClientSession,
    base: str,
    company: Company,
    in_flight: asyncio.Semaphore,
    late: list[str],
) -> str:
    """A payment of the refund pool: created, then paid with the test card on its checkout.

    On SQLite the checkout of a payment just answered 201 has been seen to answer 404 ("No such
    payment link") and 200 a moment later: the pay is tried again a few times, and `late` gets
    the reference, for the harness to say so."""
    body = {"amountMinor": REFUND_POOL_AMOUNT, "currency": "USD", "description": "load refunds"}
    headers = {"Authorization": f"Bearer {company.token}"}
    async with in_flight:
        async with session.post(
            f"{base}/api/v1/merchant/payments", json=body, headers=headers
        ) as response:
            payment = await _json(response, 201)
        url = f"{base}/api/v1/checkout/{payment['reference']}/pay"
        for attempt in range(PAY_ATTEMPTS):
            async with session.post(url, json={"card": TEST_CARD}) as response:
                if response.status == 404 and attempt < PAY_ATTEMPTS - 1:
                    await response.read()
                else:
                    paid = await _json(response, 200)
                    break
            if attempt == 0:
                late.append(payment["reference"])
            await asyncio.sleep(0.05 * (attempt + 1))
    if paid.get("status") != "PAID":
        raise SystemExit(f"paying {payment['reference']} answered {paid}")
    payment_id: str = payment["id"]
    return payment_id


async def _stored(
    session: aiohttp.ClientSession, base: str, company: Company, what: str = "payments"
) -> list[dict[str, Any]]:
    """Every payment (or refund) of the company, newest first, through the API's cursor
    paging."""
    headers = {"Authorization": f"Bearer {company.token}"}
    rows: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = {"limit": str(PAGE), **({"cursor": cursor} if cursor else {})}
        async with session.get(
            f"{base}/api/v1/merchant/{what}", params=params, headers=headers
        ) as response:
            body = await _json(response, 200)
        rows.extend(body.get("items") or body.get("data") or [])
        cursor = body.get("nextCursor")
        if not cursor:
            return rows


# -- wrk ---------------------------------------------------------------------------------------


@dataclass
class Run:
    label: str
    figures: dict[str, Any]
    created: list[str]
    paid: list[str]
    cancelled: list[str]
    refunded: list[str]
    samples: dict[str, str]
    unreadable: list[str]
    rss_start_kib: int = 0
    rss_peak_kib: int = 0
    cpu_share: float = 0.0
    # Postgres' and RabbitMQ's CPU seconds per second over the run.
    infra_share: float = 0.0

    @property
    def rps(self) -> float:
        return float(self.figures["requests"]) / (self.figures["durationUs"] / 1e6)

    @property
    def cpu_per_request(self) -> float:
        """Microseconds of the server's CPU (all its threads, all its workers) per request."""
        return self.cpu_share / max(self.rps, 1e-9) * 1e6

    @property
    def infra_per_request(self) -> float:
        """Microseconds of Postgres' and RabbitMQ's CPU per request."""
        return self.infra_share / max(self.rps, 1e-9) * 1e6

    def latency_ms(self, name: str) -> float:
        return float(self.figures["latencyUs"][name]) / 1000


async def _drive(
    target: Target,
    mix: str,
    seconds: float,
    args: argparse.Namespace,
    datafile: Path,
    label: str,
    profile: Path | None = None,
) -> Run:
    prefix = args.out / label
    command = [
        args.wrk,
        f"-t{args.threads}",
        f"-c{args.connections}",
        f"-d{seconds:g}s",
        "--timeout",
        "10s",
        "-s",
        str(BENCH / "wrk" / "mix.lua"),
        target.base,
        "--",
        mix,
        str(datafile),
        str(prefix),
        f"{args.nonce}{label}",
        str(args.threads),
        args.weights,
    ]
    print(f"{label}: wrk -t{args.threads} -c{args.connections} -d{seconds:g}s, mix {mix}")
    spy = await _start_profile(target, seconds, profile, args.nonblocking) if profile else None
    with (args.out / f"{label}.wrk.txt").open("wb") as out:
        wrk = await asyncio.create_subprocess_exec(*command, stdout=out, stderr=out)
        rss_start, rss_peak, cpu, infra = await _watch(wrk, target.pid, seconds)
    if wrk.returncode != 0:
        raise SystemExit(f"wrk failed: {(args.out / f'{label}.wrk.txt').read_text()}")
    if spy is not None and profile is not None:
        await _finish_profile(spy, profile)

    run = _read_run(label, prefix)
    run.rss_start_kib, run.rss_peak_kib, run.cpu_share = rss_start, rss_peak, cpu
    run.infra_share = infra
    return run


def _read_run(label: str, prefix: Path) -> Run:
    """What mix.lua's done() wrote: figures, acknowledged ids, one body per error status."""

    def lines(suffix: str) -> list[str]:
        found = []
        for path in sorted(prefix.parent.glob(f"{prefix.name}.*.{suffix}")):
            found += path.read_bytes().decode(errors="replace").splitlines()
        return found

    samples = {}
    for line in lines("samples"):
        status, _, body = line.partition("\t")
        samples[status] = body
    figures = orjson.loads(Path(f"{prefix}.json").read_bytes())
    return Run(
        label,
        figures,
        lines("created"),
        lines("paid"),
        lines("cancelled"),
        lines("refunded"),
        samples,
        lines("unreadable"),
    )


async def _watch(
    wrk: asyncio.subprocess.Process, pid: int | None, seconds: float
) -> tuple[int, int, float, float]:
    """A progress line a second until wrk exits. Returns the server's RSS at the start and its
    peak (KiB, sampled each second), and its CPU seconds per second over the run, and
    Postgres' and RabbitMQ's. A server's figures are those of all its processes (its workers
    too, with --workers)."""
    started = time.monotonic()
    group = _group(pid) if pid else []
    infra = _infrastructure()
    infra_cpu0 = _group_cpu(infra)
    rss_start = sum(_proc_status(p).get("VmRSS", 0) for p in group)
    peak = rss_start
    server_cpu0 = server_cpu = _group_cpu(group)
    wrk_cpu = _cpu_seconds(wrk.pid)
    machine = _machine_busy()
    tick = started
    while wrk.returncode is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wrk.wait(), 1.0)
        now = time.monotonic()
        elapsed = now - tick
        if wrk.returncode is not None and elapsed < 0.5:
            break  # wrk has just finished: a fraction of a second says nothing
        tick = now
        parts = [f"  {now - started:5.1f}/{seconds:g} s"]
        if pid:
            rss = sum(_proc_status(p).get("VmRSS", 0) for p in group)
            peak = max(peak, rss)
            cpu = _group_cpu(group)
            parts.append(
                f"server RSS {rss / 1024:7.1f} MiB  CPU {(cpu - server_cpu) / elapsed:4.0%}"
            )
            server_cpu = cpu
        if wrk.returncode is None:
            cpu = _cpu_seconds(wrk.pid)
            parts.append(f"wrk CPU {(cpu - wrk_cpu) / elapsed:4.0%}")
            wrk_cpu = cpu
        busy, total = _machine_busy()
        # The share of all cores in use: the database and everything else on the machine too.
        parts.append(f"machine {(busy - machine[0]) / max(total - machine[1], 1e-9):4.0%}")
        machine = (busy, total)
        print("  ".join(parts), flush=True)
    elapsed = max(time.monotonic() - started, 1e-9)
    mean_cpu = (server_cpu - server_cpu0) / elapsed
    # Processes that started during the run (a new backend) began at 0 and count whole.
    infra_cpu = _group_cpu(infra) + _group_cpu([p for p in _infrastructure() if p not in infra])
    return rss_start, peak, mean_cpu, (infra_cpu - infra_cpu0) / elapsed


# -- profile -----------------------------------------------------------------------------------


async def _start_profile(
    target: Target, seconds: float, out: Path, nonblocking: bool
) -> asyncio.subprocess.Process | None:
    if target.pid is None:
        print("  --profile: the server's pid is unknown (give --server-pid); not profiling")
        return None
    spy = ROOT / ".venv" / "bin" / "py-spy"
    command = [
        str(spy) if spy.exists() else "py-spy",
        "record",
        "--pid",
        str(target.pid),
        "--duration",
        str(max(1, int(seconds))),
        "--rate",
        "100",
        "--format",
        "raw",
        "--output",
        str(out.with_suffix(".txt")),
    ]
    # py-spy pauses the server for each sample (100 a second, some microseconds each: the
    # figures do not move); without the pause it reads stacks as they change, and some tear.
    if nonblocking:
        command.append("--nonblocking")
    try:
        return await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
    except OSError as exc:
        print(f"  --profile: could not run py-spy: {exc}")
        return None


async def _finish_profile(spy: asyncio.subprocess.Process, out: Path) -> None:
    stdout, _ = await spy.communicate()
    raw = out.with_suffix(".txt")
    if spy.returncode != 0 or not raw.exists():
        text = stdout.decode(errors="replace").strip()
        hint = ""
        if "ermission" in text or "ptrace" in text.lower():
            hint = (
                " (ptrace is not permitted here: run as root, with CAP_SYS_PTRACE, "
                "or with kernel.yama.ptrace_scope=0)"
            )
        print(f"  --profile: py-spy did not record{hint}: {text[-400:]}")


async def _summarize_profile(out: Path) -> None:
    raw = out.with_suffix(".txt")
    if not raw.exists():
        return
    print(f"\nprofile of the server during the run (py-spy, {raw}):")
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(BENCH / "flame.py"), str(raw), "--svg", str(out), "--top", "20"
    )
    await process.wait()


# -- the run -----------------------------------------------------------------------------------


async def _bare(args: argparse.Namespace, datafile: Path) -> Run | None:
    if args.no_bare:
        return None
    port = _free_port()
    command = [
        sys.executable,
        str(BENCH / "bare.py"),
        "--port",
        str(port),
        "--loop",
        args.bare_loop,
    ]
    async with _process(command, args.out / "bare.log", dict(os.environ)) as process:
        target = Target(f"http://127.0.0.1:{port}", process.pid)
        await _wait_up(target.base, "/", process)
        return await _drive(
            target, "bare", args.bare_duration or args.duration, args, datafile, "bare"
        )


@contextlib.asynccontextmanager
async def _service(args: argparse.Namespace) -> AsyncIterator[Target]:
    if args.url:
        base = args.url.rstrip("/")
        port = int(base.rsplit(":", 1)[1]) if base.count(":") == 2 else 80
        await _wait_up(base, "/api/v1/health/live", None)
        yield Target(base, args.server_pid or _listener_pid(port))
        return
    port = _free_port()
    data_dir = Path(tempfile.mkdtemp(prefix="mps-load-"))
    env = {
        **os.environ,
        "MPS_PORT": str(port),
        "MPS_DATA_DIR": str(data_dir),
        "MPS_MODE": "development",
        "MPS_RATE_LIMIT_SCALE": "0",
        "MPS_ACCESS_LOG": "off",
    }
    if args.max_in_flight is not None:
        env["MPS_MAX_IN_FLIGHT"] = str(args.max_in_flight)
    schema = None
    workers = args.workers_now
    cluster = None
    if args.backend == "postgres":
        schema = f"load_{args.nonce}_w{workers}"
        sep = "&" if "?" in args.pg_url else "?"
        env["MPS_DATABASE_URL"] = f"{args.pg_url}{sep}schema={schema}"
        env["MPS_BROKER_URL"] = args.broker_url or "amqp://guest:guest@127.0.0.1:5672/"
        # A cluster of one, as the results in bench/RESULTS.md were measured, or of the workers,
        # with queues of its own on the broker.
        env["MPS_CLUSTER"] = "on"
        cluster = env["MPS_CLUSTER_NAME"] = f"load-{args.nonce}-w{workers}"
    elif args.broker_url:
        env["MPS_BROKER_URL"] = args.broker_url
    try:
        command = [sys.executable, str(ROOT / "run.py"), "--workers", str(workers)]
        log = args.out / ("server.log" if workers == 1 else f"server-w{workers}.log")
        async with _process(command, log, env) as process:
            target = Target(f"http://127.0.0.1:{port}", process.pid)
            await _wait_up(target.base, "/api/v1/health/live", process)
            if workers > 1:
                await _wait_workers(target.base, workers, process)
            yield target
    finally:
        if args.keep:
            print(f"kept: data dir {data_dir}" + (f", schema {schema}" if schema else ""))
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
            if schema:
                await _drop_schema(args.pg_url, schema)
            if cluster:
                await _delete_cluster(env["MPS_BROKER_URL"], cluster)


async def _wait_workers(base: str, workers: int, process: asyncio.subprocess.Process) -> None:
    """Wait until `workers` nodes answer on the shared port and own every shard between them,
    each its even share at most, so a run starts balanced (new connections reach one worker or
    another)."""
    from mps.domain.shards import SHARD_COUNT

    share = -(-SHARD_COUNT // workers)
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session:
        for _ in range(600):
            if process.returncode is not None:
                raise SystemExit(f"the server exited with {process.returncode} while starting")
            views: dict[str, list[int]] = {}
            for _ in range(16 * workers):
                with contextlib.suppress(aiohttp.ClientError):
                    async with session.get(f"{base}/api/v1/health") as response:
                        node = (await response.json())["node"]
                        views[node["id"]] = node.get("ownedShards", [])
            every = sorted(s for shards in views.values() for s in shards)
            balanced = all(0 < len(v) <= share for v in views.values())
            if len(views) == workers and every == list(range(SHARD_COUNT)) and balanced:
                print(f"  {workers} workers own the shards: {[len(v) for v in views.values()]}")
                return
            await asyncio.sleep(0.1)
    raise SystemExit(f"{base}: {workers} workers did not come to own the shards")


async def _delete_cluster(broker_url: str, name: str) -> None:
    from mps.cluster.node import delete_cluster

    with contextlib.suppress(Exception):
        await delete_cluster(broker_url, name)


async def _floor(args: argparse.Namespace) -> Run:
    """The floor server (bench/floor.py) loaded with the same wrk settings and tokens per
    company, in a schema of its own that it drops when it stops."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench import floor

    port = _free_port()
    command = floor.floor_command(port, args.pg_url, f"floor_{args.nonce}")
    secret = secrets.token_urlsafe(32)
    env = {**os.environ, floor.SECRET_VARIABLE: secret}
    async with _process(command, args.out / "floor.log", env) as process:
        target = Target(f"http://127.0.0.1:{port}", process.pid)
        await _wait_up(target.base, "/", process)
        datafile = args.out / "floor.data"
        tokens = floor.floor_tokens(secret.encode(), args.companies)
        datafile.write_text("".join(f"T {token}\n" for token in tokens))
        return await _drive(target, "create", args.duration, args, datafile, "floor")


async def _drop_schema(url: str, schema: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(url.split("?")[0])
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


def _write_data(
    path: Path,
    companies: list[Company],
    pool: list[tuple[int, str]],
    refund_pool: Sequence[tuple[int, str]] = (),
) -> None:
    lines = [f"T {c.token}" for c in companies]
    lines += [f"P {index} {payment_id}" for index, payment_id in pool]
    lines += [f"L {ref}" for c in companies for ref in c.links]
    lines += [f"R {index} {payment_id}" for index, payment_id in refund_pool]
    path.write_text("\n".join(lines) + "\n")


@dataclass
class Check:
    """What the service acknowledged, to be found in what it stores."""

    created: set[str] = field(default_factory=set)
    paid: set[str] = field(default_factory=set)
    cancelled: set[str] = field(default_factory=set)
    refunded: set[str] = field(default_factory=set)
    # 201 answers whose body had no readable id: nothing to look for, so they fail the check.
    unreadable: int = 0

    def add(self, run: Run) -> None:
        self.created.update(run.created)
        self.paid.update(run.paid)
        self.cancelled.update(run.cancelled)
        self.refunded.update(run.refunded)
        self.unreadable += len(run.unreadable)


async def _stored_all(
    session: aiohttp.ClientSession, base: str, companies: list[Company], what: str = "payments"
) -> list[list[dict[str, Any]]]:
    return list(await asyncio.gather(*(_stored(session, base, c, what) for c in companies)))


def report_stored(
    name: str, acknowledged: int, missing: list[str], absent: str = "missing"
) -> bool:
    """Print how many of the `acknowledged` writes of `name` are stored, and the first of the
    `missing` ones (`absent` says how they fell short); whether none is."""
    print(f"acknowledged {name} stored: {acknowledged - len(missing):,}/{acknowledged:,}")
    if missing:
        print(f"  {absent} ({len(missing):,}), first: {', '.join(missing[:5])}")
    return not missing


def _verify(
    check: Check, stored: list[list[dict[str, Any]]], refunds: list[list[dict[str, Any]]]
) -> bool:
    by_id = {p["id"]: p for rows in stored for p in rows}
    by_ref = {p["reference"]: p for rows in stored for p in rows}
    refund_ids = {r["id"] for rows in refunds for r in rows}
    ok = True
    stored_as: dict[str, Callable[[str], bool]] = {
        "creates": lambda i: i in by_id,
        "checkouts": lambda r: r in by_ref and by_ref[r]["status"] == "PAID",
        "cancels": lambda i: i in by_id and by_id[i]["status"] == "CANCELLED",
        "refunds": lambda i: i in refund_ids,
    }
    figures = [
        ("creates", check.created),
        ("checkouts", check.paid),
        ("cancels", check.cancelled),
        ("refunds", check.refunded),
    ]
    for name, acknowledged in figures:
        if not acknowledged and name != "creates":
            continue
        missing = sorted(x for x in acknowledged if not stored_as[name](x))
        ok = report_stored(name, len(acknowledged), missing) and ok
    if check.unreadable:
        ok = False
        print(f"acknowledged writes without a readable id: {check.unreadable} (*.unreadable)")
    return ok


def _weights(text: str) -> dict[str, int]:
    """The mixed blend as mix.lua's parse_weights reads it: name=weight pairs."""
    return {name: int(weight) for name, weight in re.findall(r"([A-Za-z]+)=(\d+)", text)}


def _refunds(args: argparse.Namespace) -> bool:
    """Whether the run refunds, so needs the pool of paid payments."""
    return args.mix == "refund" or (
        args.mix == "mixed" and _weights(args.weights).get("refund", 0) > 0
    )


async def _prepare(
    session: aiohttp.ClientSession, target: Target, args: argparse.Namespace, check: Check
) -> tuple[list[Company], list[tuple[int, str]], list[tuple[int, str]]]:
    print(f"signing up {args.companies} companies through the dev mailbox")
    companies = [
        await _sign_up(session, target.base, f"load-{args.nonce}-{n}@example.com")
        for n in range(args.companies)
    ]
    if args.mix in ("checkout", "mixed"):
        for company in companies:
            company.links = [await _create_link(session, target.base, company)]
    refund_pool: list[tuple[int, str]] = []
    if _refunds(args) and args.refund_payments > 0:
        # Payment n belongs to company n mod --companies: consecutive ones in the pool are of
        # different companies, whose ledgers also take each refund's reservation in turn.
        started = time.monotonic()
        in_flight = asyncio.Semaphore(PREPARE_IN_FLIGHT)
        late: list[str] = []
        owners = [n % len(companies) for n in range(args.refund_payments)]
        ids = await asyncio.gather(
            *(_paid_payment(session, target.base, companies[i], in_flight, late) for i in owners)
        )
        refund_pool = [(i + 1, payment_id) for i, payment_id in zip(owners, ids, strict=True)]
        check.created.update(ids)
        print(
            f"  paid {len(refund_pool)} payments to refund "
            f"({time.monotonic() - started:.1f} s, {PREPARE_IN_FLIGHT} in flight)"
        )
        if late:
            print(
                f"  {len(late)} of their checkouts answered 404 just after the payment's 201, "
                f"and 200 on a later try (the service did not yet find the payment it had "
                f"acknowledged); "
                f"the first: {', '.join(late[:3])}"
            )
    pool: list[tuple[int, str]] = []
    seed = args.seed_seconds
    if seed is None:
        # cancel takes each payment once: seed about as many as the run can cancel.
        seed = args.duration + 2 if args.mix == "cancel" else 2
    if args.mix in ("get", "list", "cancel", "mixed") and seed > 0:
        datafile = args.out / "seed.data"
        _write_data(datafile, companies, [], [])
        run = await _drive(target, "create", seed, args, datafile, "seed")
        check.add(run)
        print(f"  seeded {len(run.created)} payments ({run.rps:,.0f} creates/s)")
        links = {ref for c in companies for ref in c.links}
        for index, rows in enumerate(await _stored_all(session, target.base, companies), 1):
            pool += [
                (index, p["id"])
                for p in rows
                if p["reference"] not in links and p["status"] == "PENDING"
            ]
    return companies, pool, refund_pool


# The persistence actor's histograms (mps.metrics), read from the development server's /metrics.
_COMMIT_SERIES = (
    "mps_group_commit_units_count",
    "mps_group_commit_units_sum",
    "mps_group_commit_seconds_sum",
)


async def _commit_totals(session: aiohttp.ClientSession, base: str) -> dict[str, float] | None:
    """The group commits so far: how many, their units and seconds in all; None when the
    service shows no /metrics (a production server given with --url)."""
    try:
        async with session.get(f"{base}/metrics") as response:
            if response.status != 200:
                return None
            text = await response.text()
    except aiohttp.ClientError:
        return None
    totals: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        # Every series carries the node's label (mps.metrics): the name ends at its brace.
        name = name.partition("{")[0]
        if name in _COMMIT_SERIES:
            totals[name] = float(value)
    return totals if len(totals) == len(_COMMIT_SERIES) else None


def _report_commits(before: dict[str, float] | None, after: dict[str, float] | None) -> None:
    """The group commits of the run: what the writer did per batch and per unit. A create's
    reply waits for its batch's commit, so this is where a commit-bound mix spends its time."""
    if before is None or after is None:
        return
    commits = after["mps_group_commit_units_count"] - before["mps_group_commit_units_count"]
    units = after["mps_group_commit_units_sum"] - before["mps_group_commit_units_sum"]
    seconds = after["mps_group_commit_seconds_sum"] - before["mps_group_commit_seconds_sum"]
    if commits <= 0 or units <= 0:
        return
    print(
        f"  group commits: {commits:,.0f}, {units / commits:.1f} units and "
        f"{seconds / commits * 1000:.1f} ms each, {seconds / units * 1000:.3f} ms per unit"
    )


def _report(args: argparse.Namespace, run: Run, bare: Run | None, floor: Run | None = None) -> None:
    backend = "running service" if args.url else args.backend
    print()
    print(
        f"mix {args.mix} on {backend}: {run.figures['durationUs'] / 1e6:.1f} s, "
        f"{args.connections} connections, {args.threads} wrk threads, "
        f"{args.companies} companies"
    )
    # What one request of the mix does (mixed: requests of every kind).
    unit = "req" if args.mix == "mixed" else f"{args.mix}s"
    rows: list[tuple[str, float, float | None, str]] = [
        (f"throughput {unit}/s", run.rps, bare.rps if bare else None, ",.0f"),
        ("latency p50 ms", run.latency_ms("p50"), bare.latency_ms("p50") if bare else None, ".2f"),
        ("latency p95 ms", run.latency_ms("p95"), bare.latency_ms("p95") if bare else None, ".2f"),
        ("latency p99 ms", run.latency_ms("p99"), bare.latency_ms("p99") if bare else None, ".2f"),
        (
            "peak RSS MiB",
            run.rss_peak_kib / 1024,
            bare.rss_peak_kib / 1024 if bare else None,
            ".1f",
        ),
        ("server CPU %", run.cpu_share * 100, bare.cpu_share * 100 if bare else None, ".0f"),
        ("server CPU us/req", run.cpu_per_request, bare.cpu_per_request if bare else None, ".0f"),
    ]
    print(f"  {'':<20} {'service':>10} {'bare':>10} {'service/bare':>13}")
    for name, mine, theirs, fmt in rows:
        other = f"{theirs:>10{fmt}}" if theirs is not None else f"{'-':>10}"
        ratio = f"{mine / theirs:>13.2f}" if theirs else f"{'-':>13}"
        print(f"  {name:<20} {mine:>10{fmt}} {other} {ratio}")
    statuses = ", ".join(f"{s}: {n:,}" for s, n in sorted(run.figures["statuses"].items()))
    print(f"  responses by status: {statuses or 'none'}")
    sockets = {k: v for k, v in run.figures["socketErrors"].items() if v}
    print(f"  socket errors: {sockets or 'none'}")
    for status, body in sorted(run.samples.items()):
        print(f"  a {status} body: {body[:300]}")
    if run.figures.get("cancelPoolWrapped"):
        print("  the cancel pool ran out (the 409s are repeat cancels): raise --seed-seconds")
    if run.unreadable:
        print(f"  201 answers without a readable payment or refund id: {len(run.unreadable)}")
        print(f"    the first: {run.unreadable[0][:600]}")
    if run.rss_start_kib:
        print(f"  server RSS at the start of the run: {run.rss_start_kib / 1024:.1f} MiB")
    if floor is not None:
        print(
            f"  against the floor: {run.rps / floor.rps:.2f} x its {floor.rps:,.0f}/s, "
            f"p99 {run.latency_ms('p99'):.1f} ms against its {floor.latency_ms('p99'):.1f} ms, "
            f"CPU {run.cpu_per_request:.0f} us/req against its {floor.cpu_per_request:.0f}"
        )
    if run.infra_share:
        print(
            f"  Postgres and RabbitMQ CPU: {run.infra_share:.0%}, "
            f"{run.infra_per_request:.0f} us/req (whoever else used them meanwhile included)"
        )


# -- open loop -------------------------------------------------------------------------------


def _open_loop() -> Any:
    """bench/open_loop.py, importable whether this file runs as a script or as bench.load."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench import open_loop

    return open_loop


def _open_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("open loop (the create mix; see the module's docstring)")
    group.add_argument("--rate", type=float, help="creates a second, sent on a fixed schedule")
    group.add_argument(
        "--find-rate",
        action="store_true",
        help="search the highest rate held at p99 <= --p99-ms (from --rate, or 200)",
    )
    group.add_argument("--p99-ms", type=float, default=30.0, help="the p99 to hold (30)")
    group.add_argument(
        "--step-seconds", type=float, default=5.0, help="each step of the search (5)"
    )
    group.add_argument("--search-steps", type=int, default=4, help="halvings of the bracket (4)")
    group.add_argument(
        "--overload",
        type=float,
        default=2.0,
        help="then run at this multiple of the rate (2; 0: not)",
    )
    group.add_argument("--processes", type=int, default=2, help="generator processes (2)")
    group.add_argument(
        "--open-connections", type=int, default=256, help="per generator process at most (256)"
    )
    group.add_argument(
        "--max-in-flight",
        type=int,
        help="the service's MPS_MAX_IN_FLIGHT (its default unless given; 0: no bound)",
    )


# The generator's send lag (p99, ms) beyond which a step says nothing of the service.
_LAG_LIMIT_MS = 5.0
# Runs of a step again when the generator fell behind in it.
_LAG_RETRIES = 2


async def _open_run(
    args: argparse.Namespace,
    target: Target,
    rate: float,
    seconds: float,
    label: str,
    companies: Sequence[Company] = (),
) -> Any:
    """One open-loop run: creates spread over `companies`, or GET / of the bare endpoint."""
    open_loop = _open_loop()
    host, port = target.base.removeprefix("http://").rsplit(":", 1)
    plan = open_loop.Plan(
        host=host,
        port=int(port),
        rate=rate,
        duration=seconds,
        processes=args.processes,
        connections=args.open_connections,
        start_wall=0.0,
    )
    if companies:
        plan.kind = "create"
        plan.path = "/api/v1/merchant/payments"
        plan.tokens = [c.token for c in companies]
        plan.body = '{"amountMinor":"1500","currency":"USD","description":"open loop"}'
        plan.nonce = f"{args.nonce}{label}"
    cpu = _cpu_seconds(target.pid) if target.pid else 0.0
    result = await asyncio.to_thread(open_loop.run, plan, args.out, label)
    result.server_cpu = (_cpu_seconds(target.pid) - cpu) if target.pid else 0.0
    return result


def _open_report(label: str, run: Any, bare: Any | None, p99_ms: float) -> None:
    print(f"{label}:")
    for line in run.lines():
        print(f"  {line}")
    held = run.held(p99_ms, _LAG_LIMIT_MS)
    print(f"  held (every create 201, p99 <= {p99_ms:g} ms): {'yes' if held else 'no'}")
    print(f"  server CPU {run.server_cpu / max(run.duration, 1e-9):.0%} of a core")
    if bare is None:
        return
    print("  bare endpoint at the same rate (the generator's check, and the reference):")
    for line in bare.lines():
        print(f"    {line}")
    for name, share in (("p50", 0.5), ("p99", 0.99)):
        mine, theirs = run.p("all", share), bare.p("all", share)
        ratio = f"{mine / theirs:.1f}x" if theirs else "-"
        print(f"  {name}: service {mine:.2f} ms, bare {theirs:.2f} ms, service/bare {ratio}")


async def _find_rate(
    args: argparse.Namespace, target: Target, companies: list[Company], check: Check
) -> float:
    """The highest rate whose step is held (every create 201, p99 <= --p99-ms, the schedule
    kept): doubling from the start until a step is not held, then halving the bracket."""
    good, bad = 0.0, 0.0
    rate = args.rate or 200.0
    step = 0

    async def held(rate: float) -> bool:
        nonlocal step
        for attempt in range(_LAG_RETRIES + 1):
            step += 1
            run = await _open_run(args, target, rate, args.step_seconds, f"step{step}", companies)
            check.created.update(run.ids)
            ok = run.held(args.p99_ms, _LAG_LIMIT_MS)
            behind = run.p("lag", 0.99) > _LAG_LIMIT_MS
            verdict = "held" if ok else "generator behind" if behind else "not held"
            print(
                f"  step {step}: {rate:,.0f}/s  p99 {run.p('all', 0.99):8.2f} ms  "
                f"ok {run.ok:,}/{run.sent:,}  send lag p99 {run.p('lag', 0.99):.2f} ms  "
                f"{verdict}",
                flush=True,
            )
            # A generator that fell behind (the machine is shared) says nothing of the
            # service: the step is run again, up to twice.
            if not behind or attempt == _LAG_RETRIES:
                return ok
        return False

    print(
        f"finding the highest rate held at p99 <= {args.p99_ms:g} ms "
        f"({args.step_seconds:g} s steps)"
    )
    while await held(rate):
        good, rate = rate, rate * 2
    bad = rate
    for _ in range(args.search_steps):
        middle = (good + bad) / 2
        if await held(middle):
            good = middle
        else:
            bad = middle
    return good


async def _open_main(args: argparse.Namespace) -> int:
    """The open loop: the held rate (given, or searched), then --overload times it; each run
    beside the bare endpoint at the same rate; then every acknowledged create looked for."""
    check = Check()
    port = _free_port()
    bare_command = [sys.executable, str(BENCH / "bare.py"), "--port", str(port)]
    bare_command += ["--loop", args.bare_loop]
    async with (
        _process(bare_command, args.out / "bare.log", dict(os.environ)) as bare_process,
        _service(args) as target,
        aiohttp.ClientSession() as session,
    ):
        bare = Target(f"http://127.0.0.1:{port}", bare_process.pid)
        await _wait_up(bare.base, "/", bare_process)
        companies, _pool, _refund_pool = await _prepare(session, target, args, check)
        rate = await _find_rate(args, target, companies, check) if args.find_rate else args.rate
        if not rate:
            raise SystemExit("no rate was held: try a lower --rate to start from")
        if args.find_rate:
            print(f"held: {rate:,.0f} creates/s at p99 <= {args.p99_ms:g} ms")
        rates = [("at the rate", rate)]
        if args.overload:
            rates.append((f"at {args.overload:g} x the rate", rate * args.overload))
        for index, (name, each) in enumerate(rates):
            print(f"\n{name}: {each:,.0f}/s for {args.duration:g} s")
            reference = (
                None
                if args.no_bare
                else await _open_run(args, bare, each, args.duration, f"bare{index}")
            )
            run = await _open_run(args, target, each, args.duration, f"run{index}", companies)
            check.created.update(run.ids)
            _open_report(f"service, {name}", run, reference, args.p99_ms)
        stored = await _stored_all(session, target.base, companies)
        ok = _verify(check, stored, [])
    print(f"files: {args.out}")
    return 0 if ok else 1


async def main(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    if args.rate is not None or args.find_rate:
        return await _open_main(args)
    bare_data = args.out / "bare.data"
    bare_data.write_text("")
    bare = await _bare(args, bare_data)
    floor = await _floor(args) if args.floor else None
    ok = True
    runs: list[tuple[int, Run]] = []
    for workers in args.workers:
        args.workers_now = workers
        if len(args.workers) > 1:
            print(f"\n== the service with --workers {workers}")
        run, stored_ok = await _service_run(args, bare, floor)
        runs.append((workers, run))
        ok = ok and stored_ok
    if len(runs) > 1 or floor is not None:
        _report_summary(runs, bare, floor)
    print(f"files: {args.out}")
    return 0 if ok else 1


async def _service_run(
    args: argparse.Namespace, bare: Run | None, floor: Run | None
) -> tuple[Run, bool]:
    """The service, started (with args.workers_now workers) and loaded; its run, and whether
    every acknowledged write was stored."""
    check = Check()
    label = "run" if args.workers_now == 1 else f"run-w{args.workers_now}"
    async with _service(args) as target, aiohttp.ClientSession() as session:
        companies, pool, refund_pool = await _prepare(session, target, args, check)
        if args.mix in ("get", "cancel") and not pool:
            raise SystemExit(f"the {args.mix} mix needs seeded payments (--seed-seconds > 0)")
        if _refunds(args) and not refund_pool:
            raise SystemExit("refunds need paid payments (--refund-payments > 0)")
        datafile = args.out / "run.data"
        _write_data(datafile, companies, pool, refund_pool)
        profile = args.out / f"profile-{label}.svg" if args.profile else None
        # With workers, /metrics on the shared port is one worker's or another's.
        single = args.workers_now == 1
        commits_before = await _commit_totals(session, target.base) if single else None
        run = await _drive(target, args.mix, args.duration, args, datafile, label, profile)
        commits_after = await _commit_totals(session, target.base) if single else None
        check.add(run)
        _report(args, run, bare, floor)
        _report_commits(commits_before, commits_after)
        stored = await _stored_all(session, target.base, companies)
        refunds = (
            await _stored_all(session, target.base, companies, "refunds") if check.refunded else []
        )
        ok = _verify(check, stored, refunds)
    if profile is not None:
        await _summarize_profile(profile)
    return run, ok


def _report_summary(runs: list[tuple[int, Run]], bare: Run | None, floor: Run | None) -> None:
    """Every case of the run side by side: the service per number of workers, the floor and
    the bare endpoint, with the service's ratios to each and the CPU per request."""
    print("\nsummary (same run)")
    print(
        f"  {'case':<22} {'req/s':>9} {'p99 ms':>8} {'x floor':>8} {'x bare':>8} "
        f"{'CPU us/req':>11} {'+pg+mq us/req':>14}"
    )
    cases = [(f"service, {n} worker{'s' if n > 1 else ''}", run) for n, run in runs]
    cases += [("floor", floor)] if floor is not None else []
    cases += [("bare", bare)] if bare is not None else []
    for name, run in cases:
        if run is None:
            continue
        to_floor = f"{run.rps / floor.rps:8.2f}" if floor is not None else f"{'-':>8}"
        to_bare = f"{run.rps / bare.rps:8.2f}" if bare is not None else f"{'-':>8}"
        print(
            f"  {name:<22} {run.rps:>9,.0f} {run.latency_ms('p99'):>8.1f} {to_floor} {to_bare} "
            f"{run.cpu_per_request:>11.0f} {run.cpu_per_request + run.infra_per_request:>14.0f}"
        )
    print(
        "  CPU us/req: the server's processes (every worker); +pg+mq: and Postgres' and "
        "RabbitMQ's processes, whoever else used them meanwhile included"
    )


def service_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the service a run drives (started here, or running at --url), where it
    keeps its data and files, and the wrk that drives it."""
    parser.add_argument("--url", help="a running service on loopback, e.g. http://127.0.0.1:8080")
    parser.add_argument("--server-pid", type=int, help="its pid, when --url cannot find it")
    parser.add_argument(
        "--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres", help="postgres only"
    )
    parser.add_argument("--broker-url", help="default: RabbitMQ on loopback for postgres")
    parser.add_argument("--keep", action="store_true", help="keep the data dir or schema")
    parser.add_argument("--out", type=Path, help="where a run's files go")
    parser.add_argument("--wrk", default=shutil.which("wrk") or "/usr/bin/wrk")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--mix", choices=MIXES, default="create")
    parser.add_argument("--duration", type=float, default=10, help="seconds (10)")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--companies", type=int, default=4)
    parser.add_argument("--weights", default=DEFAULT_WEIGHTS, help="the mixed blend")
    parser.add_argument("--seed-seconds", type=float, help="create mix run before get/list/cancel")
    parser.add_argument(
        "--refund-payments",
        type=int,
        default=256,
        help="paid payments the refunds are spread over (256)",
    )
    parser.add_argument("--bare-duration", type=float, help="seconds (--duration)")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare endpoint")
    parser.add_argument(
        "--bare-loop",
        choices=["uvloop", "asyncio"],
        default="uvloop",
        help="the bare endpoint's event loop: uvloop, as the service runs (default), or "
        "asyncio's own, as plain aiohttp runs",
    )
    service_arguments(parser)
    parser.add_argument("--profile", action="store_true", help="py-spy the server during the run")
    parser.add_argument(
        "--nonblocking", action="store_true", help="py-spy without pausing the server"
    )
    parser.add_argument(
        "--workers",
        default="1",
        help="run.py --workers N for the service (postgres only); a list (1,2) runs the "
        "service once per N in the same run",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="run the floor server (bench/floor.py) in the same run, and compare (postgres)",
    )
    _open_arguments(parser)
    args = parser.parse_args()
    try:
        args.workers = [int(n) for n in args.workers.split(",")]
    except ValueError:
        parser.error("--workers takes a number, or numbers separated by commas")
    if any(n < 1 for n in args.workers):
        parser.error("--workers: at least 1")
    if (max(args.workers) > 1 or args.floor) and (args.backend != "postgres" or args.url):
        parser.error("--workers above 1 and --floor need --backend postgres (and no --url)")
    if args.floor and args.mix != "create":
        parser.error("--floor compares the create mix")
    args.workers_now = args.workers[0]
    if (args.rate is not None or args.find_rate) and args.mix != "create":
        parser.error("the open loop (--rate, --find-rate) drives the create mix only")
    if args.connections < args.threads:
        parser.error("--connections must be at least --threads")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    args.nonce = f"{stamp.replace('-', '')}{secrets.token_hex(3)}"
    backend = "url" if args.url else args.backend
    args.out = args.out or ROOT / "var" / "bench" / f"{stamp}-{args.mix}-{backend}"
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(main(_arguments())))
