"""The balance snapshots (`balance_snapshots`, mps.persistence.ledger_store): written in the
unit of the postings they sum, so they equal those sums after any mix of movements; proven by
the reconciliation, which names a snapshot that differs; and built by their migration from
the postings written before it."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.persistence.database import Database
from mps.persistence.migrations import load_migrations
from mps.persistence.queries.reconciliation import Mismatch, mismatches
from mps.persistence.statements import Statement
from tests.conftest import Clock
from tests.helpers import Member, answered, created, sign_up
from tests.money import (
    ACCOUNT,
    balance,
    paid_payment,
    refund,
    sandbox_key,
    services,
    simulate,
)

# Only the test moves money: a background pass beside its reads could change a balance.
pytestmark = [pytest.mark.both_backends, pytest.mark.slowed_passes]


FIGURES = ("available", "pending", "reserved", "unsettled")
Balances = dict[tuple[str, str, str], tuple[int, ...]]


async def _snapshots(database: Database) -> Balances:
    rows = await database.fetch(
        f"SELECT company_id, mode, currency, {', '.join(FIGURES)} FROM balance_snapshots"
    )
    return {
        (r["company_id"], r["mode"], r["currency"]): tuple(int(r[f]) for f in FIGURES) for r in rows
    }


async def _sums(database: Database) -> Balances:
    """Every balance as its postings (and open settlements) sum it, read straight from them."""
    found: dict[tuple[str, str, str], list[int]] = {}
    for r in await database.fetch(
        "SELECT company_id, mode, currency, account, SUM(amount_minor) AS total "
        "FROM ledger_postings WHERE account IN ('available', 'pending', 'reserved') "
        "GROUP BY company_id, mode, currency, account"
    ):
        key = (r["company_id"], r["mode"], r["currency"])
        found.setdefault(key, [0, 0, 0, 0])[FIGURES.index(r["account"])] = int(r["total"])
    for r in await database.fetch(
        "SELECT company_id, mode, currency, SUM(amount_minor) AS total FROM settlements "
        "WHERE settled_at IS NULL GROUP BY company_id, mode, currency"
    ):
        key = (r["company_id"], r["mode"], r["currency"])
        found.setdefault(key, [0, 0, 0, 0])[3] = int(r["total"])
    return {key: tuple(figures) for key, figures in found.items()}


async def _every_kind_of_movement(client: TestClient[Any, Any], clock: Clock) -> Member:
    """A company whose ledger has seen every movement a merchant's balance takes part in:
    payments settled at once and later, a refund completed, one rejected, a payout paid, one
    failed, one still reserved, a card funded, spent from and withdrawn from, and chargebacks
    (one taking available below zero); in two currencies."""
    member = await sign_up(client)
    key = await sandbox_key(
        client, member, "payments:write", "refunds:write", "payouts:write", "cards:write"
    )
    app = services(client)
    for currency in ("USD", "EUR"):
        await paid_payment(client, member, "20000", currency)
    refunded = await paid_payment(client, member, "4000")
    done = await answered(await refund(client, member, refunded["id"], "1500"))
    await simulate(client, key, "refund.completed", refundId=done["id"])
    rejected = await answered(await refund(client, member, refunded["id"], "1000"))
    await simulate(client, key, "refund.rejected", refundId=rejected["id"])

    account = await created(client, member, "/api/v1/merchant/bank-accounts", ACCOUNT)
    payouts = [
        await created(
            client,
            member,
            "/api/v1/merchant/payouts",
            {"amountMinor": amount, "currency": "USD", "bankAccountId": account["id"]},
        )
        for amount in ("1000", "1500", "700")
    ]
    await simulate(client, key, "payout.paid", payoutId=payouts[0]["id"])
    await simulate(client, key, "payout.failed", payoutId=payouts[1]["id"])

    card = await created(
        client,
        member,
        "/api/v1/merchant/cards",
        {"cardholderName": "Ann Lee", "currency": "USD", "initialFundingMinor": "3000"},
    )
    await answered(
        await simulate(
            client, key, "card.authorization", cardId=card["id"], amountMinor="800", currency="USD"
        ),
        200,
    )
    await created(
        client,
        member,
        f"/api/v1/merchant/cards/{card['id']}/withdraw",
        {"amountMinor": "1000"},
        200,
    )

    # Credits that wait for settlement: one settles later; one is reversed before it does (the
    # chargeback takes EUR available below zero); one is then refunded from pending while it
    # waits, so its settlement moves only what pending still holds of it; one is left waiting.
    await answered(
        await client.patch(
            "/api/v1/merchant/settings", json={"settlementDelaySec": 3600}, headers=member.headers
        ),
        200,
    )
    await paid_payment(client, member, "6000")
    reversed_early = await paid_payment(client, member, "50000", "EUR")
    await simulate(client, key, "payment.reversed", paymentId=reversed_early["id"])
    waiting = await paid_payment(client, member, "6000", "EUR")
    await answered(await refund(client, member, waiting["id"], "4000"))
    clock.advance(seconds=3601)
    # A pass settles one credit per balance at a time (the next waits for the first's commit):
    # passes run until one finds nothing left to settle.
    while await app.money.settle_due():
        pass
    await paid_payment(client, member, "1200")  # still unsettled at the end
    return member


async def test_every_balance_snapshot_equals_the_sum_of_its_postings_after_every_kind_of_movement(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    # given a company whose ledger saw every kind of movement
    member = await _every_kind_of_movement(client, clock)
    database = services(client).database

    # when the snapshots and the postings are read
    snapshots, sums = await _snapshots(database), await _sums(database)

    # then each snapshot is the sum of its postings and open settlements, the balance shown is
    # the snapshot's, and the reconciliation finds nothing to report
    assert snapshots == sums
    usd = snapshots[(member.company_id, "test", "USD")]
    assert await balance(client, member) == dict(zip(FIGURES[:3], usd[:3], strict=True))
    assert usd[3] == 1200
    assert snapshots[(member.company_id, "test", "EUR")][2] == 4000  # the refund from pending
    assert await mismatches(database, None) == []


async def test_reconciliation_names_a_balance_snapshot_that_differs_from_its_postings(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    # given a company's balances, one of whose snapshots was then changed in storage alone
    member = await _every_kind_of_movement(client, clock)
    app = services(client)
    before = (await _snapshots(app.database))[(member.company_id, "test", "USD")]
    await app.actors.commit(
        Statement(
            "UPDATE balance_snapshots SET reserved = reserved + 7 "
            "WHERE company_id = $1 AND mode = 'test' AND currency = 'USD'",
            (member.company_id,),
        )
    )

    # when the reconciliation runs
    await app.reconciliation.tick()
    health = await (await client.get("/api/v1/health")).json()

    # then it names that snapshot and figure, with what the postings say and what it holds
    assert app.reconciliation.last is not None
    assert app.reconciliation.last.mismatches == [
        Mismatch(
            member.company_id, "test", "USD", "balance snapshot reserved", before[2], before[2] + 7
        )
    ]
    state = health["services"]["reconciliation"]
    assert state["status"] == "degraded" and "balance snapshot reserved" in state["detail"]
    assert health["services"]["ledger"]["status"] == "up"


async def test_the_migration_builds_the_balance_snapshots_from_the_postings_before_it(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    # given a ledger of every kind of movement, as it stood before the snapshots existed
    await _every_kind_of_movement(client, clock)
    app = services(client)
    maintained = await _snapshots(app.database)
    await app.actors.commit(Statement("DELETE FROM balance_snapshots"))
    assert await _snapshots(app.database) == {}

    # when the migration's backfill runs over it
    [migration] = [m for m in load_migrations() if m.name == "balance_snapshots"]
    [backfill] = [s for s in migration.statements() if "INSERT INTO" in s]
    await app.actors.commit(Statement(backfill))

    # then it built the snapshots the writes had kept
    assert await _snapshots(app.database) == maintained
    assert await mismatches(app.database, None) == []
