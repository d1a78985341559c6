"""Workers behind a shard-aware balancer: what each worker's own port (MPS_WORKER_PORT) saves.

    .venv/bin/python bench/workers_balanced.py --duration 10 --companies 8

`run.py --workers 2` on Postgres and RabbitMQ, each worker with its own port beside the shared
one, and the create mix driven by wrk (64 connections, 2 threads, session tokens of --companies
companies, so a balancer can hash each request on its JWT's `cid`):

1. balanced: through nginx running deploy/nginx.conf with only its addresses and paths replaced
   (node1 and node2 are the workers' own ports, node3 the shared port, which the map never
   names), its shard map written by deploy/shard-map from the workers' metrics ports, once the
   map names every shard;
2. shared: the same workers, straight at the shared port (SO_REUSEPORT: the kernel picks a
   worker per connection);
3. alone: `run.py --workers 1` (a cluster of one, as bench/load.py measures it), for reference,
   and alone+ngx: the same process behind the same nginx (all three of its nodes), which shows
   what the path through nginx costs the service apart from what two workers do.

For each: creates/s, p99, the CPU per create summed over every process of the service (the
supervisor and its workers), nginx's apart (its master and workers), Postgres' and RabbitMQ's,
the share of the creates one worker passed to the other (`mps_passed_requests_total`, read
from the workers' metrics ports before and after) and the units per group commit. The service's
CPU with no load (its schedulers and heartbeats, per worker) is measured for --idle seconds
before each case, and the CPU per create is shown with and without it. Every acknowledged
create is looked for afterwards. The machine is shared: read the ratios and the CPU per create,
not the rates. Files go to --out (var/bench/<time>-workers-balanced/ by default): wrk's output,
the servers' and nginx's logs, the map.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import load  # noqa: E402
from bench.balancers import NGINX, nginx_command, port_open, render_nginx  # noqa: E402
from mps.domain.shards import SHARD_COUNT, shard_of  # noqa: E402
from tests.helpers import free_port, free_ports  # noqa: E402

DEPLOY = ROOT / "deploy"
API = "/api/v1"
WORKERS = 2
# Seconds the workers, the map and nginx may take to be ready on a busy machine.
READY_WITHIN = 120.0


@dataclass
class Case:
    """One case's figures: the wrk run, and the CPU seconds and passes counted around it."""

    name: str
    run: load.Run
    service_cpu: float
    nginx_cpu: float
    infra_cpu: float
    passed: float
    # The service's CPU seconds per second with no load, measured just before.
    idle_share: float
    # Group commits and their units during the run, summed over the workers.
    commits: float
    units: float

    @property
    def creates(self) -> float:
        return float(self.run.figures["requests"])

    def per_create(self, seconds: float) -> float:
        """Microseconds per create."""
        return seconds / max(self.creates, 1.0) * 1e6

    @property
    def busy_cpu(self) -> float:
        """The service's CPU seconds during the run less what it spends idle in as long (its
        schedulers' passes and heartbeats, per worker)."""
        return self.service_cpu - self.idle_share * self.run.figures["durationUs"] / 1e6


# -- processes ---------------------------------------------------------------------------------


def _cpu(pid: int | None) -> float:
    """CPU seconds of `pid` and its children so far (a supervisor's workers, nginx's)."""
    return load._group_cpu(load._group(pid)) if pid else 0.0


@dataclass
class Service:
    """`run.py --workers N` (the supervisor's pid), and where each of its workers listens."""

    pid: int
    shared: str
    own: list[str]
    metrics: list[str]


def _service_env(args: argparse.Namespace, label: str, data_dir: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("MPS_")},
        "MPS_DATA_DIR": str(data_dir),
        "MPS_MODE": "development",
        "MPS_RATE_LIMIT_SCALE": "0",
        "MPS_ACCESS_LOG": "off",
        "MPS_DATABASE_URL": f"{args.pg_url}?schema=wb_{args.nonce}_{label}",
        "MPS_BROKER_URL": args.broker_url,
        "MPS_CLUSTER": "on",
        "MPS_CLUSTER_NAME": f"wb-{args.nonce}-{label}",
    }


@contextlib.asynccontextmanager
async def _service(args: argparse.Namespace, workers: int) -> AsyncIterator[Service]:
    """The service with `workers` workers (each with its own and its metrics port) on a schema
    and cluster name of its own, until the block ends; then both are deleted."""
    label = f"w{workers}"
    data_dir = Path(tempfile.mkdtemp(prefix="mps-workers-balanced-"))
    env = _service_env(args, label, data_dir)
    shared, metrics, own = free_port(), free_ports(workers), free_ports(workers)
    env.update(MPS_PORT=str(shared), MPS_METRICS_PORT=str(metrics), MPS_WORKER_PORT=str(own))
    command = [sys.executable, str(ROOT / "run.py"), "--workers", str(workers)]
    try:
        async with load._process(command, args.out / f"server-{label}.log", env) as process:
            service = Service(
                process.pid,
                f"http://127.0.0.1:{shared}",
                [f"http://127.0.0.1:{own + i}" for i in range(workers)],
                [f"http://127.0.0.1:{metrics + i}/metrics" for i in range(workers)],
            )
            await load._wait_up(service.shared, f"{API}/health/live", process)
            if workers > 1:
                await _wait_balanced(service, process)
            yield service
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
        await load._drop_schema(args.pg_url, f"wb_{args.nonce}_{label}")
        await load._delete_cluster(args.broker_url, env["MPS_CLUSTER_NAME"])


async def _owned(session: aiohttp.ClientSession, url: str) -> list[int] | None:
    """The shards the worker whose own port is at `url` owns; None while it does not answer."""
    with contextlib.suppress(aiohttp.ClientError):
        async with session.get(f"{url}{API}/health") as response:
            if response.status == 200:
                shards: list[int] = (await response.json())["node"].get("ownedShards", [])
                return shards
    return None


async def _wait_balanced(service: Service, process: asyncio.subprocess.Process) -> None:
    """Wait until each worker answers on its own port and they own every shard, an even share
    each, so no shard moves during the runs."""
    share = SHARD_COUNT // len(service.own)
    deadline = time.monotonic() + READY_WITHIN
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if process.returncode is not None:
                raise SystemExit(f"the workers exited with {process.returncode} while starting")
            views = [await _owned(session, url) for url in service.own]
            every = sorted(s for shards in views if shards for s in shards)
            if every == list(range(SHARD_COUNT)) and all(
                shards is not None and len(shards) == share for shards in views
            ):
                print(f"  {len(views)} workers own the shards, {share} each, on their own ports")
                return
            await asyncio.sleep(0.2)
    raise SystemExit("the workers did not come to own the shards evenly")


# Read from every worker's metrics, summed over the workers.
_COUNTED = (
    "mps_passed_requests_total",
    "mps_group_commit_units_count",
    "mps_group_commit_units_sum",
)


async def _counted(session: aiohttp.ClientSession, service: Service) -> dict[str, float]:
    """The requests the workers passed on to another worker so far, and their group commits
    and the units in them, each summed over the workers."""
    totals = dict.fromkeys(_COUNTED, 0.0)
    for url in service.metrics:
        async with session.get(url) as response:
            text = await response.text()
        for line in text.splitlines():
            series, _, value = line.rpartition(" ")
            name = series.partition("{")[0]
            if name in totals:
                totals[name] += float(value)
    return totals


# -- nginx -------------------------------------------------------------------------------------


class Nginx:
    """deploy/nginx.conf in front of `service`, and deploy/shard-map feeding it from its
    metrics. With workers, node1 and node2 are the workers' own ports and node3 the shared
    port, which the map never names; a single process is all three."""

    def __init__(self, folder: Path, service: Service) -> None:
        folder.mkdir(exist_ok=True)
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.map = folder / "shards.map"
        self.service = service
        self.process: subprocess.Popen[bytes] | None = None

    def config(self) -> str:
        """The example with only its paths and addresses replaced, as scripts/cluster
        --production runs it (bench/balancers.py; each replaced text must be found)."""
        shared = self.service.shared.removeprefix("http://")
        nodes = [url.removeprefix("http://") for url in self.service.own]
        nodes = [*nodes, shared] if len(nodes) > 1 else [shared] * 3
        return render_nginx((DEPLOY / "nginx.conf").read_text(), self.folder, self.port, nodes)

    def write_map(self) -> int:
        """Run deploy/shard-map against the workers' metrics; how many shards the map names."""
        nodes = [f"node{i + 1}={url}" for i, url in enumerate(self.service.metrics)]
        command = [sys.executable, str(DEPLOY / "shard-map"), "--out", str(self.map), *nodes]
        subprocess.run(command, check=True, timeout=30)
        return len(self.map.read_text().splitlines())

    @contextlib.contextmanager
    def running(self) -> Iterator[int]:
        """nginx in the foreground until the block ends; its master's pid."""
        deadline = time.monotonic() + READY_WITHIN
        while self.write_map() < SHARD_COUNT:
            if time.monotonic() > deadline:
                raise SystemExit("deploy/shard-map never named every shard")
            time.sleep(0.5)
        (self.folder / "nginx.conf").write_text(self.config())
        with (self.folder / "nginx.out").open("ab") as out:
            self.process = subprocess.Popen(
                nginx_command(self.folder), stdout=out, stderr=subprocess.STDOUT
            )
        try:
            while not port_open(self.port):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"nginx did not start: see {self.folder}")
                time.sleep(0.05)
            yield self.process.pid
        finally:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGQUIT)
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()


# -- runs --------------------------------------------------------------------------------------


async def _case(
    args: argparse.Namespace,
    session: aiohttp.ClientSession,
    name: str,
    base: str,
    service: Service,
    datafile: Path,
    nginx_pid: int | None = None,
) -> Case:
    """wrk's create mix at `base`, with the CPU, the passes and the commits counted around it,
    after --idle seconds of the service's CPU with no load."""
    idle_from, idle_started = _cpu(service.pid), time.monotonic()
    await asyncio.sleep(args.idle)
    idle_share = (_cpu(service.pid) - idle_from) / (time.monotonic() - idle_started)
    counted = await _counted(session, service)
    infra = load._infrastructure()
    before = (_cpu(service.pid), _cpu(nginx_pid), load._group_cpu(infra))
    run = await load._drive(
        load.Target(base, service.pid), "create", args.duration, args, datafile, name
    )
    after = (_cpu(service.pid), _cpu(nginx_pid), load._group_cpu(infra))
    counted = {k: v - counted[k] for k, v in (await _counted(session, service)).items()}
    statuses = ", ".join(f"{s}: {n:,}" for s, n in sorted(run.figures["statuses"].items()))
    print(f"  {name}: {run.rps:,.0f} creates/s, p99 {run.latency_ms('p99'):.1f} ms ({statuses})")
    service_cpu, nginx_cpu, infra_cpu = (a - b for a, b in zip(after, before, strict=True))
    return Case(
        name,
        run,
        service_cpu,
        nginx_cpu,
        infra_cpu,
        counted["mps_passed_requests_total"],
        idle_share,
        counted["mps_group_commit_units_count"],
        counted["mps_group_commit_units_sum"],
    )


async def _companies(
    args: argparse.Namespace, session: aiohttp.ClientSession, service: Service, label: str
) -> tuple[list[load.Company], Path]:
    """--companies companies signed up through the shared port, and wrk's data file of their
    session tokens."""
    companies = [
        await load._sign_up(session, service.shared, f"wb-{args.nonce}-{label}-{n}@example.com")
        for n in range(args.companies)
    ]
    datafile = args.out / f"{label}.data"
    load._write_data(datafile, companies, [])
    return companies, datafile


def _owners(companies: list[load.Company], views: list[list[int] | None]) -> str:
    """How many of the companies each worker owns, e.g. "5/3"."""
    counts = [0] * len(views)
    for company in companies:
        shard = shard_of(_company_id(company.token))
        for index, shards in enumerate(views):
            if shards and shard in shards:
                counts[index] += 1
    return "/".join(str(count) for count in counts)


def _company_id(token: str) -> str:
    """The company a session token names (its JWT's `cid`), as the balancer reads it."""
    payload = token.split(".")[1]
    claims = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return str(claims["cid"])


async def _stored(
    session: aiohttp.ClientSession, base: str, companies: list[load.Company], cases: list[Case]
) -> bool:
    check = load.Check()
    for case in cases:
        check.add(case.run)
    stored = await load._stored_all(session, base, companies)
    return load._verify(check, stored, [])


async def main(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    cases: list[Case] = []
    ok = True
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session:
        print(f"== run.py --workers {WORKERS}, each with its own port")
        async with _service(args, WORKERS) as service:
            companies, datafile = await _companies(args, session, service, "workers")
            views = [await _owned(session, url) for url in service.own]
            print(f"  companies per worker: {_owners(companies, views)}")
            nginx = Nginx(args.out / "nginx-workers", service)
            with nginx.running() as nginx_pid:
                cases.append(
                    await _case(args, session, "balanced", nginx.url, service, datafile, nginx_pid)
                )
            cases.append(await _case(args, session, "shared", service.shared, service, datafile))
            ok = await _stored(session, service.shared, companies, cases) and ok
        print("== run.py --workers 1, for reference")
        async with _service(args, 1) as alone:
            companies, datafile = await _companies(args, session, alone, "alone")
            mine = [await _case(args, session, "alone", alone.shared, alone, datafile)]
            nginx = Nginx(args.out / "nginx-alone", alone)
            with nginx.running() as nginx_pid:
                mine.append(
                    await _case(args, session, "alone+ngx", nginx.url, alone, datafile, nginx_pid)
                )
            cases += mine
            ok = await _stored(session, alone.shared, companies, mine) and ok
    _summary(cases)
    print(f"files: {args.out}")
    return 0 if ok else 1


def _summary(cases: list[Case]) -> None:
    print("\nsummary (same run)")
    print(
        f"  {'case':<10} {'creates/s':>10} {'p99 ms':>8} {'service us':>11} {'less idle':>10} "
        f"{'idle CPU':>9} {'nginx us':>9} {'pg+mq us':>9} {'passed':>7} {'batch':>6}"
    )
    for case in cases:
        print(
            f"  {case.name:<10} {case.run.rps:>10,.0f} {case.run.latency_ms('p99'):>8.1f} "
            f"{case.per_create(case.service_cpu):>11.0f} {case.per_create(case.busy_cpu):>10.0f} "
            f"{case.idle_share:>9.1%} {case.per_create(case.nginx_cpu):>9.0f} "
            f"{case.per_create(case.infra_cpu):>9.0f} {case.passed / max(case.creates, 1):>7.1%} "
            f"{case.units / max(case.commits, 1):>6.1f}"
        )
    named = {case.name: case for case in cases}
    balanced = named["balanced"]
    for other in (named["shared"], named["alone"], named["alone+ngx"]):
        cpu = balanced.per_create(balanced.service_cpu) / other.per_create(other.service_cpu)
        busy = balanced.per_create(balanced.busy_cpu) / other.per_create(other.busy_cpu)
        print(
            f"  balanced / {other.name}: creates/s x{balanced.run.rps / other.run.rps:.2f}, "
            f"service CPU per create x{cpu:.2f} (less idle x{busy:.2f})"
        )
    print(
        "  us: CPU microseconds per create; service: the supervisor and every worker; nginx: "
        "its master and workers; pg+mq: Postgres' and RabbitMQ's processes (whoever else used "
        "them meanwhile included); less idle: the service's less what it spends idle in as "
        "long (idle CPU, of one core, measured just before); passed: creates one worker "
        "passed to the other; batch: units per group commit"
    )


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10, help="seconds per case (10)")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--companies", type=int, default=8)
    parser.add_argument(
        "--idle", type=float, default=5, help="seconds of idle CPU measured before each case (5)"
    )
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--broker-url", default="amqp://guest:guest@127.0.0.1:5672/")
    parser.add_argument("--wrk", default=shutil.which("wrk") or "/usr/bin/wrk")
    parser.add_argument("--out", type=Path, help="where a run's files go")
    args = parser.parse_args()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    args.nonce = f"{stamp.replace('-', '')}{secrets.token_hex(3)}"
    args.out = args.out or ROOT / "var" / "bench" / f"{stamp}-workers-balanced"
    # What load._drive reads besides the above.
    args.weights = load.DEFAULT_WEIGHTS
    args.nonblocking = False
    if not Path(NGINX).exists():
        parser.error(f"{NGINX} is needed (scripts/services installs it)")
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(main(_arguments())))
