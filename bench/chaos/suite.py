"""One chaos run from start to end: servers, a fresh schema and the cluster on it, companies
signed up, the workload under faults, recovery, the checks, and the nodes' logs read."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import aiohttp
import asyncpg

from bench.chaos.checks import check
from bench.chaos.client import REQUEST_TIMEOUT, Client
from bench.chaos.faults import Faults, recover
from bench.chaos.logs import scan_logs
from bench.chaos.options import FAULTS, HEARTBEAT, OWN_SERVER_FAULTS, Options
from bench.chaos.report import Report
from bench.chaos.servers import Servers
from bench.chaos.workload import Workload, sign_up
from bench.chaos.world import World, receiver
from bench.load import _drop_schema
from tests.cluster import LocalCluster

ROOT = Path(__file__).resolve().parents[2]


async def run_chaos(options: Options) -> Report:
    """Start the cluster, run the workload under faults, check, and return the report (its
    `violations` empty when every check held). Stops everything it started, and drops the
    schema it made, however it ends. Raises ValueError for a fault kind not in FAULTS; the
    restarts are skipped (and said so in the fault log) unless the servers are its own."""
    bad = [f for f in options.faults if f not in FAULTS]
    if bad:
        msg = f"unknown faults: {', '.join(bad)} (known: {', '.join(FAULTS)})"
        raise ValueError(msg)
    out = options.out or ROOT / "var" / "chaos" / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    report = Report(options, out)
    if not options.own_servers and any(f in OWN_SERVER_FAULTS for f in options.faults):
        skipped = [f for f in options.faults if f in OWN_SERVER_FAULTS]
        report.fault_log.append(
            f"skipped {', '.join(skipped)}: the servers are shared (use --own-servers)"
        )
        kept = tuple(f for f in options.faults if f not in OWN_SERVER_FAULTS)
        options = replace(options, faults=kept)
        report.options = options
    started = time.monotonic()
    servers = Servers(options, Path(tempfile.mkdtemp(prefix="mps-chaos-")))
    try:
        await servers.start()
        await _with_servers(options, report, servers)
    finally:
        await servers.stop()
        shutil.rmtree(servers.folder, ignore_errors=True)
        report.seconds = time.monotonic() - started
    return report


async def _with_servers(options: Options, report: Report, servers: Servers) -> None:
    schema = f"chaos_{secrets.token_hex(4)}"
    database_url = f"{servers.pg_url}?schema={schema}"
    cluster = LocalCluster(
        report.out,
        options.nodes,
        database_url,
        servers.broker_url,
        heartbeat=HEARTBEAT,
        # Webhook retries a hundredth as far apart: +0.6 s, +3 s, +18 s instead of minutes.
        env={"MPS_WEBHOOK_RETRY_SCALE": "0.01"},
    )
    world = World(report)
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
    try:
        await asyncio.to_thread(cluster.__enter__)
        await asyncio.to_thread(cluster.wait_balanced, options.settle)
        options.progress(f"{options.nodes} nodes up and balanced; logs in {report.out}")
        async with (
            receiver(world) as hooks,
            aiohttp.ClientSession(timeout=timeout) as session,
        ):
            client = Client(cluster.urls(), session, report)
            for index in range(options.companies):
                world.companies.append(await sign_up(client, index, hooks))
            workload = Workload(client, world, options)
            workers = [asyncio.ensure_future(workload.run(w)) for w in range(options.workers)]
            began = time.monotonic()
            try:
                await Faults(cluster, servers, report, options).run(began)
                remaining = options.duration - (time.monotonic() - began)
                if remaining > 0:
                    await asyncio.sleep(remaining)
            finally:
                workload.stop.set()
                await asyncio.gather(*workers, return_exceptions=True)
            options.progress(f"workload ended after {time.monotonic() - began:.0f}s; settling")
            await recover(cluster, report, options)
            await check(client, world, report, options, database_url)
    finally:
        await asyncio.to_thread(cluster.__exit__, None, None, None)
        scan_logs(cluster, report)
        with contextlib.suppress(OSError, asyncpg.PostgresError):
            await _drop_schema(servers.pg_url, schema)
