"""The balance and the ledger behind it (decisions 5): PAID credits pending, settlement makes it
available after the mode's delay, every movement is a balanced transaction, and the balance is
the sum of the movements."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.conftest import Clock
from tests.helpers import Member, assert_envelope, sign_up, two_companies
from tests.money import (
    balance,
    movements,
    owner_with_paid_payment,
    paid_payment,
    refund,
    sandbox_key,
    services,
    simulate,
)

pytestmark = pytest.mark.both_backends


async def _settle_after(client: TestClient[Any, Any], member: Member, seconds: int) -> None:
    response = await client.patch(
        "/api/v1/merchant/settings", json={"settlementDelaySec": seconds}, headers=member.headers
    )
    assert response.status == 200, await response.text()


def _sums(found: list[dict[str, Any]]) -> dict[str, int]:
    totals = {"available": 0, "pending": 0, "reserved": 0}
    for movement in found:
        for name in totals:
            totals[name] += int(movement["changes"][f"{name}Minor"])
    return totals


async def test_new_company_has_a_zero_balance_in_each_supported_currency(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)

    response = await client.get("/api/v1/merchant/balance", headers=member.headers)

    body = await response.json()
    assert response.status == 200, body
    currencies = {entry["currency"] for entry in body["data"]}
    assert {"USD", "EUR", "JPY"} <= currencies
    assert all(
        entry["availableMinor"] == entry["pendingMinor"] == entry["reservedMinor"] == "0"
        for entry in body["data"]
    )


async def test_paid_payment_is_available_at_once_in_test_mode(
    client: TestClient[Any, Any],
) -> None:
    member, payment = await owner_with_paid_payment(client, "2500")

    assert await balance(client, member) == {"available": 2500, "pending": 0, "reserved": 0}
    found = await movements(client, member)
    assert [(m["type"], m["amountMinor"], m["sourceId"]) for m in found] == [
        ("settlement", "0", payment["id"]),
        ("payment", "2500", payment["id"]),
    ]


async def test_paid_payment_waits_in_pending_until_the_settlement_delay_passes(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member = await sign_up(client)
    await _settle_after(client, member, 3600)
    await paid_payment(client, member, "2500")
    money = services(client).money

    await money.settle_due()
    assert await balance(client, member) == {"available": 0, "pending": 2500, "reserved": 0}

    clock.advance(seconds=3601)
    await money.settle_due()
    assert await balance(client, member) == {"available": 2500, "pending": 0, "reserved": 0}

    await money.settle_due()  # nothing is settled twice
    assert await balance(client, member) == {"available": 2500, "pending": 0, "reserved": 0}


async def test_refund_reserves_from_available_first_then_pending(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member, settled = await owner_with_paid_payment(client, "1000")
    await _settle_after(client, member, 3600)
    unsettled = await paid_payment(client, member, "3000")

    assert (await refund(client, member, unsettled["id"], "2500")).status == 201

    assert await balance(client, member) == {"available": 0, "pending": 1500, "reserved": 2500}
    reservation = (await movements(client, member, type="refund_reservation"))[0]
    assert reservation["changes"] == {
        "availableMinor": "-1000",
        "pendingMinor": "-1500",
        "reservedMinor": "2500",
    }
    # The unsettled credit settles what pending still holds of it.
    clock.advance(seconds=3601)
    await services(client).money.settle_due()
    assert await balance(client, member) == {"available": 1500, "pending": 0, "reserved": 2500}
    assert settled


async def test_rejected_refund_from_pending_returns_to_available_once_settled(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member = await sign_up(client)
    key = await sandbox_key(client, member)
    await _settle_after(client, member, 3600)
    payment = await paid_payment(client, member, "3000")
    created = await (await refund(client, member, payment["id"], "3000")).json()
    clock.advance(seconds=3601)
    await services(client).money.settle_due()
    assert await balance(client, member) == {"available": 0, "pending": 0, "reserved": 3000}

    await simulate(client, key, "refund.rejected", refundId=created["id"])

    # The credit it came from has settled: pending would never settle it again.
    assert await balance(client, member) == {"available": 3000, "pending": 0, "reserved": 0}


async def _paid_with_a_key(client: TestClient[Any, Any]) -> tuple[Member, dict[str, str], Any]:
    """A new member's paid payment of 2500, and a sandbox key that can reverse it or settle
    its refunds."""
    member = await sign_up(client)
    key = await sandbox_key(client, member, "payments:write", "refunds:write")
    return member, key, await paid_payment(client, member, "2500")


async def test_chargeback_debits_what_remains_from_available(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member, key, payment = await _paid_with_a_key(client)
    await refund(client, member, payment["id"], "1000")
    clock.advance(seconds=5)
    await services(client).money.process_refunds()

    response = await simulate(client, key, "payment.reversed", paymentId=payment["id"])

    assert response.status == 200, await response.text()
    # 2500 paid, 1000 refunded: the chargeback takes the other 1500.
    assert await balance(client, member) == {"available": 0, "pending": 0, "reserved": 0}
    chargeback = (await movements(client, member, type="chargeback"))[0]
    assert chargeback["amountMinor"] == "-1500" and chargeback["sourceId"] == payment["id"]


async def test_chargeback_before_settlement_takes_available_below_zero(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member = await sign_up(client)
    key = await sandbox_key(client, member, "payments:write")
    await _settle_after(client, member, 3600)
    payment = await paid_payment(client, member, "2500")

    await simulate(client, key, "payment.reversed", paymentId=payment["id"])

    assert await balance(client, member) == {"available": -2500, "pending": 2500, "reserved": 0}
    # The credit still settles, and the two cancel out.
    clock.advance(seconds=3601)
    await services(client).money.settle_due()
    assert await balance(client, member) == {"available": 0, "pending": 0, "reserved": 0}


async def test_chargeback_leaves_what_a_pending_refund_holds(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member, key, payment = await _paid_with_a_key(client)
    held = await (await refund(client, member, payment["id"], "1000")).json()

    await simulate(client, key, "payment.reversed", paymentId=payment["id"])
    await simulate(client, key, "refund.completed", refundId=held["id"])

    assert await balance(client, member) == {"available": 0, "pending": 0, "reserved": 0}
    response = await client.get(
        f"/api/v1/merchant/payments/{payment['id']}", headers=member.headers
    )
    after = await response.json()
    assert after["status"] == "REVERSED" and after["amountRefundedMinor"] == "1000"


async def test_balance_is_the_sum_of_its_movements_and_each_movement_is_typed(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member = await sign_up(client)
    key = await sandbox_key(client, member)
    one = await paid_payment(client, member, "2500")
    two = await paid_payment(client, member, "700", currency="EUR")
    done = await (await refund(client, member, one["id"], "300")).json()
    await simulate(client, key, "refund.completed", refundId=done["id"])
    rejected = await (await refund(client, member, two["id"], "700")).json()
    await simulate(client, key, "refund.rejected", refundId=rejected["id"])

    for currency in ("USD", "EUR"):
        found = await movements(client, member, currency=currency)
        assert _sums(found) == await balance(client, member, currency)
    usd = await movements(client, member, currency="USD")
    assert {m["type"] for m in usd} == {"payment", "settlement", "refund_reservation", "refund"}
    assert all(m["id"].startswith("txn_") and m["createdAt"].endswith("Z") for m in usd)
    assert await balance(client, member, "USD") == {"available": 2200, "pending": 0, "reserved": 0}
    assert await balance(client, member, "EUR") == {"available": 700, "pending": 0, "reserved": 0}


async def test_movements_page_with_a_cursor_and_filter_by_source(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    payments = [await paid_payment(client, member, "100") for _ in range(3)]

    first = await client.get(
        "/api/v1/merchant/balance/transactions", params={"limit": "4"}, headers=member.headers
    )
    page = await first.json()
    of_one = await movements(client, member, sourceId=payments[0]["id"])

    assert len(page["data"]) == 4 and page["hasMore"] is True and page["nextCursor"]
    assert len(await movements(client, member)) == 6
    assert {m["type"] for m in of_one} == {"payment", "settlement"}


async def test_ledger_sums_to_zero_in_storage(client: TestClient[Any, Any]) -> None:
    member, payment = await owner_with_paid_payment(client, "2500")
    await refund(client, member, payment["id"], "1000")
    database = services(client).database

    total = await database.fetchval("SELECT SUM(amount_minor) FROM ledger_postings")
    per_transaction = await database.fetch(
        "SELECT transaction_id FROM ledger_postings GROUP BY transaction_id "
        "HAVING SUM(amount_minor) <> 0"
    )

    assert int(total) == 0 and per_transaction == []


async def test_another_company_sees_none_of_the_balance(client: TestClient[Any, Any]) -> None:
    owner, other = await two_companies(client)
    await paid_payment(client, owner, "2500")

    assert await balance(client, other) == {"available": 0, "pending": 0, "reserved": 0}
    assert await movements(client, other) == []


async def test_bad_balance_queries_are_400(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)

    for path, params in (
        ("/api/v1/merchant/balance", {"currency": "us dollars"}),
        ("/api/v1/merchant/balance/transactions", {"type": "gift"}),
        ("/api/v1/merchant/balance/transactions", {"cursor": "nonsense"}),
    ):
        response = await client.get(path, params=params, headers=member.headers)
        assert response.status == 400, (path, params)
        assert_envelope(await response.json(), 400)


async def test_a_refund_rejected_after_a_chargeback_leaves_the_balance_too(
    client: TestClient[Any, Any],
) -> None:
    # given a payment whose whole amount a pending refund holds when it is charged back
    member, key, payment = await _paid_with_a_key(client)
    held = await (await refund(client, member, payment["id"], "2500")).json()
    await simulate(client, key, "payment.reversed", paymentId=payment["id"])
    assert await balance(client, member) == {"available": 0, "pending": 0, "reserved": 2500}

    # when the refund is rejected
    await simulate(client, key, "refund.rejected", refundId=held["id"])

    # then the money goes with the chargeback instead of back to the merchant
    assert await balance(client, member) == {"available": 0, "pending": 0, "reserved": 0}
    chargebacks = await movements(client, member, type="chargeback")
    assert sum(int(m["amountMinor"]) for m in chargebacks) == -2500
