"""HTTP benchmark: payments created per second through the whole stack.

Starts `run.py` (development mode, SQLite, in-process broker) in a subprocess on a free port,
signs up companies through the real sign-in flow, then fires POST /api/v1/merchant/payments
from `--concurrency` concurrent clients, either all for one company (its company actor
serializes every create) or spread over `--companies` companies. Prints creates per second
and latency percentiles. The client runs in this process, so on a 2-core machine client and
server share the CPU: the figures are a floor, not a ceiling.

    .venv/bin/python bench/api.py --requests 3000 --concurrency 64
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _wait_up(session: aiohttp.ClientSession, base: str) -> None:
    for _ in range(200):
        try:
            async with session.get(f"{base}/api/v1/health/live") as response:
                if response.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError("server did not start")


async def _sign_up(session: aiohttp.ClientSession, base: str, n: int) -> str:
    email = f"bench{n}@example.com"
    async with session.post(
        f"{base}/api/v1/auth/signup", json={"companyName": f"Bench {n}", "email": email}
    ) as response:
        login_id = (await response.json())["loginId"]
    async with session.get(f"{base}/api/v1/dev/mailbox", params={"to": email}) as response:
        code = (await response.json())["data"][0]["otp"]
    async with session.post(
        f"{base}/api/v1/auth/otp/verify", json={"loginId": login_id, "code": code}
    ) as response:
        token: str = (await response.json())["sessionToken"]
    return token


async def _fire(
    session: aiohttp.ClientSession, base: str, tokens: list[str], requests: int, concurrency: int
) -> tuple[float, list[float]]:
    latencies: list[float] = []
    counter = iter(range(requests))

    async def client() -> None:
        for n in counter:
            token = tokens[n % len(tokens)]
            started = time.perf_counter()
            async with session.post(
                f"{base}/api/v1/merchant/payments",
                json={"amountMinor": "1000", "currency": "USD"},
                headers={"Authorization": f"Bearer {token}"},
            ) as response:
                await response.read()
                if response.status != 201:
                    raise RuntimeError(f"create answered {response.status}")
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return time.perf_counter() - started, latencies


def _report(label: str, elapsed: float, latencies: list[float]) -> None:
    ordered = sorted(latencies)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[int(len(ordered) * 0.99) - 1] * 1000
    print(f"  {label:<34} {len(latencies) / elapsed:>8.0f} {p50:>8.1f} {p99:>8.1f}")


async def main(args: argparse.Namespace) -> None:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data_dir:
        env = {**os.environ, "MPS_PORT": str(port), "MPS_DATA_DIR": data_dir}
        server = await asyncio.create_subprocess_exec(
            sys.executable,
            str(ROOT / "run.py"),
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            connector = aiohttp.TCPConnector(limit=args.concurrency)
            async with aiohttp.ClientSession(connector=connector) as session:
                await _wait_up(session, base)
                # The standard limit is 600 requests a minute per user, so each run's requests
                # are spread over enough users to stay under it.
                per_user = 500
                users = max(1, -(-args.requests // per_user))
                print(
                    f"payment creates over HTTP, {args.requests} requests, "
                    f"{args.concurrency} concurrent clients"
                )
                print(f"  {'case':<34} {'per s':>8} {'p50 ms':>8} {'p99 ms':>8}")
                # One company's creates all pass through its one company actor; one user may
                # make only so many requests a minute, so this case is capped at per_user.
                owner = await _sign_up(session, base, 0)
                elapsed, latencies = await _fire(
                    session, base, [owner], min(args.requests, per_user), args.concurrency
                )
                _report("one company (one actor)", elapsed, latencies)
                many = [
                    await _sign_up(session, base, 1000 + n)
                    for n in range(max(users, args.companies))
                ]
                elapsed, latencies = await _fire(
                    session, base, many, args.requests, args.concurrency
                )
                _report(f"{len(many)} companies", elapsed, latencies)
        finally:
            server.terminate()
            await asyncio.wait_for(server.wait(), 10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--companies", type=int, default=16)
    asyncio.run(main(parser.parse_args()))
