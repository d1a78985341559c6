"""What an integrating developer meets in the first hour: codes in either case everywhere, a
payment found by the reference a shopper quotes, numbers kept exactly or refused, and bad
values refused with a clear 400 rather than accepted without a word."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import assert_envelope, assert_refused, create_payment, pending_payment, sign_up
from tests.money import ACCOUNT

pytestmark = pytest.mark.both_backends


async def test_codes_are_accepted_in_either_case_in_bodies_object_keys_and_queries(
    client: TestClient[Any, Any],
) -> None:
    # given
    owner = await sign_up(client)
    await create_payment(client, owner)

    # when
    policy = await client.put(
        "/api/v1/team/approvals/policies/payout.create",
        json={"enabled": True, "thresholds": {"usd": "1000"}, "requiredApprovals": 1},
        headers=owner.headers,
    )
    settings = await client.patch(
        "/api/v1/merchant/settings",
        json={"supportedCurrencies": ["usd", "eur"]},
        headers=owner.headers,
    )
    listed = await client.get(
        "/api/v1/merchant/payments", params={"status": "pending"}, headers=owner.headers
    )

    # then
    assert policy.status == 200, await policy.text()
    assert (await policy.json())["thresholds"] == {"USD": "1000"}
    assert settings.status == 200, await settings.text()
    assert (await settings.json())["supportedCurrencies"] == ["USD", "EUR"]
    assert listed.status == 200, await listed.text()
    assert [p["status"] for p in (await listed.json())["data"]] == ["PENDING"]


async def test_a_payment_is_found_by_its_reference_when_a_shopper_quotes_it(
    client: TestClient[Any, Any],
) -> None:
    # given
    owner, payment = await pending_payment(client, customerEmail="Shopper@Example.com")
    await create_payment(client, owner)
    other = await sign_up(client, "other@example.com", "Other Ltd")

    # when
    by_path = await client.get(
        f"/api/v1/merchant/payments/{payment['reference']}", headers=owner.headers
    )
    by_filter = await client.get(
        "/api/v1/merchant/payments",
        params={"reference": payment["reference"].lower()},
        headers=owner.headers,
    )
    searched = {
        term: await client.get(
            "/api/v1/merchant/payments", params={"q": term}, headers=owner.headers
        )
        for term in (payment["reference"], payment["id"], "shopper@example.com")
    }
    elsewhere = await client.get(
        f"/api/v1/merchant/payments/{payment['reference']}", headers=other.headers
    )
    cancelled = await client.post(
        f"/api/v1/merchant/payments/{payment['reference']}/cancel", headers=owner.headers
    )

    # then
    assert by_path.status == 200, await by_path.text()
    assert (await by_path.json())["id"] == payment["id"]
    assert by_filter.status == 200, await by_filter.text()
    assert [p["id"] for p in (await by_filter.json())["data"]] == [payment["id"]]
    for term, response in searched.items():
        assert response.status == 200, (term, await response.text())
        assert [p["id"] for p in (await response.json())["data"]] == [payment["id"]], term
    await assert_refused(elsewhere, 404)
    assert cancelled.status == 200, await cancelled.text()
    assert (await cancelled.json())["status"] == "CANCELLED"


async def test_metadata_numbers_are_refused_with_400_when_they_cannot_be_kept_exactly(
    client: TestClient[Any, Any],
) -> None:
    # given
    owner = await sign_up(client)
    path, headers = (
        "/api/v1/merchant/payments",
        {
            **owner.headers,
            "Content-Type": "application/json",
        },
    )

    # when
    huge = await client.post(
        path,
        data=b'{"amountMinor":"100","currency":"USD",'
        b'"customMetadata":{"a":123456789012345678901234567890}}',
        headers=headers,
    )
    unsafe = await client.post(
        path,
        json={"amountMinor": "100", "currency": "USD", "customMetadata": {"a": 2**60}},
        headers=owner.headers,
    )
    kept = await create_payment(client, owner, customMetadata={"a": 9007199254740991, "b": 1.5})

    # then
    await assert_refused(huge, 400, "invalid_json")
    await assert_refused(unsafe, 400)
    assert kept["customMetadata"] == {"a": 9007199254740991, "b": 1.5}


async def test_bad_values_are_refused_with_a_clear_400_when_they_would_be_accepted_silently(
    client: TestClient[Any, Any],
) -> None:
    # given
    owner = await sign_up(client)
    headers = {**owner.headers, "Content-Type": "application/json"}

    # when
    answers = {
        "country": await client.post(
            "/api/v1/merchant/bank-accounts",
            json={**ACCOUNT, "country": "XX"},
            headers=owner.headers,
        ),
        "dueDate": await client.post(
            "/api/v1/merchant/invoices",
            json={
                "currency": "USD",
                "customerEmail": "buyer@example.com",
                "amountMinor": "1000",
                "dueDate": "2001-01-01",
            },
            headers=owner.headers,
        ),
        "type": await client.get(
            "/api/v1/merchant/events", params={"type": "payment.nope"}, headers=owner.headers
        ),
        "duplicate": await client.post(
            "/api/v1/merchant/payments",
            data=b'{"amountMinor":"100","currency":"USD","amountMinor":"900"}',
            headers=headers,
        ),
    }
    for path in (
        "/api/v1/merchant/analytics",
        "/api/v1/merchant/balance",
        "/api/v1/merchant/balance/transactions",
        "/api/v1/merchant/payments",
        "/api/v1/merchant/payments/stats",
        "/api/v1/merchant/invoices/stats",
    ):
        answers[path] = await client.get(path, params={"currency": "XYZ"}, headers=owner.headers)

    # then
    for name, response in answers.items():
        assert response.status == 400, (name, await response.text())
        assert_envelope(await response.json(), 400)
    assert "more than once" in (await answers["duplicate"].json())["message"]
