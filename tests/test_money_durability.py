"""Acknowledged money survives a crash: SIGKILL in the middle of a burst of refunds and payouts,
then a restart on the same data, and every 201 is still there and the ledger still balances."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tests.money import ACCOUNT
from tests.served import (
    BALANCES,
    Burst,
    at_one_moment,
    balance,
    health_of,
    paid_payment,
    sign_up,
)
from tests.server import RunningServer

# No rate limit: a burst of payouts is the point, and payouts are limited to 30 a minute.
ENV = {"MPS_RATE_LIMIT_SCALE": "0", "MPS_ACCESS_LOG": "off"}
PAYMENTS = 10
PAYMENT_AMOUNT = 5000
# 8 x 1000 asked of each payment of 5000, so some refunds are refused for exceeding what remains;
# the first 100 of the shuffled burst ask at most 43700 of the balance of 50000 (for seed 7), so
# refunds and payouts are still being accepted when the kill lands after 100 answers.
REFUNDS_PER_PAYMENT = 8
REFUND_AMOUNT = 1000
PAYOUTS = 100
PAYOUT_AMOUNT = 100
SEED = 7
KILL_AFTER = 100  # answers (201 or 409) before the SIGKILL, out of 180 requests
THREADS = 16


@dataclass
class Load(Burst):
    """What the burst was told: the bodies acknowledged with 201 and the 409s' codes, per kind."""

    acknowledged: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {"refund": [], "payout": []}
    )
    refused: Counter[str] = field(default_factory=Counter)

    def send(self, kind: str, request: Callable[[], Any]) -> None:
        if self.killed.is_set():
            return
        answer = self.call(kind, request)
        if answer is None:
            return
        with self._lock:
            self.acknowledged[kind].append(answer)
            self._answered()

    def refusal_expected(self, what: str, status: int, body: bytes) -> bool:
        if status != 409:
            return False
        self.refused[f"{what} {orjson.loads(body)['code']}"] += 1
        self._answered()
        return True

    def _answered(self) -> None:
        if sum(len(a) for a in self.acknowledged.values()) + self.refused.total() >= KILL_AFTER:
            self.enough.set()


@dataclass
class Books:
    balance: dict[str, int]
    movements: list[dict[str, Any]]
    refunds: list[dict[str, Any]]
    payouts: list[dict[str, Any]]


def test_acknowledged_refunds_and_payouts_survive_sigkill_and_the_ledger_balances(
    tmp_path: Path,
) -> None:
    with RunningServer(tmp_path, env=ENV) as server:
        # given a merchant with ten paid payments of 5000 and a bank account
        token = sign_up(server)
        payments = [paid_payment(server, token, PAYMENT_AMOUNT)["id"] for _ in range(PAYMENTS)]
        account = server.call("/api/v1/merchant/bank-accounts", ACCOUNT, token=token)
        assert balance(server, token) == {
            "available": PAYMENTS * PAYMENT_AMOUNT,
            "pending": 0,
            "reserved": 0,
        }

        # when refunds and payouts are fired from many threads at once, mixed, and the server
        # is killed with SIGKILL while some are acknowledged and more are in flight
        def refund(payment_id: str) -> Callable[[], Any]:
            body = {"paymentId": payment_id, "amountMinor": str(REFUND_AMOUNT)}
            return lambda: server.call("/api/v1/merchant/refunds", body, token=token)

        def payout() -> Any:
            body = {
                "amountMinor": str(PAYOUT_AMOUNT),
                "currency": "USD",
                "bankAccountId": account["id"],
            }
            return server.call("/api/v1/merchant/payouts", body, token=token)

        work: list[tuple[str, Callable[[], Any]]] = [
            ("refund", refund(p)) for p in payments for _ in range(REFUNDS_PER_PAYMENT)
        ]
        work += [("payout", payout)] * PAYOUTS
        random.Random(SEED).shuffle(work)
        load = Load()
        with ThreadPoolExecutor(THREADS) as pool:
            futures = [pool.submit(load.send, kind, request) for kind, request in work]
            assert load.enough.wait(timeout=20), "too few answers to kill after"
            load.killed.set()
            server.kill()
        for future in futures:
            future.result()

    assert not load.unexpected, load.unexpected
    assert load.lost > 0, "the kill landed after the load, not in the middle of it"
    assert load.acknowledged["refund"] and load.acknowledged["payout"]
    assert load.refused["refund refund_exceeds_remaining"], load.refused

    # then after a restart on the same data every acknowledged refund and payout is there
    with RunningServer(tmp_path, env=ENV, port=server.port) as restarted:
        books = Books(
            *at_one_moment(
                restarted,
                token,
                "/api/v1/merchant/balance/transactions?limit=100&currency=USD",
                "/api/v1/merchant/refunds?limit=100",
                "/api/v1/merchant/payouts?limit=100",
            )
        )
        health = health_of(restarted)

    refunds = {r["id"]: r for r in books.refunds}
    payouts = {p["id"]: p for p in books.payouts}
    for acked in load.acknowledged["refund"]:
        assert acked["id"] in refunds, f"acknowledged refund {acked['id']} is gone"
        kept = refunds[acked["id"]]
        assert (kept["paymentId"], kept["amountMinor"]) == (
            acked["paymentId"],
            acked["amountMinor"],
        )
    for acked in load.acknowledged["payout"]:
        assert acked["id"] in payouts, f"acknowledged payout {acked['id']} is gone"
        assert payouts[acked["id"]]["amountMinor"] == acked["amountMinor"]

    # and no payment was refunded beyond its amount, counting every refund that was stored
    refunded: dict[str, int] = dict.fromkeys(payments, 0)
    for r in books.refunds:
        refunded[r["paymentId"]] += int(r["amountMinor"])
    assert max(refunded.values()) <= PAYMENT_AMOUNT, refunded

    # and the balance is the sum of the ledger's movements, balance by balance
    moved = {k: sum(int(m["changes"][f"{k}Minor"]) for m in books.movements) for k in BALANCES}
    assert books.balance == moved
    for m in books.movements:
        assert int(m["amountMinor"]) == sum(int(m["changes"][f"{k}Minor"]) for k in BALANCES), m

    # and no money was made or lost: what was paid in is what is held, plus what left as
    # completed refunds and paid payouts; what is reserved is what is still open
    left = sum(int(r["amountMinor"]) for r in books.refunds if r["status"] == "COMPLETED") + sum(
        int(p["amountMinor"]) for p in books.payouts if p["status"] == "PAID"
    )
    assert sum(books.balance.values()) + left == PAYMENTS * PAYMENT_AMOUNT
    held = sum(int(r["amountMinor"]) for r in books.refunds if r["status"] == "PENDING") + sum(
        int(p["amountMinor"]) for p in books.payouts if p["status"] in ("PENDING", "IN_TRANSIT")
    )
    assert books.balance["reserved"] == held

    # and /health finds the ledger balanced and reconciled with the payments, refunds, payouts
    services = health["services"]
    assert services["ledger"]["status"] == "up", services["ledger"]
    assert services["reconciliation"]["status"] == "up", services["reconciliation"]
