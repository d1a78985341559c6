"""Cards in the dashboard, in a real browser (issue 30): member and company cards issued, funded
from the balance and withdrawn, frozen and unfrozen (as the API then says), their spending
controls changed, their authorizations listed, the list's filters kept in the URL, and what roles
without cards:write or cards:read do not get."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser

from tests.dashboard.driving import (
    assert_no_section,
    base_url,
    open_not_found,
    photograph,
    require_approval,
    row_ids,
    sign_in,
    signed_in,
)
from tests.helpers import Member, add_member, answered, created, read_object, sign_up
from tests.money import authorize_card, paid_payment, sandbox_key


async def _card(served: TestClient[Any, Any], owner: Member, path: str, **body: Any) -> Any:
    return await created(served, owner, f"/api/v1/merchant/{path}", {"currency": "USD", **body})


async def _authorize(
    served: TestClient[Any, Any], key: dict[str, str], card_id: str, amount: str, **extra: Any
) -> dict[str, Any]:
    """What the sandbox answers (with 200) to an authorization of `amount` USD on the card."""
    found: dict[str, Any] = await answered(
        await authorize_card(served, key, card_id, amount, **extra), 200
    )
    return found


async def test_a_member_card_is_issued_funded_withdrawn_frozen_as_the_api_says_and_unfrozen(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    # given 100.00 USD available
    owner = await sign_up(served, company="Blue Mug Coffee")
    await paid_payment(served, owner, "10000")
    key = await sandbox_key(served, owner, "cards:write")
    watched = await signed_in(browser, served, owner.email, "/dashboard/cards")
    page = watched.page
    await page.wait_for_selector("text=No cards match.")

    # when the owner issues a member card with 30.00 on it
    await page.click("#issue-card")
    await page.wait_for_selector("#issue-submit")
    await page.fill("#card-name", "Ann Lee")
    await page.select_option("#card-currency", "USD")
    await page.fill("#card-funding", "30.00")
    await photograph(page, tmp_path / "screens", "issue-card")
    await page.click("#issue-submit")
    await page.wait_for_selector("#card-details")

    # then the card shows its balance, and it is the owner's
    card_id = page.url.rsplit("/", 1)[-1]
    assert await page.inner_text("#card-balance") == "30.00 USD"
    stored = await read_object(served, owner, "cards", card_id)
    assert stored["type"] == "member" and stored["memberId"] == owner.user_id

    # when 20.00 is funded and 5.00 withdrawn
    await page.fill("#move-amount", "20.00")
    await page.click("#fund")
    await page.wait_for_selector("#card-balance:has-text('50.00 USD')")
    await page.fill("#move-amount", "5.00")
    await page.click("#withdraw")
    await page.wait_for_selector("#card-balance:has-text('45.00 USD')")
    assert (await read_object(served, owner, "cards", card_id))["balanceMinor"] == "4500"

    # when it is frozen, confirming when asked
    await page.click("#freeze")
    await page.click("#confirm-freeze")
    await page.wait_for_selector("h1 .status-frozen")

    # then the API says FROZEN, and an authorization made now is declined and listed so
    assert (await read_object(served, owner, "cards", card_id))["status"] == "FROZEN"
    declined = await _authorize(served, key, card_id, "800", merchantName="Corner Shop")
    await page.reload()
    row = page.locator(f"#authorizations tr[data-id='{declined['object']['id']}']")
    await row.wait_for()
    assert "Declined" in await row.inner_text() and "Card frozen" in await row.inner_text()
    assert "8.00 USD" in await row.inner_text()
    await photograph(page, tmp_path / "screens", "card")

    # when it is unfrozen, it is ACTIVE again for the API
    await page.click("#unfreeze")
    await page.wait_for_selector("h1 .status-active")
    assert (await read_object(served, owner, "cards", card_id))["status"] == "ACTIVE"
    assert watched.problems == []


async def test_company_card_controls_are_changed_and_decide_its_authorizations(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    # given a member card, and a company card issued in the dashboard with 50.00 on it
    owner = await sign_up(served)
    await paid_payment(served, owner, "10000")
    key = await sandbox_key(served, owner, "cards:write")
    member_card = await _card(served, owner, "cards", cardholderName="Ann Lee")
    watched = await signed_in(browser, served, owner.email, "/dashboard/cards/new?type=company")
    page = watched.page
    await page.fill("#card-name", "Office supplies")
    await page.fill("#card-funding", "50.00")
    await page.click("#issue-submit")
    await page.wait_for_selector("#card-details")
    card_id = page.url.rsplit("/", 1)[-1]
    assert (await read_object(served, owner, "cards", card_id))["type"] == "company"

    # when its controls become 10.00 per transaction with gambling and florists blocked
    await page.click("#add-limit")
    await page.fill("#limit-amount-0", "10.00")
    await page.select_option("#limit-interval-0", "per_transaction")
    await page.fill("#blocked-categories", "betting_casino_gambling, florists")
    await page.click("#save-controls")
    await page.wait_for_selector("#limits .limit[data-interval=per_transaction]")

    # then the API holds them, and the card is topped up through the company-card route
    controls = (await read_object(served, owner, "cards", card_id))["controls"]
    assert controls["spendingLimits"] == [{"amountMinor": "1000", "interval": "per_transaction"}]
    assert controls["blockedCategories"] == ["betting_casino_gambling", "florists"]
    await page.fill("#move-amount", "1.00")
    async with page.expect_request("**/api/v1/merchant/company-cards/*/fund") as funding:
        await page.click("#fund")
    assert (await funding.value).url.endswith(f"/company-cards/{card_id}/fund")
    await page.wait_for_selector("#card-balance:has-text('51.00 USD')")

    # when authorizations arrive: one within the limit, one above, one in a blocked category
    approved = await _authorize(served, key, card_id, "500", merchantName="Paper Co")
    above = await _authorize(served, key, card_id, "1500")
    blocked = await _authorize(served, key, card_id, "100", merchantCategory="florists")
    await page.reload()
    await page.wait_for_selector("#authorizations tbody tr")

    # then each is listed, newest first, with its outcome
    ids = [a["object"]["id"] for a in (blocked, above, approved)]
    assert await row_ids(page, "#authorizations tbody tr") == ids
    outcomes = await page.locator("#authorizations tbody tr").all_inner_texts()
    assert "Spending limit" in outcomes[1] and "Category blocked" in outcomes[0]
    assert "Approved" in outcomes[2] and "Paper Co" in outcomes[2]
    await photograph(page, tmp_path / "screens", "company-card")

    # and the list filters by kind in the URL
    await page.goto(base_url(served) + "/dashboard/cards")
    await page.wait_for_selector(f"tr[data-id='{member_card['id']}']")
    await page.select_option("#filter-type", "company")
    await page.wait_for_selector(f"tr[data-id='{member_card['id']}']", state="detached")
    assert page.url == base_url(served) + "/dashboard/cards?type=company"
    assert await row_ids(page, "#cards-table tbody tr") == [card_id]
    await photograph(page, tmp_path / "screens", "cards")
    assert watched.problems == []


async def test_a_viewer_sees_cards_without_actions_and_finance_has_no_cards_section(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served)
    await paid_payment(served, owner, "10000")
    card = await _card(served, owner, "cards", cardholderName="Ann Lee", initialFundingMinor="1000")
    viewer = await add_member(served, owner, "viewer@example.com", "role_viewer")
    finance = await add_member(served, owner, "finance@example.com", "role_finance")

    # a viewer reads the card and its balance but is offered nothing to change it
    watched = await signed_in(browser, served, viewer.email, "/dashboard/cards")
    page = watched.page
    await page.wait_for_selector(f"tr[data-id='{card['id']}']")
    assert await page.locator("#issue-card").count() == 0
    await page.click(f"tr[data-id='{card['id']}'] a")
    await page.wait_for_selector("#authorizations")
    assert await page.inner_text("#card-balance") == "10.00 USD"
    for action in ("#freeze", "#unfreeze", "#terminate", "#move-money", "#save-controls"):
        assert await page.locator(action).count() == 0
    await open_not_found(page, served, "/dashboard/cards/new")
    assert await page.locator("#issue-submit").count() == 0
    await page.click("#sign-out")
    await page.wait_for_selector("#email")

    # finance holds no cards scope: no Cards section at all
    await sign_in(watched, served, finance.email, "/dashboard/payments")
    await page.wait_for_selector("nav a:has-text('Invoices')")
    await assert_no_section(page, served, "Cards", f"/dashboard/cards/{card['id']}")
    assert watched.problems == []


async def test_a_card_is_issued_to_a_teammate_and_funding_above_the_threshold_waits_for_approval(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a teammate, and card funding above 10.00 USD held for one approval
    owner = await sign_up(served)
    await paid_payment(served, owner, "10000")
    teammate = await add_member(served, owner, "ann@example.com", "role_finance")
    await require_approval(served, owner, "card.fund", "1000")
    watched = await signed_in(browser, served, owner.email, "/dashboard/cards/new")
    page = watched.page

    # when the owner issues a member card and picks the teammate
    await page.fill("#card-name", "Ann Lee")
    await page.select_option("#card-member", teammate.user_id)
    await page.click("#issue-submit")
    await page.wait_for_selector("#card-details")

    # then the card is the teammate's
    card_id = page.url.rsplit("/", 1)[-1]
    assert (await read_object(served, owner, "cards", card_id))["memberId"] == teammate.user_id

    # when 20.00 is funded, above the threshold
    await page.fill("#move-amount", "20.00")
    await page.click("#fund")
    await page.wait_for_selector("#move-result:has-text('needs approval')")

    # then nothing moved yet, and the request waits in the approvals inbox
    assert (await read_object(served, owner, "cards", card_id))["balanceMinor"] == "0"
    assert await page.inner_text("#card-balance") == "0.00 USD"
    requests = await served.get(
        "/api/v1/team/approvals/requests", params={"status": "PENDING"}, headers=owner.headers
    )
    assert [r["action"] for r in (await requests.json())["data"]] == ["card.fund"]
    assert watched.problems == []
