"""The sandbox performs the real transitions with the real events (decisions 11)."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import (
    Member,
    assert_refused,
    create_payment,
    pay,
    pending_payment,
    sign_up,
)


async def _key(client: TestClient[Any, Any], member: Member, **body: Any) -> dict[str, str]:
    payload = {"name": "sandbox", "scopes": ["payments:write"], **body}
    response = await client.post("/api/v1/merchant/api-keys", json=payload, headers=member.headers)
    return {"Authorization": f"Bearer {(await response.json())['key']}"}


async def _simulate(
    client: TestClient[Any, Any], headers: dict[str, str], kind: str, **body: Any
) -> Any:
    return await client.post(f"/api/v1/developer/sandbox/{kind}", json=body, headers=headers)


@pytest.mark.parametrize(
    ("kind", "status", "event"),
    [
        ("payment.completed", "PAID", "payment.completed"),
        ("payment.failed", "PENDING", "payment.failed"),
        ("payment.expired", "EXPIRED", "payment.expired"),
    ],
)
async def test_payment_kinds_transition_and_answer_kind_object_event(
    client: TestClient[Any, Any], kind: str, status: str, event: str
) -> None:
    member = await sign_up(client)
    key = await _key(client, member)
    payment = await create_payment(client, member)

    response = await _simulate(client, key, kind, paymentId=payment["id"])

    body = await response.json()
    assert response.status == 200, body
    assert body["kind"] == kind
    assert body["object"]["id"] == payment["id"] and body["object"]["status"] == status
    assert body["event"]["type"] == event and body["event"]["id"].startswith("evt_")
    got = await client.get(f"/api/v1/merchant/payments/{payment['id']}", headers=member.headers)
    assert (await got.json())["status"] == status


async def test_reversal_of_a_paid_payment(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    key = await _key(client, member)
    payment = await create_payment(client, member)
    pending = await _simulate(client, key, "payment.reversed", paymentId=payment["id"])
    await pay(client, payment["reference"])

    response = await _simulate(client, key, "payment.reversed", paymentId=payment["id"])

    assert pending.status == 409
    assert response.status == 200
    assert (await response.json())["object"]["status"] == "REVERSED"


async def test_unknown_kind_is_404_listing_the_kinds(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    key = await _key(client, member)

    response = await _simulate(client, key, "payment.exploded")

    body = await response.json()
    assert response.status == 404
    assert "payment.completed" in body["message"]


async def test_live_key_is_refused(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)
    key = await _key(client, member, mode="live")
    payment = await create_payment(client, member)

    response = await _simulate(client, key, "payment.completed", paymentId=payment["id"])

    await assert_refused(response, 403, "test_key_required")


async def test_key_without_the_objects_write_scope_is_refused(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client)
    key = await _key(client, member, scopes=["payments:read"])
    payment = await create_payment(client, member)

    response = await _simulate(client, key, "payment.completed", paymentId=payment["id"])

    await assert_refused(response, 403, "insufficient_scope")


async def test_session_token_is_refused(client: TestClient[Any, Any]) -> None:
    member = await sign_up(client)

    response = await _simulate(client, member.headers, "payment.completed", paymentId="pay_x")

    await assert_refused(response, 401, "api_key_required")


async def test_another_companys_payment_is_not_found(client: TestClient[Any, Any]) -> None:
    owner = await sign_up(client)
    stranger = await sign_up(client, "s@example.com", "Stranger")
    key = await _key(client, stranger)
    payment = await create_payment(client, owner)

    response = await _simulate(client, key, "payment.completed", paymentId=payment["id"])

    assert response.status == 404


async def test_ten_declines_lock_checkout_for_an_hour(client: TestClient[Any, Any]) -> None:
    _, payment = await pending_payment(client)
    for _ in range(10):
        assert (await pay(client, payment["reference"], "4000000000000002")).status == 402

    locked = await pay(client, payment["reference"])

    assert locked.status == 429
    assert 3000 < int(locked.headers["Retry-After"]) <= 3601
