"""Terminating a card from its page in the dashboard (issue 30), in a real browser: asked first,
then done as the API says, its balance back in the wallet and no action left on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser

from tests.dashboard.driving import photograph, signed_in
from tests.helpers import created, sign_up
from tests.money import balance, paid_payment


async def test_a_card_is_terminated_after_asking_and_its_balance_returns_to_the_wallet(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    # given 100.00 USD paid in, 30.00 of it on a member card
    owner = await sign_up(served, company="Blue Mug Coffee")
    await paid_payment(served, owner, "10000")
    funded = {"currency": "USD", "cardholderName": "Ann Lee", "initialFundingMinor": "3000"}
    card = await created(served, owner, "/api/v1/merchant/cards", funded)
    assert (await balance(served, owner))["available"] == 7000
    watched = await signed_in(browser, served, owner.email, f"/dashboard/cards/{card['id']}")
    page = watched.page
    await page.wait_for_selector("#card-details")

    # when the owner asks to terminate it, is asked first, keeps it, then confirms
    await page.click("#terminate")
    question = await page.inner_text("[role=group][aria-label='Terminate card']")
    await photograph(page, tmp_path / "screens", "card-terminate")
    await page.click("text=Keep it")
    still_active = await page.locator("h1 .status-active").count()
    await page.click("#terminate")
    await page.click("#confirm-terminate")
    await page.wait_for_selector("h1 .status-terminated")

    # then the API says TERMINATED, the 30.00 is back in the wallet, and nothing is offered
    stored = await served.get(f"/api/v1/merchant/cards/{card['id']}", headers=owner.headers)
    assert (await stored.json())["status"] == "TERMINATED"
    assert (await balance(served, owner))["available"] == 10000
    assert "30.00 USD returns to the wallet" in question
    assert still_active == 1
    for action in ("#terminate", "#freeze", "#unfreeze", "#move-money", "#save-controls"):
        assert await page.locator(action).count() == 0
    assert watched.problems == []
