"""Payments in the dashboard, in a real browser (issue 30): filters kept in the URL, cursor
paging, the CSV export of the filtered list, a payment's detail, a refund, and a payment link
made in the dashboard, paid on the hosted checkout and then seen PAID."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser

from tests.dashboard.driving import (
    answer_busy,
    base_url,
    make_payment_link,
    pay_at_checkout,
    photograph,
    refund_in_view,
    row_ids,
    signed_in,
    to_next_page,
)
from tests.helpers import create_payment, eventually, pay, sign_up


async def test_the_status_filter_lives_in_the_url_and_survives_a_reload(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given two paid payments and one pending
    owner = await sign_up(served)
    paid = [await create_payment(served, owner, amountMinor=str(1000 + i)) for i in range(2)]
    for payment in paid:
        assert (await pay(served, payment["reference"])).status == 200
    pending = await create_payment(served, owner, amountMinor="999")
    watched = await signed_in(browser, served, owner.email, "/dashboard/payments")
    page = watched.page
    await page.wait_for_selector(f"tr[data-id='{pending['id']}']")

    # when the member picks the status PAID
    await page.select_option("#filter-status", "PAID")
    await page.wait_for_selector(f"tr[data-id='{pending['id']}']", state="detached")

    # then the URL says so, only paid payments are listed, and a reload shows the same
    assert page.url == base_url(served) + "/dashboard/payments?status=PAID"
    rows = await row_ids(page, "tbody tr")
    assert sorted(rows) == sorted(p["id"] for p in paid)
    await page.reload()
    await page.wait_for_selector("tbody tr")
    again = await row_ids(page, "tbody tr")
    assert sorted(again) == sorted(rows)
    assert await page.input_value("#filter-status") == "PAID"
    assert watched.problems == []


async def test_paging_follows_the_cursor_and_the_export_holds_every_filtered_row(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    # given 23 EUR payments (more than a page of 20) and one in USD
    owner = await sign_up(served)
    euros = [
        await create_payment(served, owner, amountMinor=str(100 + i), currency="EUR")
        for i in range(23)
    ]
    await create_payment(served, owner, amountMinor="5000", currency="USD")
    watched = await signed_in(browser, served, owner.email, "/dashboard/payments?currency=EUR")
    page = watched.page
    await page.wait_for_selector("#next-page")

    # when the member reads the first page and then the next
    first = await row_ids(page, "tbody tr")
    await to_next_page(page)
    await page.wait_for_selector(f"tr[data-id='{euros[0]['id']}']")
    second = await row_ids(page, "tbody tr")

    # then the two pages hold every EUR payment once, newest first, and the cursor is in the URL
    newest_first = [p["id"] for p in reversed(euros)]
    assert first + second == newest_first
    assert "cursor=" in page.url and "currency=EUR" in page.url
    assert not await page.is_visible("#next-page")

    # when the filtered list is exported
    async with page.expect_download() as downloading:
        await page.click("#export")
    download = await downloading.value
    saved = tmp_path / download.suggested_filename
    await download.save_as(saved)

    # then the file has a header and one row per EUR payment, amounts in major units too
    rows = list(csv.DictReader(io.StringIO(saved.read_text(encoding="utf-8"))))
    assert [r["id"] for r in rows] == newest_first
    assert {r["currency"] for r in rows} == {"EUR"}
    assert rows[-1]["amount"] == "1.00" and rows[-1]["amountMinor"] == "100"
    assert watched.problems == []


async def test_a_link_made_in_the_dashboard_is_paid_at_checkout_shown_paid_and_refunded(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    owner = await sign_up(served, company="Blue Mug Coffee")
    watched = await signed_in(browser, served, owner.email, "/dashboard/payments/new")
    page = watched.page

    # when the member makes a 12.50 USD link
    pay_url, detail = await make_payment_link(page, "12.50", "Two flat whites")
    await photograph(page, tmp_path / "screens", "payment-link-created")

    # and a customer pays it on the hosted checkout
    assert pay_url.startswith(base_url(served) + "/pay/PAY-")
    await pay_at_checkout(page, pay_url)

    # then the dashboard shows it PAID, with its timeline
    await page.goto(base_url(served) + detail)
    await page.wait_for_selector("h1 .status-paid")
    assert "12.50 USD" in await page.inner_text("h1")
    assert "Paid" in await page.inner_text("#timeline")
    assert not await page.is_visible("#cancel")

    # when part of it is refunded
    await refund_in_view(page, "2.50", "One was cold")

    # then the refund is listed against it and the API agrees
    await page.wait_for_selector("#refunds tbody tr")
    assert "2.50 USD" in await page.inner_text("#refunds")
    payment_id = detail.rsplit("/", 1)[-1]

    async def refunded() -> Any:
        got = await served.get(
            f"/api/v1/merchant/refunds?paymentId={payment_id}", headers=owner.headers
        )
        data = (await got.json())["data"]
        return data if data and data[0]["amountMinor"] == "250" else None

    await eventually(refunded, what="the refund of 2.50")
    await photograph(page, tmp_path / "screens", "payment-detail")

    # and Home lists it among the recent payments, no longer pending
    await page.click("nav a:has-text('Home')")
    row = page.locator(f"#recent tr[data-id='{payment_id}']")
    await row.wait_for()
    assert "Pending" not in await row.inner_text()
    assert "12.50 USD" in await row.inner_text()
    # The checkout page is another page of the service: it must have refused nothing either.
    assert watched.problems == []


async def test_cancelling_a_pending_payment_asks_first_and_then_shows_it_cancelled(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served)
    payment = await create_payment(served, owner)
    watched = await signed_in(browser, served, owner.email, f"/dashboard/payments/{payment['id']}")
    page = watched.page
    await page.wait_for_selector("#cancel")
    assert await page.input_value("#pay-url") == payment["payUrl"]

    await page.click("#cancel")
    await page.click("#confirm-cancel")
    await page.wait_for_selector("h1 .status-cancelled")

    got = await served.get(f"/api/v1/merchant/payments/{payment['id']}", headers=owner.headers)
    assert (await got.json())["status"] == "CANCELLED"
    assert not await page.is_visible("#cancel")
    assert watched.problems == []


async def test_a_busy_answer_is_waited_out_for_its_retry_after_and_the_list_then_loads(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a payment, and a service that answers the first list request 503 with Retry-After
    owner = await sign_up(served)
    payment = await create_payment(served, owner)
    watched = await signed_in(browser, served, owner.email)
    page = watched.page
    refused: list[str] = []

    async def busy_once(route: Any) -> None:
        if refused:
            await route.continue_()
            return
        refused.append(route.request.url)
        await answer_busy(route)

    await page.route("**/api/v1/merchant/payments?*", busy_once)

    # when the member opens Payments
    await page.click("nav a:has-text('Payments')")

    # then the wait is announced, and the list arrives once the second request is answered
    await page.wait_for_selector("text=trying again in 1 s")
    await page.wait_for_selector(f"tr[data-id='{payment['id']}']")
    assert len(refused) == 1
    # The 503 is logged by the browser as a failed load; nothing else went wrong.
    assert [p for p in watched.problems if "status of 503" not in p] == []
