"""An approved action runs exactly once, even across a crash: SIGKILL in the middle of a burst of
votes approving payouts (between a deciding vote and its action), then a restart on the same
data, and every approved payout exists once, every acknowledged approval's payout is there and
the ledger still balances."""

from __future__ import annotations

import http.client
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.error import HTTPError

import orjson

from mps.domain.clock import parse_iso
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
CARD = {"number": "4242424242424242", "expMonth": 12, "expYear": 2099, "cvc": "123"}
BANK_ACCOUNT = {
    "accountHolderName": "Durable Ltd",
    "accountNumber": "000123456789",
    "bankCode": "110000000",
    "currency": "USD",
    "country": "US",
}
BALANCES = ("available", "pending", "reserved")


@dataclass
class Votes:
    """What the burst of approvals was told: the requests acknowledged with 200, by id; how many
    votes the kill cut off; and any other answer (none is expected)."""

    killed: threading.Event = field(default_factory=threading.Event)
    enough: threading.Event = field(default_factory=threading.Event)
    acknowledged: dict[str, dict[str, Any]] = field(default_factory=dict)
    lost: int = 0
    unsent: int = 0
    unexpected: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def approve(self, server: RunningServer, request_id: str, token: str) -> None:
        if self.killed.is_set():
            with self._lock:
                self.unsent += 1
            return
        path = f"/api/v1/team/approvals/requests/{request_id}/approve"
        try:
            answer = server.call(path, {}, token=token)
        except HTTPError as exc:
            with self._lock:
                self.unexpected.append(f"{request_id}: {exc.code} {exc.read()[:300]!r}")
            return
        except (OSError, http.client.HTTPException) as exc:
            with self._lock:
                if self.killed.is_set():
                    self.lost += 1
                else:
                    self.unexpected.append(f"{request_id} before the kill: {exc!r}")
            return
        with self._lock:
            self.acknowledged[request_id] = answer
            if len(self.acknowledged) >= KILL_AFTER:
                self.enough.set()


def _sign_up(server: RunningServer) -> str:
    signup = server.call(
        "/api/v1/auth/signup", {"companyName": "Durable Ltd", "email": "m@example.com"}
    )
    mail = server.call("/api/v1/dev/mailbox?to=m@example.com")
    session = server.call(
        "/api/v1/auth/otp/verify", {"loginId": signup["loginId"], "code": mail["data"][0]["otp"]}
    )
    token: str = session["sessionToken"]
    return token


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


def _every(server: RunningServer, path: str, token: str) -> list[dict[str, Any]]:
    """Every item of a list, following the cursor to its end."""
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = server.call(path + (f"&cursor={cursor}" if cursor else ""), token=token)
        found += page["data"]
        cursor = page["nextCursor"]
        if cursor is None:
            return found


def _requests(server: RunningServer, token: str) -> list[dict[str, Any]]:
    return _every(server, "/api/v1/team/approvals/requests?limit=100", token)


def _balance(server: RunningServer, token: str) -> dict[str, int]:
    body = server.call("/api/v1/merchant/balance?currency=USD", token=token)
    return {k: int(body[f"{k}Minor"]) for k in BALANCES}


def _health(server: RunningServer) -> dict[str, Any]:
    """/health's answer, from loopback so with its details, also when it is a 503."""
    try:
        body: dict[str, Any] = server.call("/api/v1/health")
    except HTTPError as exc:
        body = orjson.loads(exc.read())
    return body


def _settled(server: RunningServer, token: str) -> list[dict[str, Any]]:
    """The requests once none is APPROVED any more (the scheduler's pass at start runs them),
    or as they are after `SETTLE_WITHIN` seconds."""
    deadline = time.monotonic() + SETTLE_WITHIN
    while True:
        requests = _requests(server, token)
        if all(r["status"] != "APPROVED" for r in requests) or time.monotonic() > deadline:
            return requests
        time.sleep(0.2)


@dataclass
class Books:
    balance: dict[str, int]
    requests: list[dict[str, Any]]
    payouts: list[dict[str, Any]]


def _books(server: RunningServer, token: str) -> Books:
    """The balance, the requests and the payouts as of one moment: the simulated bank keeps
    moving payouts on after the restart, so the reads are repeated until the balance is the same
    before and after them (nothing new is created, so an unchanged balance means no payout moved
    in between)."""
    for _ in range(50):
        before = _balance(server, token)
        books = Books(
            before,
            _requests(server, token),
            _every(server, "/api/v1/merchant/payouts?limit=100", token),
        )
        if _balance(server, token) == before:
            return books
    raise AssertionError("the balance never held still for long enough to be read")


def test_each_approved_payout_runs_exactly_once_across_a_sigkill_between_vote_and_action(
    tmp_path: Path,
) -> None:
    votes = Votes()
    with RunningServer(tmp_path, env=ENV) as server:
        # given a merchant with a paid payment of 1,000,000, a bank account, a second member
        # who can vote, and a policy holding every payout above 100 for one approval
        owner = _sign_up(server)
        admin = _add_admin(server, owner)
        payment = server.call(
            "/api/v1/merchant/payments",
            {"amountMinor": str(PAYMENT_AMOUNT), "currency": "USD"},
            token=owner,
        )
        server.call(f"/api/v1/checkout/{payment['reference']}/pay", {"card": CARD})
        account = server.call("/api/v1/merchant/bank-accounts", BANK_ACCOUNT, token=owner)
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
        assert _every(server, "/api/v1/merchant/payouts?limit=100", owner) == []
        assert _balance(server, owner) == {"available": PAYMENT_AMOUNT, "pending": 0, "reserved": 0}

        # when the admin approves them all from many threads at once, and the server is killed
        # with SIGKILL once the first approvals are answered, while more are in flight
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
        first = Counter(r["status"] for r in _requests(restarted, owner))
        settled = _settled(restarted, owner)
        books = _books(restarted, owner)
        health = _health(restarted)

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
