"""What a hung (SIGSTOPped) owner costs its cluster: how soon the survivors own its shards, and
how a request passed to it is answered.

    .venv/bin/python bench/paused_peer.py --heartbeat 2 --rounds 3

Starts three `run.py` nodes (a fresh Postgres schema, RabbitMQ, a cluster name of its own, the
broker heartbeat given), signs up one company through node 1, then for each round: pauses the
owner of the company's shard, and at once sends a create for the company to a survivor (it is
passed to the paused owner, whose kernel still accepts the connection), then another one a
second later, and polls the survivors until one of them owns the shard. Prints, per round, how
long until the shard was owned again, and the status and time of each request; then resumes the
owner and waits until the cluster is balanced again before the next round.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import asyncpg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.cluster import LocalCluster, sign_up_on  # noqa: E402

PG_URL = "postgresql://postgres@127.0.0.1:5432/mps_test"
AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/"
AMOUNT = {"amountMinor": "2500", "currency": "USD"}


async def _timed_create(
    http: aiohttp.ClientSession, url: str, headers: dict[str, str], started: float
) -> tuple[int, float, str | None]:
    async with http.post(f"{url}/api/v1/merchant/payments", json=AMOUNT, headers=headers) as r:
        await r.read()
        return r.status, time.monotonic() - started, r.headers.get("Retry-After")


async def _round(
    cluster: LocalCluster, http: aiohttp.ClientSession, company: str, token: str
) -> None:
    owner = cluster.owner_of(company)
    survivors = [i for i in range(len(cluster.nodes)) if i != owner]
    url = cluster.urls()[survivors[0]]
    cluster.pause(owner)
    paused_at = time.monotonic()

    def create() -> asyncio.Future[tuple[int, float, str | None]]:
        headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": secrets.token_hex(8)}
        return asyncio.ensure_future(_timed_create(http, url, headers, paused_at))

    first = create()
    await asyncio.sleep(1.0)
    second = create()
    moved = await asyncio.to_thread(cluster.wait_owned, company, survivors, 60.0)
    results = await asyncio.gather(first, second)
    print(
        f"shard owned again after {moved:.1f} s; "
        + "; ".join(
            f"request sent at +{at:.0f} s: {status} after {took:.1f} s (Retry-After {retry})"
            for at, (status, took, retry) in zip((0, 1), results, strict=True)
        ),
        flush=True,
    )
    cluster.resume(owner)
    await asyncio.to_thread(cluster.wait_balanced, 60.0)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--heartbeat", type=int, default=2, help="the broker heartbeat, seconds")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    schema = f"bench_{secrets.token_hex(4)}"
    with tempfile.TemporaryDirectory() as folder:
        database_url = f"{PG_URL}?schema={schema}"
        try:
            with LocalCluster(
                Path(folder), 3, database_url, AMQP_URL, heartbeat=args.heartbeat
            ) as cluster:
                cluster.wait_balanced(60.0)
                timeout = aiohttp.ClientTimeout(total=60)
                async with aiohttp.ClientSession(timeout=timeout) as http:
                    member = await sign_up_on(http, cluster.urls()[0], "bench@example.com")
                    for _ in range(args.rounds):
                        await _round(cluster, http, member.company, member.token)
        finally:
            admin = await asyncpg.connect(PG_URL)
            try:
                await admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            finally:
                await admin.close()


if __name__ == "__main__":
    asyncio.run(main())
