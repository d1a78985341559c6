"""Payments: create, read, list, cancel, and the contract's rules (interface 2-4, decisions 4)."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import (
    Member,
    assert_envelope,
    assert_refused,
    create_payment,
    live_session,
    pay,
    pending_payment,
    two_companies,
)

pytestmark = pytest.mark.both_backends


async def test_create_returns_201_with_the_seven_fields_and_pay_url(
    client: TestClient[Any, Any], member: Member
) -> None:
    payment = await create_payment(client, member, description="Blue mug")

    assert payment["id"].startswith("pay_")
    assert payment["reference"].startswith("PAY-") and len(payment["reference"]) == 14
    assert payment["payUrl"] == f"http://127.0.0.1:8080/pay/{payment['reference']}"
    assert payment["status"] == "PENDING"
    assert payment["amountMinor"] == "2500" and payment["currency"] == "USD"
    assert payment["createdAt"].endswith("Z")
    assert payment["livemode"] is False


async def test_get_returns_every_stored_field(client: TestClient[Any, Any], member: Member) -> None:
    created = await create_payment(
        client,
        member,
        description="Blue mug",
        customerEmail="Buyer@Example.com",
        customerPhone="+234 803 123 4567",
        expiresInSec=3600,
        successUrl="https://shop.test/ok",
        cancelUrl="https://shop.test/no",
        webhookUrl="https://shop.test/hook",
        customMetadata={"orderId": "A-17"},
    )

    response = await client.get(
        f"/api/v1/merchant/payments/{created['id']}", headers=member.headers
    )

    payment = await response.json()
    assert response.status == 200
    for field in (
        "description",
        "customerEmail",
        "customerPhone",
        "customerId",
        "expiresAt",
        "allowMultiplePayments",
        "successUrl",
        "cancelUrl",
        "webhookUrl",
        "customMetadata",
        "livemode",
        "paidAt",
        "amountRefundedMinor",
        "linkPaymentId",
        "updatedAt",
    ):
        assert field in payment, field
    assert payment["customerEmail"] == "buyer@example.com"
    assert payment["customerPhone"] == "+2348031234567"
    assert payment["customerId"].startswith("cus_")
    assert payment["customMetadata"] == {"orderId": "A-17"}
    assert payment["amountRefundedMinor"] == "0"


async def test_default_expiry_is_24_hours_and_no_expiry_overrides(
    client: TestClient[Any, Any], member: Member
) -> None:
    from mps.domain.clock import parse_iso

    default = await create_payment(client, member)
    permanent = await create_payment(client, member, noExpiry=True, expiresInSec=120)

    got = await client.get(f"/api/v1/merchant/payments/{default['id']}", headers=member.headers)
    body = await got.json()
    lifetime = parse_iso(body["expiresAt"]) - parse_iso(body["createdAt"])
    assert lifetime.total_seconds() == 86_400
    got = await client.get(f"/api/v1/merchant/payments/{permanent['id']}", headers=member.headers)
    assert (await got.json())["expiresAt"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"amountMinor": "0", "currency": "USD"}, "amountMinor"),
        ({"amountMinor": "-5", "currency": "USD"}, "amountMinor"),
        ({"amountMinor": "012", "currency": "USD"}, "amountMinor"),
        ({"amountMinor": 100, "currency": "USD"}, "amountMinor"),
        ({"amountMinor": "1000000000000", "currency": "USD"}, "amountMinor"),
        ({"amountMinor": "10.5", "currency": "USD"}, "amountMinor"),
        ({"amountMinor": "100", "currency": "US$"}, "currency"),
        ({"amountMinor": "100", "currency": "XAU"}, "currency"),
        ({"amountMinor": "100", "currency": "USD", "description": "x" * 201}, "description"),
        ({"amountMinor": "100", "currency": "USD", "expiresInSec": 59}, "expiresInSec"),
        ({"amountMinor": "100", "currency": "USD", "expiresInSec": 7_776_001}, "expiresInSec"),
        (
            {"amountMinor": "100", "currency": "USD", "successUrl": "javascript:alert(1)"},
            "successUrl",
        ),
        ({"amountMinor": "100", "currency": "USD", "customerEmail": "nope"}, "customerEmail"),
        (
            {
                "amountMinor": "100",
                "currency": "USD",
                "customMetadata": {f"k{i}": "v" for i in range(51)},
            },
            "customMetadata",
        ),
        (
            {"amountMinor": "100", "currency": "USD", "customMetadata": {"k" * 41: "v"}},
            "customMetadata." + "k" * 41,
        ),
        (
            {"amountMinor": "100", "currency": "USD", "customMetadata": {"k": "v" * 501}},
            "customMetadata.k",
        ),
        ({"amountMinor": "100", "currency": "USD", "amount": "100"}, "amount"),
        ({"currency": "USD"}, "amountMinor"),
    ],
)
async def test_invalid_create_is_400_naming_the_field_and_creates_nothing(
    client: TestClient[Any, Any], member: Member, body: dict[str, Any], field: str
) -> None:
    response = await client.post("/api/v1/merchant/payments", json=body, headers=member.headers)

    result = await assert_refused(response, 400, "validation_error")
    assert field in [e["field"] for e in result["errors"]]
    listed = await client.get("/api/v1/merchant/payments", headers=member.headers)
    assert (await listed.json())["data"] == []


async def test_cancel_moves_pending_to_cancelled(client: TestClient[Any, Any]) -> None:
    member, payment = await pending_payment(client)

    response = await client.post(
        f"/api/v1/merchant/payments/{payment['id']}/cancel", headers=member.headers
    )

    body = await response.json()
    assert response.status == 200
    assert body["status"] == "CANCELLED" and body["id"] == payment["id"]


async def test_cancel_of_a_non_pending_payment_is_409_naming_the_state(
    client: TestClient[Any, Any],
) -> None:
    member, payment = await pending_payment(client)
    assert (await pay(client, payment["reference"])).status == 200

    response = await client.post(
        f"/api/v1/merchant/payments/{payment['id']}/cancel", headers=member.headers
    )

    body = await assert_refused(response, 409, "invalid_state")
    assert "PAID" in body["message"]


async def test_another_company_gets_404_and_never_sees_the_payment(
    client: TestClient[Any, Any],
) -> None:
    # given
    owner, stranger = await two_companies(client)
    payment = await create_payment(client, owner)

    # when
    got = await client.get(f"/api/v1/merchant/payments/{payment['id']}", headers=stranger.headers)
    cancel = await client.post(
        f"/api/v1/merchant/payments/{payment['id']}/cancel", headers=stranger.headers
    )
    listed = await client.get("/api/v1/merchant/payments", headers=stranger.headers)
    stats = await client.get("/api/v1/merchant/payments/stats", headers=stranger.headers)

    # then
    assert got.status == 404 and cancel.status == 404
    assert_envelope(await got.json(), 404, "not_found")
    assert (await listed.json())["data"] == []
    assert (await stats.json())["data"] == []
    still = await client.get(f"/api/v1/merchant/payments/{payment['id']}", headers=owner.headers)
    assert (await still.json())["status"] == "PENDING"


async def test_live_mode_cannot_see_test_payments(client: TestClient[Any, Any]) -> None:
    member, payment = await pending_payment(client)
    live = (await live_session(client, member)).headers

    got = await client.get(f"/api/v1/merchant/payments/{payment['id']}", headers=live)
    created = await client.post(
        "/api/v1/merchant/payments", json={"amountMinor": "100", "currency": "USD"}, headers=live
    )

    assert got.status == 404
    await assert_refused(created, 403, "account_not_verified")


async def test_list_filters_by_status_currency_and_email(client: TestClient[Any, Any]) -> None:
    member, usd = await pending_payment(client, customerEmail="a@example.com")
    eur = await create_payment(client, member, currency="EUR")
    await pay(client, eur["reference"])

    async def ids(**params: str) -> list[str]:
        response = await client.get(
            "/api/v1/merchant/payments", params=params, headers=member.headers
        )
        assert response.status == 200
        return [p["id"] for p in (await response.json())["data"]]

    assert await ids(status="PAID") == [eur["id"]]
    assert await ids(currency="USD") == [usd["id"]]
    assert await ids(customerEmail="A@example.com") == [usd["id"]]
    assert set(await ids()) == {usd["id"], eur["id"]}
    assert await ids(status="REFUNDED") == []


async def test_list_range_from_after_to_is_400(
    client: TestClient[Any, Any], member: Member
) -> None:
    response = await client.get(
        "/api/v1/merchant/payments",
        params={"from": "2026-02-01", "to": "2026-01-01"},
        headers=member.headers,
    )

    assert response.status == 400


async def test_cursor_paging_over_a_growing_list_returns_no_duplicate(
    client: TestClient[Any, Any], member: Member
) -> None:
    first = [(await create_payment(client, member))["id"] for _ in range(5)]

    seen: list[str] = []
    page = await (
        await client.get("/api/v1/merchant/payments", params={"limit": "2"}, headers=member.headers)
    ).json()
    seen += [p["id"] for p in page["data"]]
    # New payments arrive while the client pages.
    later = [(await create_payment(client, member))["id"] for _ in range(3)]
    while page["nextCursor"]:
        page = await (
            await client.get(
                "/api/v1/merchant/payments",
                params={"limit": "2", "cursor": page["nextCursor"]},
                headers=member.headers,
            )
        ).json()
        seen += [p["id"] for p in page["data"]]

    # no duplicate, no skip; a row created in the cursor's own millisecond may sort after it
    assert len(seen) == len(set(seen))
    assert set(first) <= set(seen) <= set(first) | set(later)


async def test_stats_are_per_currency_and_never_blended(client: TestClient[Any, Any]) -> None:
    member, paid = await pending_payment(client, amountMinor="1000")
    await pay(client, paid["reference"])
    await create_payment(client, member, amountMinor="300")
    jpy = await create_payment(client, member, amountMinor="500", currency="JPY")
    await pay(client, jpy["reference"])

    response = await client.get("/api/v1/merchant/payments/stats", headers=member.headers)
    one = await client.get(
        "/api/v1/merchant/payments/stats", params={"currency": "USD"}, headers=member.headers
    )

    data = {row["currency"]: row for row in (await response.json())["data"]}
    assert set(data) == {"USD", "JPY"}
    assert data["USD"]["count"] == 2
    assert data["USD"]["byStatus"]["PAID"] == {"count": 1, "amountMinor": "1000"}
    assert data["USD"]["byStatus"]["PENDING"] == {"count": 1, "amountMinor": "300"}
    assert data["USD"]["grossMinor"] == "1000" and data["USD"]["netMinor"] == "1000"
    assert data["JPY"]["grossMinor"] == "500"
    single = await one.json()
    assert single["currency"] == "USD" and single["grossMinor"] == "1000"
    assert "data" not in single


async def test_a_currency_code_in_lower_case_is_taken_and_answered_upper_case(
    client: TestClient[Any, Any], member: Member
) -> None:
    payment = await create_payment(client, member, currency="eur")
    stats = await client.get(
        "/api/v1/merchant/payments/stats", params={"currency": "eur"}, headers=member.headers
    )

    assert payment["currency"] == "EUR"
    body = await stats.json()
    assert body["currency"] == "EUR" and body["count"] == 1
