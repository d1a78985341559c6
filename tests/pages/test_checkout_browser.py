"""The hosted checkout page, driven in a real headless Chromium (decisions 4), under its strict
Content Security Policy: the browser must refuse nothing the page does.

A screenshot of the filled-in page is kept in test-artifacts/ for a person to look at.
"""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser, Page

from tests.dashboard.driving import base_url
from tests.helpers import create_payment, sign_up
from tests.pages.browser import (
    keep_screenshot,
    not_failed_loads,
    open_page,
    record_dialogs,
)


async def _type_card(page: Page, number: str, month: str, year: str) -> None:
    """Fills the card form as a shopper would, with the CVC every test card takes."""
    await page.fill("#number", number)
    await page.fill("#expMonth", month)
    await page.fill("#expYear", year)
    await page.fill("#cvc", "123")


async def _submit(page: Page, outcome: str) -> str:
    """Submits the card form and waits for the selector `outcome` to show; the text it shows."""
    await page.click("#submit")
    await page.wait_for_selector(outcome, timeout=10_000)
    return await page.inner_text(outcome)


async def test_customer_pays_in_the_browser_and_lands_on_the_success_url(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a payment link with a success URL
    base = base_url(served)
    member = await sign_up(served, company="Blue Mug Coffee")
    payment = await create_payment(
        served,
        member,
        amountMinor="1250",
        description="Two flat whites",
        successUrl=f"{base}/shop/thanks",
    )

    # when a customer opens the payUrl, types the test card and submits
    async with open_page(browser) as (page, problems):
        await page.goto(payment["payUrl"])
        assert await page.inner_text("#amount") == "12.50 USD"
        assert "Blue Mug Coffee" in await page.content()
        await page.fill("#email", "customer@example.com")
        await _type_card(page, "4242 4242 4242 4242", "12", "2099")
        screenshot = await keep_screenshot(page, "checkout.png")
        await page.click("#submit")
        await page.wait_for_url(f"{base}/shop/thanks?**", timeout=10_000)
        landed = await page.inner_text("h1")
        landed_url = page.url

    # then the customer is on the success page, the payment is PAID, and the browser refused
    # nothing the page did under its policy
    assert landed == "Thanks for your order"
    assert landed_url == (
        f"{base}/shop/thanks?paymentId={payment['id']}&reference={payment['reference']}"
    )
    assert problems == []
    got = await served.get(f"/api/v1/merchant/payments/{payment['id']}", headers=member.headers)
    body = await got.json()
    assert body["status"] == "PAID"
    assert body["customerEmail"] == "customer@example.com"
    assert screenshot.stat().st_size > 10_000


async def test_a_declined_card_shows_the_reason_and_the_form_stays(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    member = await sign_up(served)
    payment = await create_payment(served, member)

    async with open_page(browser) as (page, problems):
        await page.goto(payment["payUrl"])
        await _type_card(page, "4000000000000002", "12", "2099")
        await _submit(page, "#error:has-text('declined')")
        still_there = await page.is_visible("#submit")

    assert still_there
    # The decline answer is a 402: the browser logs it as a failed load, which is not a refusal.
    assert not_failed_loads(problems) == []
    got = await served.get(f"/api/v1/merchant/payments/{payment['id']}", headers=member.headers)
    assert (await got.json())["status"] == "PENDING"


async def test_without_a_success_url_the_shopper_sees_amount_merchant_and_reference(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    member = await sign_up(served, company="Blue Mug Coffee")
    payment = await create_payment(served, member, amountMinor="1250")

    async with open_page(browser) as (page, problems):
        await page.goto(payment["payUrl"])
        # an expired card first: a sentence for a shopper, no field path, no code
        await _type_card(page, "4242 4242 4242 4242", "01", "21")
        expired = await _submit(page, "#error:not(:empty)")
        # then a wrong number
        await page.fill("#number", "4242 4242 4242 4241")
        await page.fill("#expYear", "29")  # two digits, as printed on the card
        wrong_number = await _submit(page, "#error:has-text('card number')")
        # then the right one
        await page.fill("#number", "4242 4242 4242 4242")
        paid = await _submit(page, "#paid")
        await keep_screenshot(page, "checkout-paid.png")

    assert expired == "This card has expired."
    assert wrong_number == "Check the card number."
    assert "Payment received" in paid
    assert "You paid 12.50 USD to Blue Mug Coffee." in paid
    assert f"Reference {payment['reference']}" in paid
    assert not_failed_loads(problems) == []


async def test_a_merchant_name_cannot_break_out_of_the_page_s_script(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    member = await sign_up(served, company="Evil </script><script>alert(1)</script> & Co")
    payment = await create_payment(served, member)

    async with open_page(browser) as (page, _):
        dialogs = record_dialogs(page)
        await page.goto(payment["payUrl"])
        await _type_card(page, "4242 4242 4242 4242", "12", "29")
        paid = await _submit(page, "#paid")

    assert dialogs == []
    assert "to Evil </script><script>alert(1)</script> & Co." in paid
