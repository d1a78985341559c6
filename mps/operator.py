"""The operator's commands (`run.py kyc …`): identity-verification reviews of live mode.

    python run.py kyc pending
    python run.py kyc review co_… --approve [--operator NAME]
    python run.py kyc review co_… --reject --reason "The passport has expired"

A review is a request written to the database; the node that owns the company carries it out
(mps.actors.kyc_desk), with the event and the audit entry, and this command waits (`--wait`
seconds, 30 by default) to print what came of it. It reaches the service through its database
only, so it works for one process and for a cluster alike, and a request made while the service
is down is carried out when it starts. The database is the service's own (MPS_DATABASE_URL, or
the data directory's SQLite file). What it reads and the request it writes are
mps.persistence.operator_requests and mps.persistence.queries.kyc: no SQL here.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from mps.domain.clock import iso, utcnow
from mps.domain.ids import new_id
from mps.persistence import operator_requests
from mps.persistence.database import Database, open_database
from mps.persistence.queries import kyc as q

__all__ = ["main", "pending_reviews", "request_review", "wait_for"]

POLL_INTERVAL = 0.25


async def request_review(
    db: Database, company_id: str, decision: str, reason: str | None, operator: str
) -> str:
    """Write a review request for the company's live status; its id. Refused (ValueError) when
    the company does not exist or a rejection has no reason."""
    if decision == "reject" and not reason:
        msg = "a rejection needs --reason, which the merchant will read"
        raise ValueError(msg)
    if not await operator_requests.company_exists(db, company_id):
        msg = f"no company {company_id}"
        raise ValueError(msg)
    request_id = new_id("opr")
    payload = {"mode": "live", "decision": decision, "reason": reason}
    await operator_requests.submit(
        db, request_id, company_id, "kyc.review", payload, operator, iso(utcnow())
    )
    return request_id


async def wait_for(db: Database, request_id: str) -> dict[str, Any]:
    """What came of the request, once a node has carried it out (the caller bounds the wait)."""
    while True:
        row = await q.operator_request(db, request_id)
        if row is not None and row["done_at"] is not None:
            outcome: dict[str, Any] = orjson.loads(row["outcome"])
            return outcome
        await asyncio.sleep(POLL_INTERVAL)


async def pending_reviews(db: Database) -> list[dict[str, Any]]:
    """Companies whose live status waits for a review, with their pending documents."""
    return await operator_requests.pending_kyc_reviews(db)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="run.py kyc", description="Identity-verification reviews of live mode."
    )
    parser.add_argument("--database-url", help="the service's database (MPS_DATABASE_URL)")
    parser.add_argument("--data-dir", help="the service's data directory (MPS_DATA_DIR)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("pending", help="companies waiting for a review")
    review = commands.add_parser("review", help="approve or reject a company's live status")
    review.add_argument("company_id")
    decision = review.add_mutually_exclusive_group(required=True)
    decision.add_argument("--approve", action="store_true")
    decision.add_argument("--reject", action="store_true")
    review.add_argument("--reason", help="why, for a rejection (shown to the merchant)")
    review.add_argument("--operator", help="who reviews (default: the login name)")
    review.add_argument("--wait", type=float, default=30.0, help="seconds to wait for the result")
    return parser


async def _run(args: argparse.Namespace, database_url: str) -> int:
    db = open_database(database_url)
    await db.open()
    try:
        if args.command == "pending":
            waiting = await pending_reviews(db)
            if not waiting:
                print("No company is waiting for a review.")
            for row in waiting:
                print(
                    f"{row['company_id']}  {row['name']}  {row['documents']} document(s), "
                    f"waiting since {row['since']}"
                )
            return 0
        decision = "approve" if args.approve else "reject"
        operator = args.operator or getpass.getuser()
        try:
            request_id = await request_review(db, args.company_id, decision, args.reason, operator)
        except ValueError as exc:
            print(f"run.py kyc: {exc}", file=sys.stderr)
            return 2
        try:
            async with asyncio.timeout(args.wait):
                outcome = await wait_for(db, request_id)
        except TimeoutError:
            print(
                f"Requested ({request_id}); no running node has carried it out within "
                f"{args.wait:g}s. It will be when the service runs."
            )
            return 3
        if not outcome.get("ok"):
            print(f"run.py kyc: refused: {outcome.get('error')}", file=sys.stderr)
            return 1
        status = "VERIFIED" if decision == "approve" else "REJECTED"
        print(f"{args.company_id}: live identity verification is {status} ({request_id}).")
        return 0
    finally:
        await db.close()


def main(argv: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    args = _parser().parse_args(argv)
    env = env if env is not None else os.environ
    data_dir = Path(args.data_dir or env.get("MPS_DATA_DIR") or "var")
    url = args.database_url or env.get("MPS_DATABASE_URL") or f"sqlite:///{data_dir / 'mps.db'}"
    return asyncio.run(_run(args, url))
