"""Hosted checkout and its transitions (decisions 4, 7)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from mps.http.keys import SERVICES
from tests.helpers import (
    TEST_CARD,
    Member,
    assert_envelope,
    assert_refused,
    create_payment,
    pay,
    pending_payment,
    read_object,
    sign_up,
)

pytestmark = pytest.mark.both_backends


async def _events(client: TestClient[Any, Any], member: Member) -> list[dict[str, Any]]:
    rows = await client.app[SERVICES].database.fetch(
        "SELECT data FROM events WHERE company_id = $1 ORDER BY created_at, id", member.company_id
    )
    return [orjson.loads(r["data"]) for r in rows]


async def test_test_card_pays_and_keeps_only_brand_and_last4(
    client: TestClient[Any, Any],
) -> None:
    # given
    member, payment = await pending_payment(client, successUrl="https://shop.test/thanks")

    # when
    response = await pay(client, payment["reference"], email="Buyer@Example.com")

    # then
    result = await response.json()
    assert response.status == 200
    assert result["status"] == "PAID"
    assert result["redirectUrl"] == (
        f"https://shop.test/thanks?paymentId={payment['id']}&reference={payment['reference']}"
    )
    stored = await read_object(client, member, "payments", payment["id"])
    assert stored["status"] == "PAID" and stored["paidAt"] is not None
    assert stored["paymentMethod"] == {"brand": "visa", "last4": "4242"}
    assert stored["customerEmail"] == "buyer@example.com"
    dump = str(await client.app[SERVICES].database.fetch("SELECT * FROM payments"))
    dump += str(await client.app[SERVICES].database.fetch("SELECT * FROM events"))
    assert "4242424242424242" not in dump


@pytest.mark.parametrize(
    ("number", "code"),
    [("4000000000000002", "card_declined"), ("4000000000009995", "insufficient_funds")],
)
async def test_declined_card_is_402_and_leaves_the_payment_pending(
    client: TestClient[Any, Any], number: str, code: str
) -> None:
    member, payment = await pending_payment(client)

    response = await pay(client, payment["reference"], number)

    assert response.status == 402
    assert_envelope(await response.json(), 402, code)
    assert (await read_object(client, member, "payments", payment["id"]))["status"] == "PENDING"
    types = [e["type"] for e in await _events(client, member)]
    assert types == ["payment.created", "payment.failed"]


async def test_luhn_invalid_number_is_400_and_records_nothing(
    client: TestClient[Any, Any],
) -> None:
    member, payment = await pending_payment(client)

    response = await pay(client, payment["reference"], "4242424242424241")

    body = await response.json()
    assert response.status == 400
    assert body["errors"][0]["field"] == "card.number"
    assert [e["type"] for e in await _events(client, member)] == ["payment.created"]


async def test_any_other_luhn_valid_number_succeeds(client: TestClient[Any, Any]) -> None:
    member, payment = await pending_payment(client)

    response = await pay(client, payment["reference"], "5555555555554444")

    assert response.status == 200
    stored = await read_object(client, member, "payments", payment["id"])
    assert stored["paymentMethod"] == {"brand": "mastercard", "last4": "4444"}


async def test_paying_a_non_pending_payment_is_409(client: TestClient[Any, Any]) -> None:
    member, payment = await pending_payment(client)
    await client.post(f"/api/v1/merchant/payments/{payment['id']}/cancel", headers=member.headers)

    response = await pay(client, payment["reference"])

    await assert_refused(response, 409, "invalid_state")


async def test_each_transition_writes_its_event_with_the_payment(
    client: TestClient[Any, Any],
) -> None:
    member, paid = await pending_payment(client)
    cancelled = await create_payment(client, member)
    await pay(client, paid["reference"])
    await client.post(f"/api/v1/merchant/payments/{cancelled['id']}/cancel", headers=member.headers)

    events = await _events(client, member)

    summary = [
        (e["type"], e["data"]["object"]["id"], e["data"]["object"]["status"]) for e in events
    ]
    assert summary == [
        ("payment.created", paid["id"], "PENDING"),
        ("payment.created", cancelled["id"], "PENDING"),
        ("payment.completed", paid["id"], "PAID"),
        ("payment.cancelled", cancelled["id"], "CANCELLED"),
    ]
    for event in events:
        assert event["id"].startswith("evt_") and event["livemode"] is False
        assert event["apiVersion"] == "v2" and event["createdAt"].endswith("Z")


async def test_multi_use_link_creates_paid_children_and_stays_pending(
    client: TestClient[Any, Any], member: Member
) -> None:
    # given
    link = await create_payment(
        client,
        member,
        allowMultiplePayments=True,
        description="Donation",
        customMetadata={"campaign": "spring"},
    )

    # when paid twice
    first = await pay(client, link["reference"], email="a@example.com")
    second = await pay(client, link["reference"], email="b@example.com")

    # then each payment is a PAID child; the link stays PENDING
    assert first.status == 200 and second.status == 200
    assert (await read_object(client, member, "payments", link["id"]))["status"] == "PENDING"
    listed = await client.get(
        "/api/v1/merchant/payments", params={"linkPaymentId": link["id"]}, headers=member.headers
    )
    children = (await listed.json())["data"]
    assert len(children) == 2
    for child in children:
        assert child["status"] == "PAID" and child["linkPaymentId"] == link["id"]
        assert child["amountMinor"] == link["amountMinor"] and child["currency"] == "USD"
        assert child["description"] == "Donation"
        assert child["customMetadata"] == {"campaign": "spring"}
        assert child["id"] != link["id"] and child["reference"] != link["reference"]
    types = [e["type"] for e in await _events(client, member) if e["type"].startswith("payment")]
    assert types == ["payment.created"] + ["payment.created", "payment.completed"] * 2


async def test_customers_are_derived_from_payments_and_checkout(
    client: TestClient[Any, Any], member: Member
) -> None:
    # given a payment naming a customer and a checkout email naming another
    named = await create_payment(
        client, member, amountMinor="1000", customerEmail="ann@example.com"
    )
    await pay(client, named["reference"])
    anonymous = await create_payment(client, member, amountMinor="700", currency="EUR")
    await pay(client, anonymous["reference"], email="Bob@Example.com")
    await create_payment(client, member, customerEmail="ANN@example.com")

    # when
    response = await client.get("/api/v1/merchant/customers", headers=member.headers)

    # then
    customers = {c["email"]: c for c in (await response.json())["data"]}
    assert set(customers) == {"ann@example.com", "bob@example.com"}
    ann = customers["ann@example.com"]
    assert ann["paymentCount"] == 2
    assert ann["totals"] == [{"currency": "USD", "paidMinor": "1000", "refundedMinor": "0"}]
    got = await client.get(f"/api/v1/merchant/customers/{ann['id']}", headers=member.headers)
    assert (await got.json())["id"] == ann["id"]
    payments = await client.get(
        f"/api/v1/merchant/customers/{ann['id']}/payments", headers=member.headers
    )
    assert len((await payments.json())["data"]) == 2
    created = [e for e in await _events(client, member) if e["type"] == "customer.created"]
    assert sorted(e["data"]["object"]["email"] for e in created) == [
        "ann@example.com",
        "bob@example.com",
    ]


async def test_another_company_cannot_see_customers(client: TestClient[Any, Any]) -> None:
    owner = await sign_up(client)
    stranger = await sign_up(client, "s@example.com", "Stranger")
    payment = await create_payment(client, owner, customerEmail="ann@example.com")

    listed = await client.get("/api/v1/merchant/customers", headers=stranger.headers)
    got = await client.get(
        f"/api/v1/merchant/customers/{payment['customerId']}", headers=stranger.headers
    )

    assert (await listed.json())["data"] == []
    assert got.status == 404


async def test_checkout_page_shows_merchant_amount_and_states(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client, company="Mugs & <Co>")
    payment = await create_payment(client, member, amountMinor="123456", description="Blue mug")
    yen = await create_payment(client, member, amountMinor="500", currency="JPY")

    page = await client.get(f"/pay/{payment['reference']}", params={"utm_source": "mail"})
    yen_page = await client.get(f"/pay/{yen['reference']}")
    await pay(client, payment["reference"])
    paid_page = await client.get(f"/pay/{payment['reference']}")
    missing = await client.get("/pay/PAY-0000000000")

    html = await page.text()
    assert page.status == 200 and page.headers["Content-Type"].startswith("text/html")
    assert page.headers["X-Request-Id"].startswith("req_")
    assert "Mugs &amp; &lt;Co&gt;" in html and "<Co>" not in html
    assert "1,234.56 USD" in html and "Blue mug" in html and "TEST MODE" in html
    assert "500 JPY" in await yen_page.text()
    assert "Already paid" in await paid_page.text()
    assert missing.status == 404


async def test_public_routes_ignore_an_unrelated_authorization_header(
    client: TestClient[Any, Any],
) -> None:
    _, payment = await pending_payment(client)

    page = await client.get(
        f"/pay/{payment['reference']}", headers={"Authorization": "Basic dXNlcjpwYXNz"}
    )

    assert page.status == 200


async def test_events_are_kept_for_thirty_days(
    client: TestClient[Any, Any], member: Member, clock: Any
) -> None:
    from mps.actors.schedulers.housekeeping import Housekeeping

    await create_payment(client, member)
    keeper = Housekeeping(client.app[SERVICES].actors, 600)

    clock.advance(days=29)
    kept = await keeper.run_once()
    clock.advance(days=1, seconds=1)
    dropped = await keeper.run_once()

    assert kept[2] == 0
    assert dropped[2] == 1
    assert await _events(client, member) == []


async def test_the_success_url_keeps_its_own_query_and_names_a_link_s_paid_child(
    client: TestClient[Any, Any], member: Member
) -> None:
    link = await create_payment(
        client, member, allowMultiplePayments=True, successUrl="https://shop.test/ok?order=7"
    )

    result = await (await pay(client, link["reference"])).json()

    child = result["redirectUrl"].split("paymentId=")[1].split("&")[0]
    assert result["redirectUrl"] == (
        f"https://shop.test/ok?order=7&paymentId={child}&reference={result['reference']}"
    )
    assert child != link["id"] and result["reference"] != link["reference"]
    stored = await read_object(client, member, "payments", child)
    assert stored["linkPaymentId"] == link["id"] and stored["status"] == "PAID"


@pytest.mark.parametrize(("year", "status"), [(29, 200), (2029, 200), (20, 400), (199, 400)])
async def test_a_two_digit_expiry_year_is_taken_as_printed_on_the_card(
    client: TestClient[Any, Any], year: int, status: int
) -> None:
    _, payment = await pending_payment(client)

    response = await client.post(
        f"/api/v1/checkout/{payment['reference']}/pay",
        json={"card": {**TEST_CARD, "expYear": year}},
    )

    assert response.status == status, await response.text()
