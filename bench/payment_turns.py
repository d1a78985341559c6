"""A payment's turns against a distant database: what waits for a refund's commit.

    .venv/bin/python bench/payment_turns.py
    .venv/bin/python bench/payment_turns.py --latency 0.05 --rounds 5 --database-url postgresql://...

The service runs in this process (development mode, the in-memory broker) on a database that
answers every round trip `--latency` seconds late (50 ms by default). One company is paid; each
round, one refund of half a fresh payment is asked for and, at once, `--concurrency` refunds of
the whole payment to the same payment, which its actor refuses 409 (half is reserved).

Printed: the median time until the refund is answered 201 (it waits for its commit, through the
company's books), and until the last of the refusals is answered. A payment's turn that waits for
its own commit makes every refusal queue behind the refund's commit; one that reserves and hands
the unit over answers them from memory while the commit is in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.distant import distant_service, latency_arguments, paid_payment
from tests.helpers import Member, sign_up


async def _round(
    client: TestClient[Any, Any], member: Member, concurrency: int
) -> tuple[float, float]:
    """Seconds until the refund was answered, and until the last refusal was."""
    payment_id = await paid_payment(client, member, 2000)

    async def refund(amount: int) -> tuple[int, float]:
        response = await client.post(
            "/api/v1/merchant/refunds",
            json={"paymentId": payment_id, "amountMinor": str(amount)},
            headers=member.headers,
        )
        await response.read()
        return response.status, time.perf_counter()

    started = time.perf_counter()
    first = asyncio.ensure_future(refund(1000))
    # The refund's request reaches the payment's actor first (one event loop, FIFO tasks).
    await asyncio.sleep(0)
    refusals = await asyncio.gather(*(refund(2000) for _ in range(concurrency)))
    made, made_at = await first
    if made != 201 or any(status != 409 for status, _ in refusals):
        msg = f"unexpected answers: {made}, {[status for status, _ in refusals]}"
        raise RuntimeError(msg)
    return made_at - started, max(at for _, at in refusals) - started


async def run(args: argparse.Namespace) -> None:
    async with distant_service(args.latency, args.database_url) as (client, _):
        member = await sign_up(client)
        rounds = [await _round(client, member, args.concurrency) for _ in range(args.rounds)]

    made = statistics.median(m for m, _ in rounds)
    refused = statistics.median(r for _, r in rounds)
    n, ms = args.concurrency, args.latency * 1000
    print(f"refund answered 201 at {ms:.0f} ms per round trip: {made:.3f} s (median of "
          f"{args.rounds})")  # fmt: skip
    print(f"last of {n} refusals answered 409: {refused:.3f} s; refusals / refund: "
          f"{refused / made:.2f}")  # fmt: skip


def parse_args() -> argparse.Namespace:
    parser = latency_arguments(
        __doc__.splitlines()[0], concurrency="refusals at once", rounds="rounds, median shown"
    )
    return parser.parse_args()


def main() -> None:
    asyncio.run(run(parse_args()))


if __name__ == "__main__":
    main()
