"""Audited writes against plain ones: 20 concurrent payouts beside 20 concurrent creates.

    .venv/bin/python bench/audited.py
    .venv/bin/python bench/audited.py --latency 0.05 --rounds 5 --database-url postgresql://...

The service runs in this process (development mode, the in-memory broker) on a database that
answers every round trip, a read or a group commit, `--latency` seconds late (50 ms by
default, a distant database server). One company signs up, is paid enough to pay out, and adds
a bank account; then each round sends `--concurrency` payment creates at once and times them
until the last answer, then as many payouts. A payout is audited (its entry joins the company's
hash chain in the same unit) and moves money (a reservation in the books); a create is neither.

Printed: the median round of each, their ratio, and the group commits each round took. Since
the audit chain is extended in memory (mps.actors.company.audit), the payouts share group
commits as the creates do; the target is payouts within twice the creates' time. Before, the
chain was extended under a lock held across each commit, one payout per group commit: 20 took
1.55 s where 20 creates took 0.17 s at 50 ms.

The last line checks the audit chain through the API (`/team/audit/verify`).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.distant import DistantDatabase, distant_service, latency_arguments, paid_payment
from tests.helpers import Member, sign_up

ACCOUNT = {
    "accountHolderName": "Acme Ltd",
    "accountNumber": "000123456789",
    "bankCode": "110000000",
    "currency": "USD",
    "country": "US",
}


async def _round(
    db: DistantDatabase, send: Callable[[], Awaitable[Any]], concurrency: int
) -> tuple[float, int]:
    """Seconds until the last of `concurrency` concurrent requests answered, and the group
    commits meanwhile."""
    commits = db.commits
    started = time.perf_counter()
    responses = await asyncio.gather(*(send() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    failed = [r.status for r in responses if r.status != 201]
    if failed:
        msg = f"requests failed: {failed}"
        raise RuntimeError(msg)
    return elapsed, db.commits - commits


async def _prepare(client: TestClient[Any, Any], need: int) -> tuple[Member, str]:
    member = await sign_up(client)
    await paid_payment(client, member, need)
    account = await client.post(
        "/api/v1/merchant/bank-accounts", json=ACCOUNT, headers=member.headers
    )
    assert account.status == 201, await account.text()
    return member, (await account.json())["id"]


async def run(args: argparse.Namespace) -> None:
    async with distant_service(args.latency, args.database_url) as (client, db):
        member, account_id = await _prepare(client, 100 * args.concurrency * args.rounds)

        def create() -> Awaitable[Any]:
            body = {"amountMinor": "100", "currency": "USD"}
            return client.post("/api/v1/merchant/payments", json=body, headers=member.headers)

        def payout() -> Awaitable[Any]:
            body = {"amountMinor": "100", "currency": "USD", "bankAccountId": account_id}
            return client.post("/api/v1/merchant/payouts", json=body, headers=member.headers)

        creates = [await _round(db, create, args.concurrency) for _ in range(args.rounds)]
        payouts = [await _round(db, payout, args.concurrency) for _ in range(args.rounds)]
        verify = await client.get("/api/v1/team/audit/verify", headers=member.headers)
        verdict = await verify.json()

    create_s = statistics.median(s for s, _ in creates)
    payout_s = statistics.median(s for s, _ in payouts)
    n, ms = args.concurrency, args.latency * 1000
    print(f"{n} concurrent creates at {ms:.0f} ms: {create_s:.3f} s (median of {args.rounds}), "
          f"group commits per round {[c for _, c in creates]}")  # fmt: skip
    print(f"{n} concurrent payouts at {ms:.0f} ms: {payout_s:.3f} s (median of {args.rounds}), "
          f"group commits per round {[c for _, c in payouts]}")  # fmt: skip
    print(f"payouts / creates: {payout_s / create_s:.2f} (target <= 2)")
    print(f"audit chain: valid={verdict['valid']} entries={verdict['checked']}")


def parse_args() -> argparse.Namespace:
    parser = latency_arguments(
        __doc__.splitlines()[0],
        concurrency="requests at once",
        rounds="rounds of each, median shown",
    )
    return parser.parse_args()


def main() -> None:
    asyncio.run(run(parse_args()))


if __name__ == "__main__":
    main()
