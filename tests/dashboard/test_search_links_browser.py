"""Search results lead to their pages in the dashboard (issue 30), in a real browser: a customer,
an invoice and a card found by id (or email) open their own view, and a refund opens its
payment."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser, Page

from tests.dashboard.driving import base_url, signed_in
from tests.helpers import created, post_as, sign_up
from tests.money import paid_payment, refund


async def _follow(page: Page, query: str, kind: str) -> str:
    """Search for `query`, follow the one result of `kind`, and answer the path it opened."""
    await page.fill("#search", query)
    await page.press("#search", "Enter")
    link = page.locator(f"#results li[data-kind={kind}] a")
    await link.first.wait_for()
    assert await link.count() == 1
    await link.click()
    await page.wait_for_function("() => !location.pathname.startsWith('/dashboard/search')")
    return str(await page.evaluate("location.pathname"))


async def test_each_kind_of_result_opens_its_own_page(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a paid payment by Ada refunded in part, an invoice and a card
    owner = await sign_up(served, company="Blue Mug Coffee")
    payment = await paid_payment(served, owner, "10000")
    await post_as(
        served,
        owner,
        "/api/v1/merchant/payments",
        {"amountMinor": "500", "currency": "USD", "customerEmail": "ada@example.com"},
    )
    refunded = await (await refund(served, owner, payment["id"], "1000")).json()
    invoice = await created(
        served,
        owner,
        "/api/v1/merchant/invoices",
        {"currency": "USD", "customerEmail": "bea@example.com", "amountMinor": "5000"},
    )
    card = await created(
        served, owner, "/api/v1/merchant/cards", {"currency": "USD", "cardholderName": "Ann Lee"}
    )
    customers = await served.get(
        "/api/v1/merchant/customers", params={"email": "ada@example.com"}, headers=owner.headers
    )
    customer = (await customers.json())["data"][0]
    watched = await signed_in(browser, served, owner.email)
    page = watched.page

    # when each is searched for and its result followed
    opened = {
        "customer by email": await _follow(page, "ada@example.com", "customer"),
        "customer by id": await _follow(page, customer["id"], "customer"),
        "invoice": await _follow(page, invoice["id"], "invoice"),
        "card": await _follow(page, card["id"], "card"),
        "refund": await _follow(page, refunded["id"], "refund"),
    }
    await page.wait_for_selector("#payment-reference")

    # then each opened its own view, and the refund its payment's
    assert opened == {
        "customer by email": f"/dashboard/customers/{customer['id']}",
        "customer by id": f"/dashboard/customers/{customer['id']}",
        "invoice": f"/dashboard/invoices/{invoice['id']}",
        "card": f"/dashboard/cards/{card['id']}",
        "refund": f"/dashboard/payments/{payment['id']}",
    }
    assert page.url == base_url(served) + f"/dashboard/payments/{payment['id']}"
    assert watched.problems == []
