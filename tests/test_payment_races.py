"""Checkout, cancel and expiry racing on one payment have exactly one winner (decisions 4)."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from mps.http.keys import SERVICES
from tests.helpers import Member, create_payment, pay, sign_up

pytestmark = pytest.mark.both_backends

FINAL_EVENTS = {
    "payment.completed": "PAID",
    "payment.cancelled": "CANCELLED",
    "payment.expired": "EXPIRED",
}


async def _test_key(client: TestClient[Any, Any], member: Member) -> str:
    response = await client.post(
        "/api/v1/merchant/api-keys",
        json={"name": "sandbox", "scopes": ["payments:write"]},
        headers=member.headers,
    )
    key: str = (await response.json())["key"]
    return key


async def test_checkout_cancel_and_expiry_on_200_payments_each_end_once(
    client: TestClient[Any, Any],
) -> None:
    # given
    member = await sign_up(client)
    key = await _test_key(client, member)
    payments = [await create_payment(client, member) for _ in range(200)]

    # when checkout, cancel and expiry race on every payment at once
    def race(p: dict[str, Any]) -> list[Any]:
        return [
            pay(client, p["reference"]),
            client.post(f"/api/v1/merchant/payments/{p['id']}/cancel", headers=member.headers),
            client.post(
                "/api/v1/developer/sandbox/payment.expired",
                json={"paymentId": p["id"]},
                headers={"Authorization": f"Bearer {key}"},
            ),
        ]

    responses = await asyncio.gather(*(call for p in payments for call in race(p)))

    # then each payment has exactly one winner and one final event matching its state
    statuses = [r.status for r in responses]
    assert Counter(statuses) == {200: 200, 409: 400}
    rows = await client.app[SERVICES].database.fetch(
        "SELECT data FROM events WHERE company_id = $1", member.company_id
    )
    finals: Counter[str] = Counter()
    final_state: dict[str, str] = {}
    for row in rows:
        event = orjson.loads(row["data"])
        if event["type"] in FINAL_EVENTS:
            obj = event["data"]["object"]
            finals[obj["id"]] += 1
            final_state[obj["id"]] = FINAL_EVENTS[event["type"]]
    assert set(finals.values()) == {1} and len(finals) == 200
    # (read from storage: 800 requests already spent this user's 600/min standard limit)
    stored = await client.app[SERVICES].database.fetch(
        "SELECT id, status FROM payments WHERE company_id = $1", member.company_id
    )
    assert {r["id"]: r["status"] for r in stored} == final_state
