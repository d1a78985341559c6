"""Refunds (decisions 4, 5): created against what remains of a paid payment, reserved from the
balance, completed or rejected by the processor, serialized per payment."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.bootstrap import Overrides
from mps.domain.clock import utcnow
from tests.conftest import Clock
from tests.helpers import (
    Member,
    answered,
    assert_envelope,
    assert_refused,
    pending_payment,
    read_object,
    sign_up,
    two_companies,
)
from tests.money import (
    balance,
    movements,
    owner_with_paid_payment,
    paid_payment,
    process_refunds,
    refund,
    sandbox_key,
    simulate,
    until,
)

pytestmark = pytest.mark.both_backends


async def _completed(
    client: TestClient[Any, Any], clock: Clock, member: Member, payment_id: str, amount: str
) -> dict[str, Any]:
    """Refund `amount` of the payment and let the processor complete it; the payment after."""
    made = await answered(await refund(client, member, payment_id, amount))
    await process_refunds(client, clock)
    assert (await read_object(client, member, "refunds", made["id"]))["status"] == "COMPLETED"
    return await read_object(client, member, "payments", payment_id)


async def test_refund_is_created_pending_and_reserves_its_amount(
    client: TestClient[Any, Any],
) -> None:
    member, payment = await owner_with_paid_payment(client, "2500")

    response = await refund(client, member, payment["id"], "1000", reason="damaged")

    body = await response.json()
    assert response.status == 201, body
    assert body["id"].startswith("re_") and body["status"] == "PENDING"
    assert body["paymentId"] == payment["id"] and body["amountMinor"] == "1000"
    assert body["reason"] == "damaged" and body["createdAt"].endswith("Z")
    assert await balance(client, member) == {"available": 1500, "pending": 0, "reserved": 1000}
    assert (await read_object(client, member, "refunds", body["id"]))["status"] == "PENDING"


async def test_completed_refund_moves_the_payment_and_spends_the_reservation(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member, payment = await owner_with_paid_payment(client, "2500")

    after = await _completed(client, clock, member, payment["id"], "1000")

    assert after["status"] == "PARTIAL_REFUND" and after["amountRefundedMinor"] == "1000"
    assert await balance(client, member) == {"available": 1500, "pending": 0, "reserved": 0}

    after = await _completed(client, clock, member, payment["id"], "1500")

    assert after["status"] == "REFUNDED" and after["amountRefundedMinor"] == "2500"
    assert await balance(client, member) == {"available": 0, "pending": 0, "reserved": 0}


async def test_refund_completes_within_two_seconds_in_test_mode(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    client: TestClient[Any, Any] = await aiohttp_client(make_app(Overrides(clock=utcnow)))
    member, payment = await owner_with_paid_payment(client)
    created = await (await refund(client, member, payment["id"], "2500")).json()
    started = asyncio.get_running_loop().time()

    async def completed() -> bool:
        return (await read_object(client, member, "refunds", created["id"]))[
            "status"
        ] == "COMPLETED"

    await until(completed, within=2.0)
    assert asyncio.get_running_loop().time() - started <= 2.0
    assert (await read_object(client, member, "payments", payment["id"]))["status"] == "REFUNDED"


async def test_refund_events_are_written_with_the_changes(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member, payment = await owner_with_paid_payment(client, "2500")
    created = await (await refund(client, member, payment["id"], "500")).json()
    await process_refunds(client, clock)

    response = await client.get("/api/v1/merchant/events", headers=member.headers)
    events = [(e["type"], e["data"]["object"]["id"]) for e in (await response.json())["data"]]

    assert ("refund.created", created["id"]) in events
    assert ("refund.completed", created["id"]) in events
    assert ("payment.partially_refunded", payment["id"]) in events


async def test_refund_of_an_unpaid_payment_is_409_invalid_state(
    client: TestClient[Any, Any],
) -> None:
    member, payment = await pending_payment(client)

    response = await refund(client, member, payment["id"], "100")

    body = await assert_refused(response, 409, "invalid_state")
    assert "PENDING" in body["message"]


async def test_refund_beyond_what_remains_is_409_counting_pending_refunds(
    client: TestClient[Any, Any],
) -> None:
    member, payment = await owner_with_paid_payment(client, "2500")
    assert (await refund(client, member, payment["id"], "2000")).status == 201

    response = await refund(client, member, payment["id"], "501")

    await assert_refused(response, 409, "refund_exceeds_remaining")
    assert (await refund(client, member, payment["id"], "500")).status == 201
    assert await balance(client, member) == {"available": 0, "pending": 0, "reserved": 2500}


async def test_a_refund_refusal_states_what_remains_in_major_units_of_its_currency(
    client: TestClient[Any, Any],
) -> None:
    # given a USD payment with 10.00 left and a JPY payment with 1,000 left
    member, usd = await owner_with_paid_payment(client, "2500")
    assert (await refund(client, member, usd["id"], "1500")).status == 201
    jpy = await paid_payment(client, member, "1000", "JPY")

    # when each is refunded beyond what remains
    answers = [
        await refund(client, member, usd["id"], "1001"),
        await refund(client, member, jpy["id"], "1001"),
    ]

    # then the messages state the amounts as people read them
    usd_body, jpy_body = [await a.json() for a in answers]
    assert_envelope(usd_body, 409, "refund_exceeds_remaining")
    assert "(10.00 USD)" in usd_body["message"]
    assert_envelope(jpy_body, 409, "refund_exceeds_remaining")
    assert "(1,000 JPY)" in jpy_body["message"]


async def test_rejected_refund_releases_the_reservation_and_leaves_the_payment(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    key = await sandbox_key(client, member)
    payment = await paid_payment(client, member, "2500")
    created = await (await refund(client, member, payment["id"], "1000")).json()

    response = await simulate(client, key, "refund.rejected", refundId=created["id"])

    body = await response.json()
    assert response.status == 200, body
    assert body["object"]["status"] == "REJECTED" and body["event"]["type"] == "refund.rejected"
    assert (await read_object(client, member, "refunds", created["id"]))["failureReason"]
    assert (await read_object(client, member, "payments", payment["id"]))["status"] == "PAID"
    assert await balance(client, member) == {"available": 2500, "pending": 0, "reserved": 0}
    # What a rejected refund held is refundable again.
    assert (await refund(client, member, payment["id"], "2500")).status == 201


async def test_sandbox_completes_a_refund_once(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    key = await sandbox_key(client, member)
    payment = await paid_payment(client, member, "2500")
    created = await (await refund(client, member, payment["id"], "2500")).json()

    first = await simulate(client, key, "refund.completed", refundId=created["id"])
    again = await simulate(client, key, "refund.rejected", refundId=created["id"])

    assert first.status == 200
    assert (await first.json())["event"]["type"] == "refund.completed"
    await assert_refused(again, 409, "invalid_state")
    assert (await read_object(client, member, "payments", payment["id"]))["status"] == "REFUNDED"


async def test_concurrent_refunds_of_one_payment_never_exceed_it(
    client: TestClient[Any, Any],
) -> None:
    member, payment = await owner_with_paid_payment(client, "5000")

    responses = await asyncio.gather(
        *(refund(client, member, payment["id"], "100") for _ in range(100))
    )

    statuses = sorted(r.status for r in responses)
    assert statuses.count(201) == 50 and statuses.count(409) == 50
    assert await balance(client, member) == {"available": 0, "pending": 0, "reserved": 5000}


async def test_refunds_are_listed_newest_first_and_filtered(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member, one = await owner_with_paid_payment(client, "2500")
    two = await paid_payment(client, member, "2500")
    a = await (await refund(client, member, one["id"], "100")).json()
    b = await (await refund(client, member, two["id"], "200")).json()

    everything = await client.get("/api/v1/merchant/refunds", headers=member.headers)
    of_one = await client.get(
        "/api/v1/merchant/refunds", params={"paymentId": one["id"]}, headers=member.headers
    )
    completed = await client.get(
        "/api/v1/merchant/refunds", params={"status": "COMPLETED"}, headers=member.headers
    )

    assert [r["id"] for r in (await everything.json())["data"]] == [b["id"], a["id"]]
    assert [r["id"] for r in (await of_one.json())["data"]] == [a["id"]]
    assert (await completed.json())["data"] == []


async def test_another_companys_payment_and_refund_are_not_found(
    client: TestClient[Any, Any],
) -> None:
    owner, other = await two_companies(client)
    payment = await paid_payment(client, owner)
    created = await (await refund(client, owner, payment["id"], "100")).json()

    refused = await refund(client, other, payment["id"], "100")
    hidden = await client.get(f"/api/v1/merchant/refunds/{created['id']}", headers=other.headers)
    listed = await client.get("/api/v1/merchant/refunds", headers=other.headers)

    assert refused.status == 404 and hidden.status == 404
    assert (await listed.json())["data"] == []
    assert await balance(client, owner) == {"available": 2400, "pending": 0, "reserved": 100}


async def test_bad_refund_input_is_400_and_changes_nothing(client: TestClient[Any, Any]) -> None:
    member, payment = await owner_with_paid_payment(client)

    for body in (
        {"paymentId": payment["id"], "amountMinor": "0"},
        {"paymentId": payment["id"], "amountMinor": 100},
        {"paymentId": payment["id"]},
        {"amountMinor": "100"},
        {"paymentId": payment["id"], "amountMinor": "100", "extra": 1},
    ):
        response = await client.post("/api/v1/merchant/refunds", json=body, headers=member.headers)
        assert response.status == 400, body
        assert_envelope(await response.json(), 400, "validation_error")
    assert await movements(client, member, type="refund_reservation") == []


async def test_refund_with_a_repeated_idempotency_key_is_made_once(
    client: TestClient[Any, Any],
) -> None:
    member, payment = await owner_with_paid_payment(client, "2500")
    headers = {**member.headers, "Idempotency-Key": "refund-1"}
    body = {"paymentId": payment["id"], "amountMinor": "1000"}

    first = await client.post("/api/v1/merchant/refunds", json=body, headers=headers)
    second = await client.post("/api/v1/merchant/refunds", json=body, headers=headers)
    other = await client.post(
        "/api/v1/merchant/refunds", json={**body, "amountMinor": "5"}, headers=headers
    )

    assert first.status == second.status == 201
    assert await first.read() == await second.read()
    assert second.headers["Idempotent-Replayed"] == "true"
    assert other.status == 422
    assert await balance(client, member) == {"available": 1500, "pending": 0, "reserved": 1000}
