"""Customers in the dashboard, in a real browser (issue 30): the list searched by email with the
search kept in the URL, cursor paging, and one customer with their totals per currency and their
payments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser

from tests.dashboard.driving import (
    assert_no_section,
    base_url,
    photograph,
    row_ids,
    signed_in,
    to_next_page,
)
from tests.helpers import add_member, create_payment, created, pay, sign_up


async def test_a_search_by_email_lives_in_the_url_and_leads_to_the_customer_and_their_payments(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    # given Ada paid twice (USD and EUR) and has a pending payment; Bob paid once
    owner = await sign_up(served, company="Blue Mug Coffee")
    ada = []
    for amount, currency in (("1250", "USD"), ("900", "EUR")):
        payment = await create_payment(
            served, owner, amountMinor=amount, currency=currency, customerEmail="ada@example.com"
        )
        assert (await pay(served, payment["reference"])).status == 200
        ada.append(payment)
    ada.append(await create_payment(served, owner, customerEmail="ada@example.com"))
    bob = await create_payment(served, owner, customerEmail="bob@example.com")
    assert (await pay(served, bob["reference"])).status == 200
    watched = await signed_in(browser, served, owner.email, "/dashboard/customers")
    page = watched.page
    await page.wait_for_selector("#customers-table")
    assert len(await row_ids(page, "#customers-table tbody tr")) == 2
    await photograph(page, tmp_path / "screens", "customers")

    # when the member searches for Ada's email, typed with capitals
    await page.fill("#customer-email", "Ada@Example.com")
    await page.click("#customer-search")
    await page.wait_for_url("**/dashboard/customers?email=ada%40example.com")
    await page.wait_for_function(
        "() => document.querySelectorAll('#customers-table tbody tr').length == 1"
    )

    # then only Ada is listed, with each currency paid on its own line, and a reload agrees
    row = page.locator("#customers-table tbody tr")
    assert "ada@example.com" in await row.inner_text()
    assert await row.locator(".totals li").all_inner_texts() in (
        ["12.50 USD", "9.00 EUR"],
        ["9.00 EUR", "12.50 USD"],
    )
    await page.reload()
    await page.wait_for_selector("#customers-table tbody tr")
    assert len(await row_ids(page, "#customers-table tbody tr")) == 1
    assert await page.input_value("#customer-email") == "ada@example.com"

    # when the member opens Ada
    await row.locator("a").click()
    await page.wait_for_selector("#customer-payments tbody tr")

    # then her details, totals per currency and all three payments show, newest first
    assert "ada@example.com" in await page.inner_text("h1")
    totals = page.locator("#customer-totals")
    assert await totals.locator("tr[data-currency=USD] .paid").inner_text() == "12.50 USD"
    assert await totals.locator("tr[data-currency=EUR] .paid").inner_text() == "9.00 EUR"
    assert await row_ids(page, "#customer-payments tbody tr") == [p["id"] for p in reversed(ada)]
    await photograph(page, tmp_path / "screens", "customer")

    # and a payment leads to its own page
    await page.click(f"#customer-payments tr[data-id='{ada[0]['id']}'] a")
    await page.wait_for_selector("#details")
    assert page.url == base_url(served) + f"/dashboard/payments/{ada[0]['id']}"
    assert watched.problems == []


async def test_customers_page_by_cursor_and_a_search_that_matches_nobody_says_so(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given 23 customers, more than a page of 20
    owner = await sign_up(served)
    for i in range(23):
        await create_payment(served, owner, customerEmail=f"c{i:02d}@example.com")
    watched = await signed_in(browser, served, owner.email, "/dashboard/customers")
    page = watched.page
    await page.wait_for_selector("#next-page")

    # when the member reads the first page and then the next
    first = await row_ids(page, "#customers-table tbody tr")
    await to_next_page(page)
    await page.wait_for_function(
        "() => document.querySelectorAll('#customers-table tbody tr').length == 3"
    )
    second = await row_ids(page, "#customers-table tbody tr")

    # then the pages hold every customer once, and the cursor is in the URL
    assert len(first) == 20 and len(set(first + second)) == 23
    assert "cursor=" in page.url
    assert not await page.is_visible("#next-page")

    # and a search nobody matches says so
    await page.goto(base_url(served) + "/dashboard/customers?email=nobody%40example.com")
    await page.wait_for_selector("text=No customers match.")
    assert watched.problems == []


async def test_a_role_without_customers_read_has_no_customers_section(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a developer (read scopes) and a custom role with payments only
    owner = await sign_up(served)
    payment = await create_payment(served, owner, customerEmail="ada@example.com")
    role = await created(
        served, owner, "/api/v1/team/roles", {"name": "Cashier", "scopes": ["payments:read"]}
    )
    cashier = await add_member(served, owner, "cashier@example.com", role["id"])

    # when the cashier signs in
    watched = await signed_in(browser, served, cashier.email, "/dashboard/payments")
    page = watched.page
    await page.wait_for_selector(f"tr[data-id='{payment['id']}']")

    # then Customers is not in the navigation, and its address shows nothing of it
    await assert_no_section(page, served, "Customers", "/dashboard/customers", "#customers-table")
    assert watched.problems == []
