"""Random interleavings of the money operations keep the books right (decisions 5).

Hypothesis draws sequences of operations: payments created and paid (some after a settlement
delay is set, or cleared), declined checkouts, refunds of random amounts, refunds completed or
rejected through the sandbox, payouts of random amounts to a good or a failing bank account,
cancelled payouts, payouts paid or failed through the sandbox, chargebacks (`payment.reversed`),
and the clock moved on with the due work run (settlements, refunds, payout steps). Each runs
against a real app of its own, in-process over its HTTP API, on a fresh copy of the session's
migrated SQLite file. After every step:

1. the ledger's postings sum to zero, and no transaction is unbalanced (read from storage);
2. the available balance is not below zero, unless a chargeback has happened in the run;
3. no payment is refunded beyond what was paid: its `amountRefundedMinor`, and the sum of its
   refunds that were not rejected, are at most its `amountMinor`;
4. each balance (available, pending, reserved) is the sum of the changes of its movements.

Every answer must be one the step allows (a 5xx never is). The background loops
are slowed to once an hour, so the due work runs only when a step runs it: an example is the same
run each time, which is what lets Hypothesis shrink a failure to its shortest sequence.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import answered, create_payment, pay, sign_up
from tests.money import (
    balance,
    every_item,
    movements,
    paid_payment,
    refund,
    sandbox_key,
    services,
    simulate,
)
from tests.properties import (
    Advance,
    Example,
    answer,
    assert_ledger_balanced,
    example_app,
    examples,
    run_steps,
)

ACCOUNTS = ("available", "pending", "reserved")
GOOD_ACCOUNT = "000123456789"
FAILING_ACCOUNT = "000111111116"  # the simulated bank sends the payout back: no_account


# The operations. Indexes pick among what the run has made so far, modulo its length.


@dataclass(frozen=True)
class Pay:
    amount: int
    delay: int | None  # set the settlement delay to this first; None leaves it


@dataclass(frozen=True)
class Decline:
    amount: int


@dataclass(frozen=True)
class Refund:
    payment: int
    amount: int | None  # None: the payment's whole amount


@dataclass(frozen=True)
class DecideRefund:
    refund: int
    completed: bool


@dataclass(frozen=True)
class Payout:
    amount: int | None  # None: the whole available balance
    failing: bool


@dataclass(frozen=True)
class CancelPayout:
    payout: int


@dataclass(frozen=True)
class DecidePayout:
    payout: int
    paid: bool


@dataclass(frozen=True)
class Chargeback:
    payment: int


Operation = (
    Pay
    | Decline
    | Refund
    | DecideRefund
    | Payout
    | CancelPayout
    | DecidePayout
    | Chargeback
    | Advance
)

AMOUNTS = st.integers(100, 10_000)
INDEXES = st.integers(0, 50)
# Each kind of step, and how many times it is offered: most steps need a paid payment, or a
# refund, to act on. Each offer is a strategy object of its own: one_of picks among its branches
# alike, and offering the very same object twice did not make it likelier.
KINDS: list[tuple[Callable[[], st.SearchStrategy[Operation]], int]] = [
    (lambda: st.builds(Pay, AMOUNTS, st.sampled_from([None, None, None, 0, 3600])), 3),
    (lambda: st.builds(Decline, AMOUNTS), 1),
    (lambda: st.builds(Refund, INDEXES, st.one_of(st.none(), st.integers(1, 10_000))), 3),
    (lambda: st.builds(DecideRefund, INDEXES, st.booleans()), 2),
    (lambda: st.builds(Payout, st.one_of(st.none(), st.integers(1, 10_000)), st.booleans()), 2),
    (lambda: st.builds(CancelPayout, INDEXES), 1),
    (lambda: st.builds(DecidePayout, INDEXES, st.booleans()), 1),
    (lambda: st.builds(Chargeback, INDEXES), 1),
    (lambda: st.builds(Advance, st.sampled_from([1, 2, 5, 30, 600, 3601, 7200])), 2),
]
OPERATIONS: st.SearchStrategy[Operation] = st.one_of(
    [make() for make, offers in KINDS for _ in range(offers)]
)


@dataclass
class Run(Example):
    """One example's app and what it has made so far."""

    payments: list[dict[str, Any]] = field(default_factory=list)  # paid ones
    refunds: list[str] = field(default_factory=list)
    payouts: list[str] = field(default_factory=list)
    accounts: dict[bool, str] = field(default_factory=dict)  # failing? -> bank account id
    chargebacks: int = 0


async def _account(run: Run, failing: bool) -> str:
    if failing not in run.accounts:
        response = await run.client.post(
            "/api/v1/merchant/bank-accounts",
            json={
                "accountHolderName": "Acme Ltd",
                "accountNumber": FAILING_ACCOUNT if failing else GOOD_ACCOUNT,
                "bankCode": "110000000",
                "currency": "USD",
                "country": "US",
            },
            headers=run.member.headers,
        )
        assert response.status == 201, await response.text()
        run.accounts[failing] = (await response.json())["id"]
    return run.accounts[failing]


async def _step(run: Run, op: Operation) -> None:
    client, headers = run.client, run.member.headers
    match op:
        case Pay(amount, delay):
            if delay is not None:
                response = await client.patch(
                    "/api/v1/merchant/settings", json={"settlementDelaySec": delay}, headers=headers
                )
                await answer(response, {200: None}, op)
            run.payments.append(await paid_payment(client, run.member, str(amount)))
        case Decline(amount):
            before = (await balance(client, run.member), len(await movements(client, run.member)))
            payment = await create_payment(client, run.member, amountMinor=str(amount))
            await answer(
                await pay(client, payment["reference"], "4000000000000002"), {402: None}, op
            )
            after = (await balance(client, run.member), len(await movements(client, run.member)))
            assert after == before, (op, before, after)
        case Refund(index, amount) if run.payments:
            payment = run.payments[index % len(run.payments)]
            wanted = payment["amountMinor"] if amount is None else str(amount)
            response = await refund(client, run.member, payment["id"], wanted)
            conflicts = {"refund_exceeds_remaining", "invalid_state", "balance_insufficient"}
            body = await answer(response, {201: None, 409: conflicts}, op)
            if response.status == 201:
                run.refunds.append(body["id"])
        case DecideRefund(index, completed) if run.refunds:
            kind = "refund.completed" if completed else "refund.rejected"
            response = await simulate(
                client, run.key, kind, refundId=run.refunds[index % len(run.refunds)]
            )
            await answer(response, {200: None, 409: {"invalid_state"}}, op)
        case Payout(amount, failing):
            if amount is None:
                amount = (await balance(client, run.member))["available"]
            account = await _account(run, failing)
            response = await client.post(
                "/api/v1/merchant/payouts",
                json={"amountMinor": str(amount), "currency": "USD", "bankAccountId": account},
                headers=headers,
            )
            # A payout of nothing (an empty or negative balance) is not a valid amount.
            allowed: dict[int, set[str] | None] = {201: None, 409: {"balance_insufficient"}}
            if amount <= 0:
                allowed = {400: {"validation_error"}}
            body = await answer(response, allowed, op)
            if response.status == 201:
                run.payouts.append(body["id"])
        case CancelPayout(index) if run.payouts:
            payout = run.payouts[index % len(run.payouts)]
            response = await client.post(
                f"/api/v1/merchant/payouts/{payout}/cancel", headers=headers
            )
            await answer(response, {200: None, 409: {"invalid_state"}}, op)
        case DecidePayout(index, paid) if run.payouts:
            kind = "payout.paid" if paid else "payout.failed"
            response = await simulate(
                client, run.key, kind, payoutId=run.payouts[index % len(run.payouts)]
            )
            await answer(response, {200: None, 409: {"invalid_state"}}, op)
        case Chargeback(index) if run.payments:
            payment = run.payments[index % len(run.payments)]
            response = await simulate(client, run.key, "payment.reversed", paymentId=payment["id"])
            await answer(response, {200: None, 409: {"invalid_state"}}, op)
            if response.status == 200:
                run.chargebacks += 1
        case Advance(seconds):
            run.clock.advance(seconds=seconds)
            money = services(client).money
            await money.settle_due()
            await money.process_refunds()
            await money.advance_payouts()
        case _:
            pass  # nothing of its kind made yet to act on


async def _refunds_of(run: Run, payment_id: str) -> list[dict[str, Any]]:
    return await every_item(
        run.client, run.member, "/api/v1/merchant/refunds", paymentId=payment_id
    )


async def _check(run: Run, done: list[Operation]) -> None:
    """The four properties of the module docstring, after the steps `done`."""
    await assert_ledger_balanced(run.client, done)

    now = await balance(run.client, run.member)
    if run.chargebacks == 0:
        assert now["available"] >= 0, ("available below zero without a chargeback", now, done)

    for payment in run.payments:
        response = await run.client.get(
            f"/api/v1/merchant/payments/{payment['id']}", headers=run.member.headers
        )
        stored = await answered(response, 200)
        paid, refunded = int(stored["amountMinor"]), int(stored["amountRefundedMinor"])
        assert refunded <= paid, ("refunded beyond the payment", stored, done)
        held = sum(
            int(r["amountMinor"])
            for r in await _refunds_of(run, payment["id"])
            if r["status"] != "REJECTED"
        )
        assert held <= paid, ("refunds beyond the payment", payment["id"], held, paid, done)

    sums = dict.fromkeys(ACCOUNTS, 0)
    for movement in await movements(run.client, run.member, currency="USD"):
        for name in ACCOUNTS:
            sums[name] += int(movement["changes"][f"{name}Minor"])
    assert sums == now, ("the balance is not the sum of its movements", now, sums, done)


async def _scenario(template: Path, operations: list[Operation]) -> None:
    async with example_app(template, "mps-money-") as (client, clock):
        member = await sign_up(client)
        key = await sandbox_key(client, member, "payments:write", "refunds:write", "payouts:write")
        await run_steps(Run(client, clock, member, key), operations, _step, _check)


@examples(25)
@given(operations=st.lists(OPERATIONS, min_size=10, max_size=40))
def test_random_money_interleavings_keep_the_ledger_balanced_and_refunds_within_payments(
    sqlite_template: Path, operations: list[Operation]
) -> None:
    asyncio.run(_scenario(sqlite_template, operations))
