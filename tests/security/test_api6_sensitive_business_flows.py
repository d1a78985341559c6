"""API6, unrestricted access to sensitive business flows: checkout is the flow an attacker would
automate (card testing, double charging, paying what the merchant withdrew). Each test drives
the real checkout route as a script would (decisions 4, 15; docs/api.md "Conventions")."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.conftest import Clock
from tests.helpers import (
    assert_envelope,
    assert_refused,
    create_payment,
    pay,
    pending_payment,
)

pytestmark = pytest.mark.both_backends

DECLINED = "4000000000000002"
NO_FUNDS = "4000000000009995"


async def _status(client: TestClient[Any, Any], member: Any, payment_id: str) -> str:
    response = await client.get(f"/api/v1/merchant/payments/{payment_id}", headers=member.headers)
    status: str = (await response.json())["status"]
    return status


async def test_card_testing_on_one_payment_is_stopped_after_ten_declines(
    client: TestClient[Any, Any],
) -> None:
    # given a payment on which a script has tried ten stolen cards, all declined
    member, payment = await pending_payment(client)
    for n in range(10):
        declined = await pay(client, payment["reference"], DECLINED if n % 2 else NO_FUNDS)
        assert declined.status == 402

    # when it tries an eleventh card, one that would be approved
    locked = await pay(client, payment["reference"])

    # then the payment refuses checkout for about an hour and nothing was charged
    await assert_refused(locked, 429, "rate_limited")
    assert 3000 < int(locked.headers["Retry-After"]) <= 3601
    assert await _status(client, member, payment["id"]) == "PENDING"


async def test_card_testing_lock_on_one_payment_does_not_lock_the_merchants_other_payments(
    client: TestClient[Any, Any],
) -> None:
    # given one payment locked by ten declines
    member, attacked = await pending_payment(client)
    other = await create_payment(client, member)
    for _ in range(10):
        await pay(client, attacked["reference"], DECLINED)

    # when a genuine shopper pays the merchant's other payment
    paid = await pay(client, other["reference"])

    # then the attack costs the merchant nothing beyond the payment attacked
    assert paid.status == 200, await paid.text()
    assert (await paid.json())["status"] == "PAID"


async def test_concurrent_double_submit_without_a_key_charges_a_payment_once(
    client: TestClient[Any, Any],
) -> None:
    # given a single-use payment
    member, payment = await pending_payment(client)

    # when the shopper's form is submitted five times at once, with no Idempotency-Key
    answers = await asyncio.gather(*(pay(client, payment["reference"]) for _ in range(5)))

    # then exactly one submission charged; the others found it paid
    statuses = sorted(a.status for a in answers)
    assert statuses == [200, 409, 409, 409, 409]
    for refused in (a for a in answers if a.status == 409):
        assert_envelope(await refused.json(), 409, "invalid_state")
    listed = await client.get("/api/v1/merchant/payments", headers=member.headers)
    assert [p["status"] for p in (await listed.json())["data"]] == ["PAID"]


async def test_paying_a_cancelled_payment_is_refused_with_409(
    client: TestClient[Any, Any],
) -> None:
    # given a payment the merchant cancelled
    member, payment = await pending_payment(client)
    cancelled = await client.post(
        f"/api/v1/merchant/payments/{payment['id']}/cancel", headers=member.headers
    )
    assert cancelled.status == 200

    # when a shopper who kept the link pays it
    response = await pay(client, payment["reference"])

    # then
    await assert_refused(response, 409, "invalid_state")
    assert await _status(client, member, payment["id"]) == "CANCELLED"


async def test_paying_an_expired_payment_is_refused_even_before_the_expiry_sweep(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    # given a payment whose expiry has just passed
    member, payment = await pending_payment(client, expiresInSec=60)
    clock.advance(seconds=61)

    # when a shopper pays it
    response = await pay(client, payment["reference"])

    # then expiry wins the race and nothing is charged
    await assert_refused(response, 409, "invalid_state")
    assert await _status(client, member, payment["id"]) == "EXPIRED"


async def test_multi_use_link_cannot_be_paid_after_it_is_cancelled(
    client: TestClient[Any, Any],
) -> None:
    # given a multi-use link paid once, then cancelled
    member, link = await pending_payment(client, allowMultiplePayments=True)
    assert (await pay(client, link["reference"])).status == 200
    cancelled = await client.post(
        f"/api/v1/merchant/payments/{link['id']}/cancel", headers=member.headers
    )
    assert cancelled.status == 200

    # when another shopper pays the link
    response = await pay(client, link["reference"])

    # then no further child is created
    await assert_refused(response, 409, "invalid_state")
    children = await client.get(
        "/api/v1/merchant/payments", params={"linkPaymentId": link["id"]}, headers=member.headers
    )
    assert len((await children.json())["data"]) == 1
