"""OWASP API3:2023, broken object property level authorization.

No client may write a property it does not own (mass assignment): every body is validated
against its route's schema and an unknown field is 400 with nothing changed (decisions 0). No
response shows a property its reader may not see: secrets rest hashed and are shown once at
creation, cards only as brand and last four digits, and the public checkout answer only its
listed fields.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.http.routes import all_routes
from mps.http.routing import Auth
from tests.helpers import (
    TEST_CARD,
    Member,
    assert_refused,
    create_payment,
    pay,
    pending_payment,
    post_as,
    post_payment,
    read_as,
    two_companies,
)
from tests.keys import bearer, create_key

pytestmark = pytest.mark.both_backends

BODY_ROUTES = [r for r in all_routes(development=True) if r.body is not None]
CARD_NUMBER = str(TEST_CARD["number"])
# Names a stored secret or a card's full details would go by, in any casing.
SECRET_NAMES = re.compile(r"hash|secret|password|cvc|^number$|cardnumber|^pan$|^otp$", re.I)


def _names(value: Any) -> Iterator[str]:
    """Every property name anywhere in a JSON value."""
    if isinstance(value, dict):
        for name, inner in value.items():
            yield name
            yield from _names(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _names(inner)


async def test_an_unknown_field_is_refused_on_every_route_that_takes_a_body(
    client: TestClient[Any, Any],
) -> None:
    # given a credential for each kind of route, and a payment to pay
    member, payment = await pending_payment(client)
    key = (await create_key(client, member, ["payments:write"]))["key"]
    credential = {Auth.SESSION: member.headers, Auth.API_KEY: bearer(key), Auth.PUBLIC: {}}
    params = {
        "reference": payment["reference"],
        "kind": "payment.completed",
        "id": "whe_none",
        "action": "payout.create",
    }

    for route in BODY_ROUTES:
        # when the body carries a property the route does not declare
        url = route.full_path.format(**params)
        response = await client.request(
            route.method,
            url,
            json={"ownerId": member.user_id},
            headers=credential[route.auth],
        )

        # then
        body = await assert_refused(response, 400, "validation_error")
        assert {"field": "ownerId", "message": "is not a known field"} in body["errors"]


@pytest.mark.parametrize(
    "field",
    [
        {"id": "pay_chosenbytheclient"},
        {"status": "PAID"},
        {"createdAt": "2020-01-01T00:00:00.000Z"},
        {"reference": "PAY-0000000000"},
        {"payUrl": "https://attacker.example/pay"},
        {"companyId": "co_000000000000000000"},
        {"mode": "live"},
        {"livemode": True},
    ],
    ids=lambda field: next(iter(field)),
)
async def test_a_payment_cannot_be_created_with_a_server_owned_property(
    client: TestClient[Any, Any], member: Member, field: dict[str, Any]
) -> None:
    # given

    # when
    response = await post_payment(client, member, **field)

    # then
    await assert_refused(response, 400, "validation_error")
    assert (await read_as(client, member, "/api/v1/merchant/payments"))["data"] == []


async def test_settings_cannot_be_patched_beyond_their_listed_fields(
    client: TestClient[Any, Any], member: Member
) -> None:
    # given
    before = await (await client.get("/api/v1/merchant/settings", headers=member.headers)).json()
    attempts = [
        {"payoutSchedule": "weekly", "kycStatus": "VERIFIED"},
        {"payoutSchedule": "weekly", "mode": "live"},
        {"payoutSchedule": "weekly", "companyId": "co_000000000000000000"},
    ]

    for attempt in attempts:
        # when a valid change rides along with a property the caller may not set
        response = await client.patch(
            "/api/v1/merchant/settings", json=attempt, headers=member.headers
        )

        # then all of it is refused
        assert response.status == 400, attempt
    after = await (await client.get("/api/v1/merchant/settings", headers=member.headers)).json()
    assert {k: v for k, v in after.items() if k != "requestId"} == {
        k: v for k, v in before.items() if k != "requestId"
    }
    assert after["kycStatus"] != "VERIFIED" and after["payoutSchedule"] != "weekly"


async def test_an_api_key_cannot_be_created_with_a_chosen_secret_or_owner(
    client: TestClient[Any, Any],
) -> None:
    # given
    member, stranger = await two_companies(client)
    chosen = "sk_test_" + "A" * 40
    attempts: list[dict[str, Any]] = [
        {"key": chosen},
        {"prefix": "sk_live_"},
        {"last4": "AAAA"},
        {"companyId": stranger.company_id},
        {"createdBy": stranger.user_id},
        {"revokedAt": None},
    ]

    for attempt in attempts:
        # when
        response = await post_as(
            client,
            member,
            "/api/v1/merchant/api-keys",
            {"name": "ci", "scopes": ["analytics:read"], **attempt},
        )

        # then
        assert response.status == 400, attempt
    listed = await client.get("/api/v1/merchant/api-keys", headers=member.headers)
    assert (await listed.json())["data"] == []
    assert (await client.get("/api/v1/developer/ping", headers=bearer(chosen))).status == 401


@pytest.mark.parametrize(
    "field",
    [
        {"amountMinor": "1"},
        {"currency": "JPY"},
        {"status": "PAID"},
        {"paymentId": "pay_0000000000"},
        {"card": {**TEST_CARD, "brand": "amex"}},
    ],
    ids=lambda field: next(iter(field)) if "card" not in field else "card.brand",
)
async def test_a_payer_cannot_set_what_checkout_charges_or_records(
    client: TestClient[Any, Any], field: dict[str, Any]
) -> None:
    # given
    member, payment = await pending_payment(client)

    # when
    response = await client.post(
        f"/api/v1/checkout/{payment['reference']}/pay", json={"card": TEST_CARD, **field}
    )

    # then
    await assert_refused(response, 400, "validation_error")
    got = await client.get(f"/api/v1/merchant/payments/{payment['id']}", headers=member.headers)
    stored = await got.json()
    assert stored["status"] == "PENDING" and stored["amountMinor"] == "2500"


async def test_no_response_shows_a_stored_secret_or_a_full_card(
    client: TestClient[Any, Any], member: Member
) -> None:
    # given a key used once and a payment paid by card
    key = await create_key(client, member, ["analytics:read"])
    assert (await client.get("/api/v1/developer/ping", headers=bearer(key["key"]))).status == 200
    payment = await create_payment(client, member, customerEmail="buyer@example.com")
    paid = await pay(client, payment["reference"])
    customers = await client.get("/api/v1/merchant/customers", headers=member.headers)
    customer_id = (await customers.json())["data"][0]["id"]

    # when every read of those objects is made
    reads = [
        "/api/v1/auth/me",
        "/api/v1/merchant/api-keys",
        f"/api/v1/merchant/api-keys/{key['id']}/logs",
        "/api/v1/merchant/payments",
        f"/api/v1/merchant/payments/{payment['id']}",
        "/api/v1/merchant/customers",
        f"/api/v1/merchant/customers/{customer_id}",
        f"/api/v1/merchant/customers/{customer_id}/payments",
        "/api/v1/merchant/settings",
    ]
    answers = [paid] + [await client.get(path, headers=member.headers) for path in reads]

    # then none holds a secret's name, the key, or more of the card than its last four digits
    for answer in answers:
        text = await answer.text()
        assert answer.status == 200, answer.url
        assert key["key"] not in text, answer.url
        assert key["key"][8:] not in text, answer.url
        assert CARD_NUMBER not in text and CARD_NUMBER[:6] not in text, answer.url
        names = set(_names(await answer.json()))
        assert not {n for n in names if SECRET_NAMES.search(n)}, (answer.url, names)
    assert key["last4"] == key["key"][-4:]


async def test_the_public_checkout_answer_shows_only_its_listed_fields(
    client: TestClient[Any, Any], member: Member
) -> None:
    # given a payment carrying the merchant's private data
    payment = await create_payment(
        client,
        member,
        customMetadata={"internalNote": "margin-is-forty-percent"},
        webhookUrl="http://127.0.0.1:9/hooks/private-path",
        successUrl="https://merchant.example/thanks",
    )

    # when anyone pays it and opens its page
    paid = await pay(client, payment["reference"])
    page = await client.get(f"/pay/{payment['reference']}")

    # then
    body = await paid.json()
    assert paid.status == 200
    assert set(body) == {
        "ok",
        "requestId",
        "reference",
        "status",
        "amountMinor",
        "currency",
        "paidAt",
        "paymentMethod",
        "redirectUrl",
    }
    assert set(body["paymentMethod"]) <= {"brand", "last4"}
    assert body["paymentMethod"]["last4"] == CARD_NUMBER[-4:]
    # the payment's id reaches the shopper only as the merchant's own success page is told it
    assert body["redirectUrl"] == (
        f"https://merchant.example/thanks?paymentId={payment['id']}"
        f"&reference={payment['reference']}"
    )
    shown = {k: v for k, v in body.items() if k != "redirectUrl"}
    html = await page.text()
    for private in (
        payment["id"],
        member.company_id,
        member.user_id,
        "margin-is-forty-percent",
        "private-path",
        CARD_NUMBER,
    ):
        assert private not in html, private
        assert private not in str(shown), private
        assert private == payment["id"] or private not in body["redirectUrl"], private
