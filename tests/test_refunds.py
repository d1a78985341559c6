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
from tests.helpers import assert_envelope, create_payment, sign_up
from tests.money import (
    balance,
    movements,
    paid_payment,
    refund,
    sandbox_key,
    services,
    simulate,
    until,
)

pytestmark = pytest.mark.both_backends


async def _payment(client: TestClient[Any, Any], member: Any, payment_id: str) -> dict[str, Any]:
    response = await client.get(f"/api/v1/merchant/payments/{payment_id}", headers=member.headers)
    body: dict[str, Any] = await response.json()
    return body


async def _refund(client: TestClient[Any, Any], member: Any, refund_id: str) -> dict[str, Any]:
    response = await client.get(f"/api/v1/merchant/refunds/{refund_id}", headers=member.headers)
    assert response.status == 200, await response.text()
    body: dict[str, Any] = await response.json()
    return body


async def _process(client: TestClient[Any, Any], clock: Clock) -> None:
    """Let the processor answer every refund that is due, now."""
    clock.advance(seconds=5)
    await services(client).money.process_refunds()


async def test_refund_is_created_pending_and_reserves_its_amount(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    payment = await paid_payment(client, member, "2500")

    response = await refund(client, member, payment["id"], "1000", reason="damaged")

    body = await response.json()
    assert response.status == 201, body
    assert body["id"].startswith("re_") and body["status"] == "PENDING"
    assert body["paymentId"] == payment["id"] and body["amountMinor"] == "1000"
    assert body["reason"] == "damaged" and body["createdAt"].endswith("Z")
    assert await balance(client, member) == {"available": 1500, "pending": 0, "reserved": 1000}
    assert (await _refund(client, member, body["id"]))["status"] == "PENDING"


async def test_completed_refund_moves_the_payment_and_spends_the_reservation(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member = await sign_up(client)
    payment = await paid_payment(client, member, "2500")
    first = await (await refund(client, member, payment["id"], "1000")).json()

    await _process(client, clock)

    assert (await _refund(client, member, first["id"]))["status"] == "COMPLETED"
    after = await _payment(client, member, payment["id"])
    assert after["status"] == "PARTIAL_REFUND" and after["amountRefundedMinor"] == "1000"
    assert await balance(client, member) == {"available": 1500, "pending": 0, "reserved": 0}

    second = await (await refund(client, member, payment["id"], "1500")).json()
    await _process(client, clock)

    assert (await _refund(client, member, second["id"]))["status"] == "COMPLETED"
    after = await _payment(client, member, payment["id"])
    assert after["status"] == "REFUNDED" and after["amountRefundedMinor"] == "2500"
    assert await balance(client, member) == {"available": 0, "pending": 0, "reserved": 0}


async def test_refund_completes_within_two_seconds_in_test_mode(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    client: TestClient[Any, Any] = await aiohttp_client(make_app(Overrides(clock=utcnow)))
    member = await sign_up(client)
    payment = await paid_payment(client, member)
    created = await (await refund(client, member, payment["id"], "2500")).json()
    started = asyncio.get_running_loop().time()

    async def completed() -> bool:
        return (await _refund(client, member, created["id"]))["status"] == "COMPLETED"

    await until(completed, within=2.0)
    assert asyncio.get_running_loop().time() - started <= 2.0
    assert (await _payment(client, member, payment["id"]))["status"] == "REFUNDED"


async def test_refund_events_are_written_with_the_changes(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member = await sign_up(client)
    payment = await paid_payment(client, member, "2500")
    created = await (await refund(client, member, payment["id"], "500")).json()
    await _process(client, clock)

    response = await client.get("/api/v1/merchant/events", headers=member.headers)
    events = [(e["type"], e["data"]["object"]["id"]) for e in (await response.json())["data"]]

    assert ("refund.created", created["id"]) in events
    assert ("refund.completed", created["id"]) in events
    assert ("payment.partially_refunded", payment["id"]) in events


async def test_refund_of_an_unpaid_payment_is_409_invalid_state(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    payment = await create_payment(client, member)

    response = await refund(client, member, payment["id"], "100")

    assert response.status == 409
    body = await response.json()
    assert_envelope(body, 409, "invalid_state")
    assert "PENDING" in body["message"]


async def test_refund_beyond_what_remains_is_409_counting_pending_refunds(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    payment = await paid_payment(client, member, "2500")
    assert (await refund(client, member, payment["id"], "2000")).status == 201

    response = await refund(client, member, payment["id"], "501")

    assert response.status == 409
    assert_envelope(await response.json(), 409, "refund_exceeds_remaining")
    assert (await refund(client, member, payment["id"], "500")).status == 201
    assert await balance(client, member) == {"available": 0, "pending": 0, "reserved": 2500}


async def test_a_refund_refusal_states_what_remains_in_major_units_of_its_currency(
    client: TestClient[Any, Any],
) -> None:
    # given a USD payment with 10.00 left and a JPY payment with 1,000 left
    member = await sign_up(client)
    usd = await paid_payment(client, member, "2500")
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
    assert (await _refund(client, member, created["id"]))["failureReason"]
    assert (await _payment(client, member, payment["id"]))["status"] == "PAID"
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
    assert again.status == 409
    assert_envelope(await again.json(), 409, "invalid_state")
    assert (await _payment(client, member, payment["id"]))["status"] == "REFUNDED"


async def test_concurrent_refunds_of_one_payment_never_exceed_it(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    payment = await paid_payment(client, member, "5000")

    responses = await asyncio.gather(
        *(refund(client, member, payment["id"], "100") for _ in range(100))
    )

    statuses = sorted(r.status for r in responses)
    assert statuses.count(201) == 50 and statuses.count(409) == 50
    assert await balance(client, member) == {"available": 0, "pending": 0, "reserved": 5000}


async def test_refunds_are_listed_newest_first_and_filtered(
    client: TestClient[Any, Any], clock: Clock
) -> None:
    member = await sign_up(client)
    one = await paid_payment(client, member, "2500")
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
    owner = await sign_up(client)
    other = await sign_up(client, "other@example.com", "Other Ltd")
    payment = await paid_payment(client, owner)
    created = await (await refund(client, owner, payment["id"], "100")).json()

    refused = await refund(client, other, payment["id"], "100")
    hidden = await client.get(f"/api/v1/merchant/refunds/{created['id']}", headers=other.headers)
    listed = await client.get("/api/v1/merchant/refunds", headers=other.headers)

    assert refused.status == 404 and hidden.status == 404
    assert (await listed.json())["data"] == []
    assert await balance(client, owner) == {"available": 2400, "pending": 0, "reserved": 100}


async def test_bad_refund_input_is_400_and_changes_nothing(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    payment = await paid_payment(client, member)

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
    member = await sign_up(client)
    payment = await paid_payment(client, member, "2500")
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
