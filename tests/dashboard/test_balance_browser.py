"""Balance and payouts in the dashboard, in a real browser (issue 30): the balance per currency,
bank accounts added and removed, payouts listed with their status filter and cursor in the URL,
requested (or held for approval above the policy's threshold) and cancelled, and what a role
without payouts:write does not get to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser

from tests.dashboard.driving import (
    add_bank_account,
    base_url,
    first_page,
    photograph,
    require_approval,
    row_ids,
    signed_in,
    to_next_page,
)
from tests.helpers import Member, add_member, created, sign_up
from tests.money import ACCOUNT, every_item, paid_payment


async def _payout(
    served: TestClient[Any, Any], owner: Member, account_id: str, amount: str
) -> dict[str, Any]:
    body = {"amountMinor": amount, "currency": "USD", "bankAccountId": account_id}
    payout: dict[str, Any] = await created(served, owner, "/api/v1/merchant/payouts", body)
    return payout


async def test_the_balance_is_shown_per_currency_and_bank_accounts_are_added_and_removed(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    # given 50.00 USD and 9.00 EUR paid in (test mode settles at once)
    owner = await sign_up(served, company="Blue Mug Coffee")
    await paid_payment(served, owner, "5000", "USD")
    await paid_payment(served, owner, "900", "EUR")

    # when the owner opens Balance
    watched = await signed_in(browser, served, owner.email, "/dashboard/balance")
    page = watched.page
    await page.wait_for_selector("#balance-table tr[data-currency=USD]")

    # then each currency has its own row, never a blended total
    usd = await page.inner_text("#balance-table tr[data-currency=USD] .available")
    eur = await page.inner_text("#balance-table tr[data-currency=EUR] .available")
    assert (usd, eur) == ("50.00 USD", "9.00 EUR")
    assert await page.locator("#balance-table tbody tr").count() == 2
    await page.wait_for_selector("#bank-accounts .empty")

    # when a bank account is added through the form
    await add_bank_account(page, "GB29 NWBK 6016 1331 9268 19", "NWBK601613", "gb", "GBP")

    # then it is listed masked, and the API holds it
    accounts = await first_page(served, owner, "/merchant/bank-accounts")
    assert [(a["currency"], a["country"], a["last4"]) for a in accounts] == [("GBP", "GB", "6819")]
    row = f"#accounts-table tr[data-id='{accounts[0]['id']}']"
    await page.wait_for_selector(row)
    assert "****6819" in await page.inner_text(row)
    assert "13319268" not in await page.inner_text("#accounts-table")
    await photograph(page, tmp_path / "screens", "balance")

    # when it is removed, after the question
    await page.click(f"#remove-{accounts[0]['id']}")
    await page.click(f"#remove-{accounts[0]['id']}-yes")

    # then it is gone from the view and from the API
    await page.wait_for_selector(row, state="detached")
    assert await first_page(served, owner, "/merchant/bank-accounts") == []
    assert watched.problems == []


async def test_payouts_page_by_cursor_filter_by_status_in_the_url_and_cancel_while_pending(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    # given 22 pending payouts of 1.00 (more than a page of 20)
    owner = await sign_up(served)
    await paid_payment(served, owner, "10000")
    account = await created(served, owner, "/api/v1/merchant/bank-accounts", ACCOUNT)
    payouts = [await _payout(served, owner, account["id"], "100") for _ in range(22)]
    watched = await signed_in(browser, served, owner.email, "/dashboard/payouts")
    page = watched.page
    await page.wait_for_selector("#next-page")

    # when the owner reads the first page and the next
    first = await row_ids(page, "#payouts-table tbody tr")
    await to_next_page(page)
    await page.wait_for_selector(f"#payouts-table tr[data-id='{first[0]}']", state="detached")
    second = await row_ids(page, "#payouts-table tbody tr")

    # then every payout is listed once, in the API's order (newest first), the cursor in the URL
    listed = await every_item(served, owner, "/api/v1/merchant/payouts")
    assert first + second == [p["id"] for p in listed]
    assert sorted(first + second) == sorted(p["id"] for p in payouts)
    assert "cursor=" in page.url
    assert not await page.is_visible("#next-page")

    # when the first listed is cancelled, after the question
    newest = first[0]
    await page.click("#first-page")
    await page.click(f"#cancel-{newest}")
    await page.click(f"#cancel-{newest}-yes")
    await page.wait_for_selector(f"#payouts-table tr[data-id='{newest}'][data-status=CANCELLED]")

    # then the API agrees, and the status filter (kept in the URL) shows it alone
    got = await served.get(f"/api/v1/merchant/payouts/{newest}", headers=owner.headers)
    assert (await got.json())["status"] == "CANCELLED"
    await page.select_option("#filter-status", "CANCELLED")
    await page.wait_for_url("**/dashboard/payouts?status=CANCELLED")
    await page.wait_for_selector(f"#payouts-table tr[data-id='{first[1]}']", state="detached")
    assert await row_ids(page, "#payouts-table tbody tr") == [newest]
    await page.reload()
    await page.wait_for_selector("#payouts-table")
    assert await row_ids(page, "#payouts-table tbody tr") == [newest]
    assert await page.input_value("#filter-status") == "CANCELLED"
    await photograph(page, tmp_path / "screens", "payouts")
    assert watched.problems == []


async def test_a_payout_requested_in_the_view_is_made_or_held_for_approval_above_the_threshold(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given 100.00 USD available, a bank account, and approval needed above 20.00 USD
    owner = await sign_up(served)
    await paid_payment(served, owner, "10000")
    account = await created(served, owner, "/api/v1/merchant/bank-accounts", ACCOUNT)
    await require_approval(served, owner, "payout.create", "2000")
    watched = await signed_in(browser, served, owner.email, "/dashboard/payouts")
    page = watched.page
    await page.wait_for_selector("#request-payout")

    # when 15.00 is requested
    await page.select_option("#payout-account", account["id"])
    await page.fill("#payout-amount", "15.00")
    await page.fill("#payout-description", "Rent")
    await page.click("#request-payout-submit")

    # then it is made and listed PENDING
    await page.wait_for_selector("#payout-created")
    assert "15.00 USD" in await page.inner_text("#payout-created")
    made = await first_page(served, owner, "/merchant/payouts")
    assert [(p["amountMinor"], p["description"]) for p in made] == [("1500", "Rent")]
    await page.wait_for_selector(f"#payouts-table tr[data-id='{made[0]['id']}']")

    # when 50.00 is requested, above the threshold
    await page.fill("#payout-amount", "50")
    await page.click("#request-payout-submit")

    # then nothing is paid out yet: the approval request the API answered with is shown
    await page.wait_for_selector("#payout-held")
    requests = await first_page(served, owner, "/team/approvals/requests")
    assert [(r["action"], r["status"]) for r in requests] == [("payout.create", "PENDING")]
    assert requests[0]["id"] in await page.inner_text("#payout-held")
    assert len(await first_page(served, owner, "/merchant/payouts")) == 1
    assert not await page.is_visible("#payout-created")
    assert watched.problems == []


async def test_a_viewer_sees_balance_and_payouts_but_no_action_that_needs_payouts_write(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served)
    await paid_payment(served, owner, "10000")
    account = await created(served, owner, "/api/v1/merchant/bank-accounts", ACCOUNT)
    payout = await _payout(served, owner, account["id"], "1000")
    viewer = await add_member(served, owner, "viewer@example.com", "role_viewer")

    watched = await signed_in(browser, served, viewer.email, "/dashboard/balance")
    page = watched.page
    await page.wait_for_selector(f"#accounts-table tr[data-id='{account['id']}']")
    await page.wait_for_selector("#balance-table tr[data-currency=USD]")
    assert await page.locator("#add-account").count() == 0
    assert await page.locator(f"#remove-{account['id']}").count() == 0

    await page.click("nav a[href='/dashboard/payouts']")
    await page.wait_for_selector(
        f"#payouts-table tr[data-id='{payout['id']}'][data-status=PENDING]"
    )
    assert await page.locator("#request-payout").count() == 0
    assert await page.locator(f"#cancel-{payout['id']}").count() == 0
    assert page.url == base_url(served) + "/dashboard/payouts"

    # a finance member, who may, gets both
    finance = await add_member(served, owner, "finance@example.com", "role_finance")
    other = await signed_in(browser, served, finance.email, "/dashboard/payouts")
    await other.page.wait_for_selector(f"#cancel-{payout['id']}")
    assert await other.page.locator("#request-payout").count() == 1
    assert watched.problems == [] and other.problems == []
