"""Webhook benchmark: deliveries per second from the outbox to a receiver, and the lag from
commit to delivery, on Postgres and RabbitMQ.

    .venv/bin/python bench/webhooks.py --events 20000 --rate 1000 --duration 10

Starts `run.py` (development mode for the dev mailbox, a fresh Postgres schema, RabbitMQ with a
cluster name of its own, rate limits and access log off) and a receiver in a process of its own
(bench/webhook_receiver.py), signs up a company and registers one endpoint for every event.

1. Throughput: `--events` events are written straight into the outbox (the events table, as a
   commit would leave them), and the clock runs until the receiver has every one of them: the
   relay, RabbitMQ, the fan-out, the dispatcher's attempts, the receiver's 200 and the record of
   each attempt, all included.
2. Lag: payments are created through the API at `--rate` per second for `--duration` seconds;
   each payment.created event is timed from its createdAt (the moment its commit was decided) to
   its arrival at the receiver; p50 and p99.

Before each phase the receiver alone is driven by a client of its own, to show it can take far
more than the service sends it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.load import (
    ROOT,
    Target,
    _drop_schema,
    _finish_profile,
    _free_port,
    _process,
    _sign_up,
    _start_profile,
    _summarize_profile,
    _wait_up,
)
from mps.cluster.node import delete_cluster
from mps.domain.clock import iso, utcnow
from mps.persistence.outbox import NUMBERING, event_row

API = "/api/v1"


async def _stats(http: aiohttp.ClientSession, receiver: str) -> dict[str, Any]:
    async with http.get(f"{receiver}/stats") as r:
        stats: dict[str, Any] = await r.json()
        return stats


async def _fill_outbox(pg_url: str, schema: str, company_id: str, count: int) -> None:
    """`count` payment.completed events in the outbox, undispatched, as commits leave them."""
    conn = await asyncpg.connect(pg_url, server_settings={"search_path": schema})
    try:
        rows = []
        for n in range(count):
            row = event_row(
                company_id=company_id,
                mode="test",
                event_type="payment.completed",
                created_at=iso(utcnow()),
                obj={"id": f"pay_bench{n}", "status": "PAID"},
            )
            rows.append(tuple(row.values()))
        columns = ", ".join(row)
        marks = ", ".join(f"${i}" for i in range(1, len(row) + 1))
        await conn.executemany(f"INSERT INTO events ({columns}) VALUES ({marks})", rows)
        # Numbered as a commit of the service numbers them.
        for statement in NUMBERING:
            await conn.execute(statement.sql)
    finally:
        await conn.close()


async def _receiver_capacity(http: aiohttp.ClientSession, receiver: str, seconds: float) -> float:
    """Requests per second the receiver takes from a client of its own (64 at a time)."""
    body = orjson.dumps({"id": "evt_probe", "createdAt": iso(utcnow())})
    done = 0
    deadline = time.monotonic() + seconds

    async def worker() -> None:
        nonlocal done
        while time.monotonic() < deadline:
            async with http.post(f"{receiver}/hooks", data=body) as r:
                await r.read()
            done += 1

    started = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(64)))
    rate = done / (time.monotonic() - started)
    async with http.post(f"{receiver}/reset") as r:
        await r.read()
    return rate


async def _create_at_rate(
    http: aiohttp.ClientSession, base: str, token: str, rate: float, duration: float
) -> int:
    headers = {"Authorization": f"Bearer {token}"}
    body = {"amountMinor": "1500", "currency": "USD"}
    sent = 0
    pending: set[asyncio.Task[None]] = set()

    async def create() -> None:
        async with http.post(f"{base}{API}/merchant/payments", json=body, headers=headers) as r:
            await r.read()

    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < duration:
        due = int(elapsed * rate) - sent
        for _ in range(due):
            task = asyncio.ensure_future(create())
            pending.add(task)
            task.add_done_callback(pending.discard)
            sent += 1
        await asyncio.sleep(0.005)
    await asyncio.gather(*pending)
    return sent


async def _wait_count(
    http: aiohttp.ClientSession, receiver: str, count: int, within: float
) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        stats = await _stats(http, receiver)
        if stats["distinct"] >= count or time.monotonic() > deadline:
            return stats
        await asyncio.sleep(0.05)


async def run(args: argparse.Namespace) -> None:
    nonce = secrets.token_hex(4)
    schema = f"bench_webhooks_{nonce}"
    cluster = f"mps-bench-{nonce}"
    port, receiver_port = _free_port(), _free_port()
    base, receiver = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{receiver_port}"
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="mps-bench-webhooks-"))
    sep = "&" if "?" in args.pg_url else "?"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MPS_")},
        "MPS_PORT": str(port),
        "MPS_DATA_DIR": str(out / "var"),
        "MPS_DATABASE_URL": f"{args.pg_url}{sep}schema={schema}",
        "MPS_BROKER_URL": args.amqp_url,
        "MPS_CLUSTER": "on",
        "MPS_CLUSTER_NAME": cluster,
        "MPS_RATE_LIMIT_SCALE": "0",
        "MPS_ACCESS_LOG": "off",
    }
    python = str(ROOT / ".venv/bin/python")
    receiver_cmd = [python, str(ROOT / "bench/webhook_receiver.py"), str(receiver_port)]
    try:
        async with (
            _process(receiver_cmd, out / "receiver.log", dict(os.environ)),
            _process([python, str(ROOT / "run.py")], out / "server.log", env) as server,
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as http,
        ):
            await _wait_up(receiver, "/stats", None)
            await _wait_up(base, "/api/v1/health/ready", server)
            company = await _sign_up(http, base, f"bench-{nonce}@example.com")
            headers = {"Authorization": f"Bearer {company.token}"}
            async with http.get(f"{base}{API}/auth/me", headers=headers) as r:
                company_id = (await r.json())["company"]["id"]
            async with http.post(
                f"{base}{API}/merchant/webhooks",
                json={"url": f"{receiver}/hooks", "events": ["*"]},
                headers=headers,
            ) as r:
                assert r.status == 201, await r.text()

            capacity = await _receiver_capacity(http, receiver, 3.0)
            print(f"receiver alone: {capacity:,.0f} requests/s (64 at a time)")

            # 1. throughput from the outbox
            await _fill_outbox(args.pg_url, schema, company_id, args.events)
            started = time.monotonic()
            profile = out / "profile.svg" if args.profile else None
            spy = None
            if profile is not None:
                target = Target(base, server.pid)
                spy = await _start_profile(target, args.profile, profile, nonblocking=False)
            stats = await _wait_count(http, receiver, args.events, within=600)
            elapsed = time.monotonic() - started
            if spy is not None and profile is not None:
                await _finish_profile(spy, profile)
                await _summarize_profile(profile)
            rate = stats["distinct"] / elapsed
            print(
                f"throughput: {stats['distinct']:,} of {args.events:,} events delivered in "
                f"{elapsed:.1f} s: {rate:,.0f} deliveries/s"
            )
            async with http.post(f"{receiver}/reset") as r:
                await r.read()

            # 2. lag at a steady rate
            sent = await _create_at_rate(http, base, company.token, args.rate, args.duration)
            stats = await _wait_count(http, receiver, sent, within=60)
            print(
                f"lag at {args.rate:,.0f} payments/s for {args.duration:.0f} s ({sent:,} events, "
                f"{stats['distinct']:,} delivered): p50 {stats['p50']} ms, p99 {stats['p99']} ms, "
                f"max {stats['max']} ms"
            )
    finally:
        if not args.keep:
            await _drop_schema(args.pg_url, schema)
            await delete_cluster(args.amqp_url, cluster)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=1000.0, help="payments/s in the lag phase")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--amqp-url", default="amqp://guest:guest@127.0.0.1:5672/")
    parser.add_argument("--out", help="an existing folder for the logs (a new one by default)")
    parser.add_argument("--keep", action="store_true", help="keep the schema and the queues")
    parser.add_argument(
        "--profile",
        type=float,
        metavar="SECONDS",
        help="sample the node with py-spy for this long at the start of the throughput phase",
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
