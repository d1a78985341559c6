"""Cluster benchmark: one node against two and three, and what passing a request on costs.

    .venv/bin/python bench/cluster.py --nodes 1,2,3 --duration 10 --connections 64

For each cluster size it starts that many `run.py` nodes (development mode for the dev mailbox,
a fresh Postgres schema, RabbitMQ, a cluster name of its own, rate limits and access log off),
waits until every shard is owned, signs up `--companies` companies, and drives the create mix
with one wrk per node, the connections split between them, so the load is spread over the nodes
as a balancer would spread it; throughput is the sum, latency the worst node's. The bare aiohttp
endpoint is measured in the same run with the same total connections, for the ratio.

Then, with two nodes or more, the off-owner hop: `--hops` sequential creates for one company
sent to the node that owns its shard, and as many sent to a node that does not (passed straight
to the owner's peer listener, mps.cluster.peers); p50 and p99 of each, the difference, and the
CPU per create of every node and of RabbitMQ together (from /proc, RabbitMQ found by its port).
`--hops-only` skips the throughput runs.

    .venv/bin/python bench/cluster.py --nodes 2 --hops 1000 --hops-only

This machine has two cores: every node, wrk and Postgres share them, so more nodes cannot add
throughput here. The figures show what a hop and the coordination cost, not scaling.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.load import (
    ROOT,
    Company,
    Run,
    Target,
    _bare,
    _cpu_seconds,
    _drive,
    _drop_schema,
    _free_port,
    _listener_pid,
    _process,
    _sign_up,
    _wait_up,
    _write_data,
)
from mps.cluster.node import delete_cluster
from mps.domain.shards import SHARD_COUNT, shard_of

AMOUNT = {"amountMinor": "2500", "currency": "USD"}


@contextlib.asynccontextmanager
async def _cluster(args: argparse.Namespace, size: int) -> AsyncIterator[list[Target]]:
    nonce = secrets.token_hex(4)
    schema = f"cluster_{nonce}"
    sep = "&" if "?" in args.pg_url else "?"
    secret = secrets.token_urlsafe(48)
    key = secrets.token_urlsafe(48)
    targets: list[Target] = []
    async with contextlib.AsyncExitStack() as stack:
        # Pushed first, so run last (after every node has stopped): the schema and the
        # cluster's durable queues go with the cluster.
        stack.push_async_callback(_drop_schema, args.pg_url, schema)
        stack.push_async_callback(delete_cluster, args.broker_url, f"bench-{nonce}")
        for index in range(size):
            port = _free_port()
            env = {
                **os.environ,
                "MPS_PORT": str(port),
                "MPS_DATA_DIR": tempfile.mkdtemp(prefix="mps-cluster-"),
                "MPS_MODE": "development",
                "MPS_NODE_ID": f"node{index + 1}",
                "MPS_CLUSTER": "on",
                "MPS_CLUSTER_NAME": f"bench-{nonce}",
                "MPS_DATABASE_URL": f"{args.pg_url}{sep}schema={schema}",
                "MPS_BROKER_URL": args.broker_url,
                "MPS_SESSION_SECRET": secret,
                "MPS_ENCRYPTION_KEY": key,
                "MPS_RATE_LIMIT_SCALE": "0",
                "MPS_ACCESS_LOG": "off",
            }
            log = args.out / f"n{size}-node{index + 1}.log"
            process = await stack.enter_async_context(
                _process([sys.executable, str(ROOT / "run.py")], log, env)
            )
            target = Target(f"http://127.0.0.1:{port}", process.pid)
            await _wait_up(target.base, "/api/v1/health/live", process)
            targets.append(target)
        await _balanced(targets)
        yield targets


async def _owned(session: aiohttp.ClientSession, target: Target) -> list[int]:
    async with session.get(f"{target.base}/api/v1/health") as response:
        node: dict[str, Any] = (await response.json())["node"]
        return list(node.get("ownedShards", []))


async def _balanced(targets: list[Target], within: float = 30.0) -> None:
    share = -(-SHARD_COUNT // len(targets))
    started = time.monotonic()
    async with aiohttp.ClientSession() as session:
        while time.monotonic() - started < within:
            owned = [await _owned(session, t) for t in targets]
            every = sorted(s for shards in owned for s in shards)
            if every == list(range(SHARD_COUNT)) and all(0 < len(o) <= share for o in owned):
                print(f"{len(targets)} nodes: shards {[len(o) for o in owned]}")
                return
            await asyncio.sleep(0.2)
    raise SystemExit("the cluster did not balance")


async def _throughput(
    args: argparse.Namespace, targets: list[Target], companies: list[Company], size: int
) -> tuple[float, float]:
    datafile = args.out / f"n{size}.data"
    _write_data(datafile, companies, [])
    per_node = argparse.Namespace(**vars(args))
    per_node.connections = max(per_node.threads, args.connections // len(targets))
    runs: list[Run] = await asyncio.gather(
        *(
            _drive(target, "create", args.duration, per_node, datafile, f"n{size}-{index + 1}")
            for index, target in enumerate(targets)
        )
    )
    rps = sum(run.rps for run in runs)
    p99 = max(run.latency_ms("p99") for run in runs)
    errors = sum(
        int(n)
        for run in runs
        for status, n in run.figures.get("statuses", {}).items()
        if not status.startswith("2")
    )
    print(f"{size} nodes: {rps:,.0f} creates/s, p99 {p99:.1f} ms (non-2xx: {errors})")
    return rps, p99


async def _hops(
    args: argparse.Namespace, targets: list[Target], company: Company, company_id: str
) -> None:
    async with aiohttp.ClientSession() as session:
        shard = shard_of(company_id)
        owners = [i for i, t in enumerate(targets) if shard in await _owned(session, t)]
        owner = targets[owners[0]]
        other = next(t for t in targets if t is not owner)
        headers = {"Authorization": f"Bearer {company.token}"}

        async def sequential(target: Target, count: int) -> list[float]:
            took: list[float] = []
            for _ in range(count):
                started = time.perf_counter()
                async with session.post(
                    f"{target.base}/api/v1/merchant/payments", json=AMOUNT, headers=headers
                ) as response:
                    await response.read()
                    assert response.status == 201, response.status
                took.append((time.perf_counter() - started) * 1000)
            return took

        broker = _listener_pid(args.broker_port)
        pids = [t.pid for t in targets if t.pid is not None] + ([broker] if broker else [])

        # In blocks of 50, the two paths taking turns: the machine's load (others' work) then
        # weighs on both alike.
        took: dict[str, list[float]] = {"owner": [], "other": []}
        cpu = {"owner": 0.0, "other": 0.0}
        await sequential(owner, 50)  # warm both paths
        await sequential(other, 50)
        for _ in range(max(1, args.hops // 50)):
            for name, target in (("owner", owner), ("other", other)):
                before = sum(_cpu_seconds(pid) for pid in pids)
                took[name] += await sequential(target, 50)
                cpu[name] += sum(_cpu_seconds(pid) for pid in pids) - before
        direct, passed = sorted(took["owner"]), sorted(took["other"])
        # CPU milliseconds per create, of the nodes and RabbitMQ together.
        direct_cpu = cpu["owner"] * 1000 / len(direct)
        passed_cpu = cpu["other"] * 1000 / len(passed)

    def at(values: list[float], q: float) -> float:
        return values[min(len(values) - 1, int(q * len(values)))]

    print(
        f"hop ({len(targets)} nodes, {args.hops} sequential creates each): "
        f"owner p50 {at(direct, 0.5):.2f} ms p99 {at(direct, 0.99):.2f} ms; "
        f"off-owner p50 {at(passed, 0.5):.2f} ms p99 {at(passed, 0.99):.2f} ms; "
        f"added p50 {at(passed, 0.5) - at(direct, 0.5):.2f} ms "
        f"p99 {at(passed, 0.99) - at(direct, 0.99):.2f} ms; "
        f"CPU per create (nodes{' and RabbitMQ' if broker else ''}) owner {direct_cpu:.2f} ms, "
        f"off-owner {passed_cpu:.2f} ms ({passed_cpu / direct_cpu:.2f} x)"
    )


async def main(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    args.nonce = secrets.token_hex(3)
    args.bare_duration = None
    args.no_bare = False
    (args.out / "bare.data").write_text("")
    bare = None if args.hops_only else await _bare(args, args.out / "bare.data")
    if bare is not None:
        print(f"bare aiohttp: {bare.rps:,.0f} req/s, p99 {bare.latency_ms('p99'):.1f} ms")
    for size in args.nodes:
        async with _cluster(args, size) as targets, aiohttp.ClientSession() as session:
            companies = []
            ids = []
            for index in range(args.companies):
                base = targets[index % len(targets)].base
                email = f"load{index}-{secrets.token_hex(3)}@example.com"
                companies.append(await _sign_up(session, base, email))
                async with session.get(
                    f"{base}/api/v1/auth/me",
                    headers={"Authorization": f"Bearer {companies[-1].token}"},
                ) as response:
                    ids.append(orjson.loads(await response.read())["company"]["id"])
            if not args.hops_only:
                rps, _ = await _throughput(args, targets, companies, size)
                if bare is not None:
                    print(f"{size} nodes: {rps / bare.rps:.3f} x bare")
            if size >= 2:
                await _hops(args, targets, companies[0], ids[0])
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--nodes", type=lambda s: [int(n) for n in s.split(",")], default=[1, 2, 3])
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--companies", type=int, default=4)
    parser.add_argument("--hops", type=int, default=500)
    parser.add_argument("--hops-only", action="store_true", help="skip the throughput runs")
    parser.add_argument("--broker-port", type=int, default=5672, help="RabbitMQ's, for its CPU")
    parser.add_argument(
        "--pg-url", default="postgresql://postgres@127.0.0.1:5432/mps_test", help="Postgres"
    )
    parser.add_argument("--broker-url", default="amqp://guest:guest@127.0.0.1:5672/")
    parser.add_argument("--wrk", default="/usr/bin/wrk")
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "bench" / "cluster")
    args = parser.parse_args()
    args.weights = "create=100"
    args.bare_loop = "uvloop"
    args.nonblocking = False
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(main(_arguments())))
