"""Bank accounts and payouts (decisions 5): accounts stored encrypted and shown masked, payouts
that reserve available funds and travel PENDING -> IN_TRANSIT -> PAID, or come back FAILED, or
are CANCELLED while PENDING, with the funds returned."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from tests.conftest import Clock
from tests.helpers import (
    Member,
    answered,
    assert_refused,
    event_types,
    live_session,
    post_as,
    read_object,
    sign_in,
    sign_up,
    two_companies,
)
from tests.money import (
    ACCOUNT,
    balance,
    bank_steps,
    movements,
    paid_payment,
    sandbox_key,
    services,
    simulate,
)

pytestmark = pytest.mark.both_backends


async def _account(client: TestClient[Any, Any], member: Member, **changes: Any) -> dict[str, Any]:
    response = await client.post(
        "/api/v1/merchant/bank-accounts", json={**ACCOUNT, **changes}, headers=member.headers
    )
    body: dict[str, Any] = await answered(response)
    return body


async def _funded(client: TestClient[Any, Any], **account: Any) -> tuple[Member, dict[str, Any]]:
    """A new member holding 5000 available, and a bank account of theirs (of `account`)."""
    member = await sign_up(client)
    await paid_payment(client, member, "5000")
    return member, await _account(client, member, **account)


async def _payout(
    client: TestClient[Any, Any], member: Member, account_id: str, amount: str, **extra: Any
) -> Any:
    return await post_as(
        client,
        member,
        "/api/v1/merchant/payouts",
        {"amountMinor": amount, "currency": "USD", "bankAccountId": account_id, **extra},
    )


async def test_bank_account_is_masked_encrypted_and_announced_to_the_owners(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)

    account = await _account(client, member)

    assert account["id"].startswith("ba_") and account["status"] == "VERIFIED"
    assert account["last4"] == "6789" and account["accountNumberMasked"] == "****6789"
    assert "000123456789" not in str(account)
    stored = await services(client).database.fetchval(
        "SELECT account_number FROM bank_accounts WHERE id = $1", account["id"]
    )
    assert "123456789" not in stored
    mail = await client.get("/api/v1/dev/mailbox", params={"to": member.email})
    subjects = [m["subject"] for m in (await mail.json())["data"]]
    assert "A bank account was added" in subjects


async def test_bank_accounts_are_listed_retrieved_and_deleted(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    first = await _account(client, member)
    second = await _account(client, member, currency="EUR", country="DE")

    listed = await client.get("/api/v1/merchant/bank-accounts", headers=member.headers)
    deleted = await client.delete(
        f"/api/v1/merchant/bank-accounts/{first['id']}", headers=member.headers
    )
    gone = await client.get(f"/api/v1/merchant/bank-accounts/{first['id']}", headers=member.headers)
    again = await client.delete(
        f"/api/v1/merchant/bank-accounts/{first['id']}", headers=member.headers
    )

    assert [a["id"] for a in (await listed.json())["data"]] == [second["id"], first["id"]]
    assert deleted.status == 200 and (await deleted.json())["deleted"] is True
    assert gone.status == 404 and again.status == 404
    mail = await client.get("/api/v1/dev/mailbox", params={"to": member.email})
    assert "A bank account was removed" in [m["subject"] for m in (await mail.json())["data"]]


async def test_payout_reserves_available_funds_and_travels_to_paid(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member, account = await _funded(client)

    response = await _payout(client, member, account["id"], "3000", description="weekly")

    payout = await response.json()
    assert response.status == 201, payout
    assert payout["id"].startswith("po_") and payout["status"] == "PENDING"
    assert payout["bankAccountId"] == account["id"] and payout["description"] == "weekly"
    assert await balance(client, member) == {"available": 2000, "pending": 0, "reserved": 3000}

    await bank_steps(client, clock)
    in_transit = await read_object(client, member, "payouts", payout["id"])
    assert in_transit["status"] == "IN_TRANSIT" and in_transit["arrivalAt"]

    await bank_steps(client, clock)
    assert (await read_object(client, member, "payouts", payout["id"]))["status"] == "PAID"
    assert await balance(client, member) == {"available": 2000, "pending": 0, "reserved": 0}
    paid = (await movements(client, member, type="payout"))[0]
    assert paid["amountMinor"] == "-3000" and paid["sourceId"] == payout["id"]
    types = await event_types(client, member)
    assert "payout.created" in types and "payout.paid" in types


async def test_payout_beyond_available_is_409_and_pending_funds_do_not_count(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    await paid_payment(client, member, "1000")
    await client.patch(
        "/api/v1/merchant/settings", json={"settlementDelaySec": 3600}, headers=member.headers
    )
    await paid_payment(client, member, "5000")
    account = await _account(client, member)

    response = await _payout(client, member, account["id"], "1001")

    await assert_refused(response, 409, "balance_insufficient")
    assert await balance(client, member) == {"available": 1000, "pending": 5000, "reserved": 0}
    assert (await _payout(client, member, account["id"], "1000")).status == 201


async def test_cancel_while_pending_returns_the_funds_and_later_is_409(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member, account = await _funded(client)
    first = await (await _payout(client, member, account["id"], "1000")).json()
    second = await (await _payout(client, member, account["id"], "2000")).json()

    cancelled = await client.post(
        f"/api/v1/merchant/payouts/{first['id']}/cancel", headers=member.headers
    )
    await bank_steps(client, clock)
    late = await client.post(
        f"/api/v1/merchant/payouts/{second['id']}/cancel", headers=member.headers
    )

    assert cancelled.status == 200 and (await cancelled.json())["status"] == "CANCELLED"
    body = await assert_refused(late, 409, "invalid_state")
    assert "IN_TRANSIT" in body["message"]
    assert await balance(client, member) == {"available": 3000, "pending": 0, "reserved": 2000}


async def test_payout_to_a_failing_account_comes_back_with_its_funds(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member, account = await _funded(client, accountNumber="000111111116")
    payout = await (await _payout(client, member, account["id"], "4000")).json()

    await bank_steps(client, clock)
    await bank_steps(client, clock)

    failed = await read_object(client, member, "payouts", payout["id"])
    assert failed["status"] == "FAILED" and failed["failureReason"] == "no_account"
    assert await balance(client, member) == {"available": 5000, "pending": 0, "reserved": 0}


async def test_sandbox_pays_or_fails_a_payout(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    key = await sandbox_key(client, member, "payouts:write")
    await paid_payment(client, member, "5000")
    account = await _account(client, member)
    one = await (await _payout(client, member, account["id"], "1000")).json()
    two = await (await _payout(client, member, account["id"], "1500")).json()

    paid = await simulate(client, key, "payout.paid", payoutId=one["id"])
    failed = await simulate(client, key, "payout.failed", payoutId=two["id"])
    again = await simulate(client, key, "payout.failed", payoutId=one["id"])

    assert paid.status == 200 and (await paid.json())["event"]["type"] == "payout.paid"
    assert failed.status == 200 and (await failed.json())["object"]["status"] == "FAILED"
    assert again.status == 409
    assert await balance(client, member) == {"available": 4000, "pending": 0, "reserved": 0}


async def test_concurrent_payouts_never_exceed_available(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # 100 payouts in one burst is the point here: no rate limit.
    client: TestClient[Any, Any] = await aiohttp_client(make_app(rate_limit_scale=0))
    member, account = await _funded(client)

    responses = await asyncio.gather(
        *(_payout(client, member, account["id"], "100") for _ in range(100))
    )

    statuses = sorted(r.status for r in responses)
    assert statuses.count(201) == 50 and statuses.count(409) == 50
    assert await balance(client, member) == {"available": 0, "pending": 0, "reserved": 5000}


async def test_payouts_are_refused_while_the_balance_is_negative(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    key = await sandbox_key(client, member, "payments:write")
    await paid_payment(client, member, "1000")
    await client.patch(
        "/api/v1/merchant/settings", json={"settlementDelaySec": 3600}, headers=member.headers
    )
    disputed = await paid_payment(client, member, "3000")
    await simulate(client, key, "payment.reversed", paymentId=disputed["id"])
    account = await _account(client, member)

    response = await _payout(client, member, account["id"], "1")

    assert await balance(client, member) == {"available": -2000, "pending": 3000, "reserved": 0}
    await assert_refused(response, 409, "balance_insufficient")


async def test_bad_payout_input_is_400_and_reserves_nothing(client: TestClient[Any, Any]) -> None:
    member, euro = await _funded(client, currency="EUR", country="DE")

    wrong_currency = await _payout(client, member, euro["id"], "100")
    unknown = await _payout(client, member, "ba_nothing", "100")
    bad_account = await post_as(
        client, member, "/api/v1/merchant/bank-accounts", {**ACCOUNT, "accountNumber": "12"}
    )

    for response in (wrong_currency, unknown, bad_account):
        await assert_refused(response, 400, "validation_error")
    assert await balance(client, member) == {"available": 5000, "pending": 0, "reserved": 0}


async def test_bank_account_with_an_open_payout_cannot_be_deleted(
    client: TestClient[Any, Any],
) -> None:
    member, account = await _funded(client)
    await _payout(client, member, account["id"], "100")

    response = await client.delete(
        f"/api/v1/merchant/bank-accounts/{account['id']}", headers=member.headers
    )

    await assert_refused(response, 409, "invalid_state")


async def test_live_payouts_need_a_verified_account(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    live = await live_session(client, member)

    response = await client.post(
        "/api/v1/merchant/bank-accounts", json=ACCOUNT, headers=live.headers
    )

    await assert_refused(response, 403, "account_not_verified")


async def test_another_companys_payouts_and_accounts_are_not_found(
    client: TestClient[Any, Any],
) -> None:
    owner, other = await two_companies(client)
    await paid_payment(client, owner, "5000")
    account = await _account(client, owner)
    payout = await (await _payout(client, owner, account["id"], "100")).json()

    for path in (
        f"/api/v1/merchant/payouts/{payout['id']}",
        f"/api/v1/merchant/bank-accounts/{account['id']}",
    ):
        assert (await client.get(path, headers=other.headers)).status == 404
    cancel = await client.post(
        f"/api/v1/merchant/payouts/{payout['id']}/cancel", headers=other.headers
    )
    steal = await _payout(client, other, account["id"], "1")
    assert cancel.status == 404 and steal.status == 400


async def test_daily_schedule_pays_out_the_whole_available_balance_once_per_day(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    # given a daily schedule, a USD account and 5000 available
    member = await sign_up(client)
    response = await client.patch(
        "/api/v1/merchant/settings", json={"payoutSchedule": "daily"}, headers=member.headers
    )
    assert response.status == 200, await response.text()
    account = await _account(client, member)
    await paid_payment(client, member, "5000")
    money = services(client).money

    # when the day has not ended yet, and then when it has (twice over)
    await money.run_schedules()
    before = await client.get("/api/v1/merchant/payouts", headers=member.headers)
    clock.advance(days=1)
    await money.run_schedules()
    await money.run_schedules()
    member = await sign_in(client, member)  # the day outlived the session

    # then one automatic payout took everything available, at the day's end only
    assert (await before.json())["data"] == []
    listed = await client.get("/api/v1/merchant/payouts", headers=member.headers)
    [payout] = (await listed.json())["data"]
    assert payout["automatic"] is True and payout["amountMinor"] == "5000"
    assert payout["bankAccountId"] == account["id"]
    assert await balance(client, member) == {"available": 0, "pending": 0, "reserved": 5000}


async def test_manual_schedule_makes_no_automatic_payout(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member = await sign_up(client)
    for schedule in ("weekly", "manual"):
        response = await client.patch(
            "/api/v1/merchant/settings", json={"payoutSchedule": schedule}, headers=member.headers
        )
        assert response.status == 200
    await _account(client, member)
    await paid_payment(client, member, "5000")

    clock.advance(days=8)
    await services(client).money.run_schedules()
    member = await sign_in(client, member)

    listed = await client.get("/api/v1/merchant/payouts", headers=member.headers)
    assert (await listed.json())["data"] == []
