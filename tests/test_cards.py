"""Cards (decisions 6): member and company cards prepaid from the wallet, funding and
withdrawal as balanced ledger movements, freeze/unfreeze/terminate, controls, simulated
authorizations with their decline reasons, and the audited details."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.domain.cards import luhn_valid
from tests.helpers import (
    Member,
    assert_envelope,
    assert_refused,
    audit_actions,
    live_session,
    read_as,
    read_object,
    sign_up,
)
from tests.money import (
    authorize_card,
    balance,
    movements,
    paid_payment,
    sandbox_key,
    services,
)

pytestmark = pytest.mark.both_backends


async def _card(
    client: TestClient[Any, Any], member: Member, funding: str | None = "3000", **fields: Any
) -> dict[str, Any]:
    body = {"cardholderName": "Ann Lee", "currency": "USD", **fields}
    if funding is not None:
        body["initialFundingMinor"] = funding
    response = await client.post("/api/v1/merchant/cards", json=body, headers=member.headers)
    created: dict[str, Any] = await response.json()
    assert response.status == 201, created
    return created


async def _post(client: TestClient[Any, Any], member: Member, path: str, **body: Any) -> Any:
    return await client.post(f"/api/v1{path}", json=body or None, headers=member.headers)


async def _authorize(
    client: TestClient[Any, Any], key: dict[str, str], card_id: str, amount: str, **extra: Any
) -> dict[str, Any]:
    response = await authorize_card(client, key, card_id, amount, **extra)
    body: dict[str, Any] = await response.json()
    assert response.status == 200, body
    return body


async def _funded(client: TestClient[Any, Any]) -> tuple[Member, dict[str, str]]:
    member = await sign_up(client)
    await paid_payment(client, member, "10000")
    key = await sandbox_key(client, member, "cards:write")
    return member, key


async def _issued(client: TestClient[Any, Any]) -> tuple[Member, dict[str, Any]]:
    """A member of a company with 100.00 USD paid in, and a card of 30.00 issued to them."""
    member, _ = await _funded(client)
    return member, await _card(client, member)


async def test_a_card_is_issued_funded_from_the_wallet_and_shows_only_its_last_four(
    client: TestClient[Any, Any],
) -> None:
    member, _ = await _funded(client)

    card = await _card(client, member)

    assert card["id"].startswith("card_") and card["type"] == "member"
    assert card["status"] == "ACTIVE" and card["balanceMinor"] == "3000"
    assert card["memberId"] == member.user_id and len(card["last4"]) == 4
    assert "number" not in card and "cvc" not in card
    assert await balance(client, member) == {"available": 7000, "pending": 0, "reserved": 0}
    funding = (await movements(client, member, type="card_funding"))[0]
    assert funding["amountMinor"] == "-3000" and funding["sourceId"] == card["id"]
    stored = await services(client).database.fetchrow(
        "SELECT number, cvc FROM cards WHERE id = $1", card["id"]
    )
    assert stored is not None and card["last4"] not in stored["number"]


async def test_details_show_a_luhn_valid_number_and_are_audited(
    client: TestClient[Any, Any],
) -> None:
    member, card = await _issued(client)

    details = await read_as(client, member, f"/api/v1/merchant/cards/{card['id']}/details")

    assert luhn_valid(details["number"]) and details["number"].startswith("400000")
    assert details["number"].endswith(card["last4"]) and len(details["cvc"]) == 3
    actions = await audit_actions(client, member)
    assert "card.details_revealed" in actions and "card.issued" in actions


async def test_funding_beyond_the_wallet_is_409_and_withdrawal_beyond_the_card_too(
    client: TestClient[Any, Any],
) -> None:
    member, card = await _issued(client)

    too_much = await _post(client, member, f"/merchant/cards/{card['id']}/fund", amountMinor="7001")
    funded = await _post(client, member, f"/merchant/cards/{card['id']}/fund", amountMinor="7000")
    overdrawn = await _post(
        client, member, f"/merchant/cards/{card['id']}/withdraw", amountMinor="10001"
    )
    withdrawn = await _post(
        client, member, f"/merchant/cards/{card['id']}/withdraw", amountMinor="4000"
    )

    await assert_refused(too_much, 409, "balance_insufficient")
    assert (await funded.json())["balanceMinor"] == "10000"
    assert overdrawn.status == 409
    # the card's balance in major units, as people read it
    assert "The card holds 100.00 USD" in (await overdrawn.json())["message"]
    assert (await withdrawn.json())["balanceMinor"] == "6000"
    assert await balance(client, member) == {"available": 4000, "pending": 0, "reserved": 0}


async def test_authorizations_are_approved_or_declined_with_their_reasons(
    client: TestClient[Any, Any],
) -> None:
    member, key = await _funded(client)
    controls = {
        "spendingLimits": [
            {"amountMinor": "1000", "interval": "per_transaction"},
            {"amountMinor": "1500", "interval": "daily"},
        ],
        "blockedCategories": ["betting_casino_gambling"],
    }
    card = await _card(client, member, controls=controls)

    approved = await _authorize(client, key, card["id"], "800", merchantName="Cafe")
    over_each = await _authorize(client, key, card["id"], "1200")
    over_day = await _authorize(client, key, card["id"], "800")
    blocked = await _authorize(
        client, key, card["id"], "10", merchantCategory="betting_casino_gambling"
    )
    await _post(client, member, f"/merchant/cards/{card['id']}/freeze")
    frozen = await _authorize(client, key, card["id"], "10")

    assert (
        approved["object"]["approved"] is True
        and approved["event"]["type"] == "card.authorization.approved"
    )
    assert [o["object"]["declineReason"] for o in (over_each, over_day, blocked, frozen)] == [
        "spending_limit",
        "spending_limit",
        "category_blocked",
        "card_frozen",
    ]
    assert (await read_object(client, member, "cards", card["id"]))["balanceMinor"] == "2200"
    listed = await client.get(
        f"/api/v1/merchant/cards/{card['id']}/transactions", headers=member.headers
    )
    assert len((await listed.json())["data"]) == 5


async def test_concurrent_authorizations_never_take_the_card_below_zero(
    client: TestClient[Any, Any],
) -> None:
    member, key = await _funded(client)
    card = await _card(client, member, funding="1000")

    answers = await asyncio.gather(*(_authorize(client, key, card["id"], "100") for _ in range(30)))

    approved = [a for a in answers if a["object"]["approved"]]
    assert len(approved) == 10
    assert {a["object"]["declineReason"] for a in answers if not a["object"]["approved"]} == {
        "insufficient_funds"
    }
    assert (await read_object(client, member, "cards", card["id"]))["balanceMinor"] == "0"


async def test_terminating_returns_the_balance_to_the_wallet_for_good(
    client: TestClient[Any, Any],
) -> None:
    member, card = await _issued(client)

    terminated = await _post(client, member, f"/merchant/cards/{card['id']}/terminate")
    again = await _post(client, member, f"/merchant/cards/{card['id']}/unfreeze")
    fund = await _post(client, member, f"/merchant/cards/{card['id']}/fund", amountMinor="1")

    body = await terminated.json()
    assert body["status"] == "TERMINATED" and body["balanceMinor"] == "0"
    assert again.status == 409 and fund.status == 409
    assert await balance(client, member) == {"available": 10000, "pending": 0, "reserved": 0}


async def test_company_cards_are_issued_funded_and_listed(client: TestClient[Any, Any]) -> None:
    member, _ = await _funded(client)
    response = await client.post(
        "/api/v1/merchant/company-cards",
        json={"nickname": "Ads", "currency": "USD"},
        headers=member.headers,
    )
    company_card = await response.json()
    member_card = await _card(client, member, funding=None)

    topped = await _post(
        client, member, f"/merchant/company-cards/{company_card['id']}/fund", amountMinor="500"
    )
    listed = await client.get(
        "/api/v1/merchant/cards", params={"type": "company"}, headers=member.headers
    )

    assert response.status == 201 and company_card["memberId"] is None
    assert (await topped.json())["balanceMinor"] == "500"
    assert [c["id"] for c in (await listed.json())["data"]] == [company_card["id"]]
    assert member_card["balanceMinor"] == "0"


async def test_bad_card_input_is_400(client: TestClient[Any, Any]) -> None:
    member, _ = await _funded(client)

    for body in (
        {
            "cardholderName": "A",
            "currency": "USD",
            "controls": {"spendingLimits": [{"amountMinor": "1", "interval": "hourly"}]},
        },
        {"cardholderName": "A", "currency": "USD", "controls": {"blockedCategories": ["nonsense"]}},
        {"cardholderName": "A", "currency": "USD", "memberId": "usr_stranger"},
        {"currency": "USD"},
    ):
        response = await client.post("/api/v1/merchant/cards", json=body, headers=member.headers)
        assert response.status == 400, body
        assert_envelope(await response.json(), 400, "validation_error")


async def test_another_companys_cards_are_not_found(client: TestClient[Any, Any]) -> None:
    owner, _ = await _funded(client)
    other = await sign_up(client, "other@example.com", "Other Ltd")
    card = await _card(client, owner)

    for path in (
        f"/api/v1/merchant/cards/{card['id']}",
        f"/api/v1/merchant/cards/{card['id']}/details",
    ):
        assert (await client.get(path, headers=other.headers)).status == 404
    assert (await _post(client, other, f"/merchant/cards/{card['id']}/freeze")).status == 404


async def test_a_live_session_sees_no_test_card(client: TestClient[Any, Any]) -> None:
    member, card = await _issued(client)
    live = await live_session(client, member)

    got = await client.get(f"/api/v1/merchant/cards/{card['id']}", headers=live.headers)
    frozen = await _post(client, live, f"/merchant/cards/{card['id']}/freeze")
    listed = await client.get("/api/v1/merchant/cards", headers=live.headers)

    assert got.status == 404 and frozen.status == 404
    assert (await listed.json())["data"] == []
