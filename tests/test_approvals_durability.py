"""An approved action runs exactly once, even across a crash: SIGKILL in the middle of a burst of
votes approving payouts (between a deciding vote and its action), then a restart on the same
data, and every approved payout exists once, every acknowledged approval's payout is there and
the ledger still balances."""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mps.domain.clock import parse_iso
from tests.money import ACCOUNT
from tests.served import Burst, at_one_moment, balance, every, health_of, paid_payment, sign_up
from tests.server import RunningServer

# No rate limit: a burst of payouts is the point, and payouts are limited to 30 a minute.
ENV = {"MPS_RATE_LIMIT_SCALE": "0", "MPS_ACCESS_LOG": "off"}
PAYMENT_AMOUNT = 1_000_000
THRESHOLD = 100
PAYOUTS = 20
PAYOUT_AMOUNT = 1000
KILL_AFTER = 3  # approvals answered before the SIGKILL, out of 20
THREADS = 12  # fewer than the votes, so the kill also finds some not yet sent
SETTLE_WITHIN = 15.0  # seconds for the scheduler to run what was approved and not yet run


REQUESTS = "/api/v1/team/approvals/requests?limit=100"
PAYOUT_LIST = "/api/v1/merchant/payouts?limit=100"


@dataclass
class Books:
    """The balance, the approval requests and the payouts, read as of one moment."""

    balance: dict[str, int]
    requests: list[dict[str, Any]]
    payouts: list[dict[str, Any]]


@dataclass
class Votes(Burst):
    """What the burst of approvals was told: the requests acknowledged with 200, by id, and how
    many votes were never sent because the kill came first."""

    acknowledged: dict[str, dict[str, Any]] = field(default_factory=dict)
    unsent: int = 0

    def approve(self, server: RunningServer, request_id: str, token: str) -> None:
        if self.killed.is_set():
            with self._lock:
                self.unsent += 1
            return
        path = f"/api/v1/team/approvals/requests/{request_id}/approve"
        answer = self.call(request_id, lambda: server.call(path, {}, token=token))
        if answer is None:
            return
        with self._lock:
            self.acknowledged[request_id] = answer
            if len(self.acknowledged) >= KILL_AFTER:
                self.enough.set()


def _add_admin(server: RunningServer, owner: str) -> str:
    """A second member who can vote, through the invitation link and its code; their token."""
    email = "admin@example.com"
    server.call("/api/v1/team/invitations", {"email": email, "roleId": "role_admin"}, token=owner)
    link = server.call(f"/api/v1/dev/mailbox?to={email}")["data"][0]["link"]
    invitation = link.rsplit("/", 1)[1]
    accepted = server.call(f"/api/v1/team/invitations/token/{invitation}/accept", method="POST")
    code = server.call(f"/api/v1/dev/mailbox?to={email}")["data"][0]["otp"]
    session = server.call(
        "/api/v1/auth/otp/verify",
        {"loginId": accepted["loginId"], "code": code, "companyId": accepted["companyId"]},
    )
    token: str = session["sessionToken"]
    return token


def _settled(server: RunningServer, token: str) -> list[dict[str, Any]]:
    """The requests once none is APPROVED any more (the scheduler's pass at start runs them),
    or as they are after `SETTLE_WITHIN` seconds."""
    deadline = time.monotonic() + SETTLE_WITHIN
    while True:
        requests = every(server, REQUESTS, token)
        if all(r["status"] != "APPROVED" for r in requests) or time.monotonic() > deadline:
            return requests
        time.sleep(0.2)


def test_each_approved_payout_runs_exactly_once_across_a_sigkill_between_vote_and_action(
    tmp_path: Path,
) -> None:
    with RunningServer(tmp_path, env=ENV) as server:
        # given a merchant with a paid payment of 1,000,000, a bank account, a second member
        # who can vote, and a policy holding every payout above 100 for one approval
        owner = sign_up(server)
        admin = _add_admin(server, owner)
        paid_payment(server, owner, PAYMENT_AMOUNT)
        account = server.call("/api/v1/merchant/bank-accounts", ACCOUNT, token=owner)
        policy = {"enabled": True, "thresholds": {"USD": str(THRESHOLD)}, "requiredApprovals": 1}
        server.call(
            "/api/v1/team/approvals/policies/payout.create", policy, token=owner, method="PUT"
        )
        # and twenty payouts of 1000 waiting for it
        body = {
            "amountMinor": str(PAYOUT_AMOUNT),
            "currency": "USD",
            "bankAccountId": account["id"],
        }
        held = [
            server.call("/api/v1/merchant/payouts", body, token=owner)["approvalRequest"]
            for _ in range(PAYOUTS)
        ]
        assert {r["status"] for r in held} == {"PENDING"}
        assert every(server, PAYOUT_LIST, owner) == []
        assert balance(server, owner) == {"available": PAYMENT_AMOUNT, "pending": 0, "reserved": 0}

        # when the admin approves them all from many threads at once, and the server is killed
        # with SIGKILL once the first approvals are answered, while more are in flight
        votes = Votes()
        with ThreadPoolExecutor(THREADS) as pool:
            futures = [pool.submit(votes.approve, server, r["id"], admin) for r in held]
            assert votes.enough.wait(timeout=20), "too few approvals answered to kill after"
            votes.killed.set()
            server.kill()
            killed_at = datetime.now(UTC)
        for future in futures:
            future.result()

    assert not votes.unexpected, votes.unexpected
    assert len(votes.acknowledged) >= KILL_AFTER
    assert len(votes.acknowledged) < PAYOUTS, "the kill landed after every vote was answered"
    for request_id, answer in votes.acknowledged.items():
        assert answer["status"] == "EXECUTED", answer
        assert answer["result"]["amountMinor"] == str(PAYOUT_AMOUNT), (request_id, answer)

    # then after a restart on the same data, once the scheduler has run what was approved
    restarted_at = datetime.now(UTC)
    with RunningServer(tmp_path, env=ENV, port=server.port) as restarted:
        first = Counter(r["status"] for r in every(restarted, REQUESTS, owner))
        settled = _settled(restarted, owner)
        books = Books(*at_one_moment(restarted, owner, REQUESTS, PAYOUT_LIST))
        health = health_of(restarted)

    statuses = Counter(r["status"] for r in books.requests)
    executed = [r for r in books.requests if r["status"] == "EXECUTED"]
    after_restart = [r for r in executed if parse_iso(r["decidedAt"]) >= restarted_at]
    before_kill = [r for r in executed if parse_iso(r["decidedAt"]) <= killed_at]
    distribution = (
        f"acknowledged {len(votes.acknowledged)}, cut off {votes.lost}, unsent {votes.unsent}; "
        f"first read after restart {dict(first)}, settled {dict(statuses)}; executed before "
        f"the kill {len(before_kill)}, by the scheduler after the restart {len(after_restart)}"
    )

    # every request is PENDING (its vote never landed), EXECUTED or FAILED; none is APPROVED
    assert len(books.requests) == PAYOUTS
    assert {r["id"] for r in books.requests} == {r["id"] for r in held}
    assert all(r["status"] != "APPROVED" for r in settled), distribution
    assert set(statuses) <= {"PENDING", "EXECUTED", "FAILED"}, distribution
    for r in books.requests:
        expected_votes = 0 if r["status"] == "PENDING" else 1
        assert len(r["votes"]) == expected_votes, r
    # and each was executed either before the kill or by the scheduler after the restart
    assert len(before_kill) + len(after_restart) == len(executed), distribution

    # and each EXECUTED request's payout exists, once: as many payouts as executed requests,
    # each request's result a different one of them
    payouts = {p["id"]: p for p in books.payouts}
    assert len(books.payouts) == len(payouts) == len(executed), distribution
    results = [r["result"]["id"] for r in executed]
    assert len(set(results)) == len(results), "two requests name the same payout"
    assert set(results) == set(payouts)
    for r in executed:
        assert payouts[r["result"]["id"]]["amountMinor"] == str(PAYOUT_AMOUNT)

    # and every approval acknowledged before the kill ran, with the payout it answered with
    by_id = {r["id"]: r for r in books.requests}
    for request_id, answer in votes.acknowledged.items():
        kept = by_id[request_id]
        assert kept["status"] == "EXECUTED", f"acknowledged approval {request_id} was lost"
        assert kept["result"]["id"] == answer["result"]["id"]

    # and no money was made or lost: what was paid in is what is held plus what left as paid
    # payouts; what is reserved is what is still on its way to the bank
    paid = sum(int(p["amountMinor"]) for p in books.payouts if p["status"] == "PAID")
    assert sum(books.balance.values()) + paid == PAYMENT_AMOUNT, (books.balance, paid)
    held_back = sum(
        int(p["amountMinor"]) for p in books.payouts if p["status"] in ("PENDING", "IN_TRANSIT")
    )
    assert books.balance["reserved"] == held_back
    assert sum(p["status"] == "FAILED" for p in books.payouts) == 0

    # and /health finds the ledger balanced and reconciled with the payments and payouts
    services = health["services"]
    assert services["ledger"]["status"] == "up", services["ledger"]
    assert services["reconciliation"]["status"] == "up", services["reconciliation"]
