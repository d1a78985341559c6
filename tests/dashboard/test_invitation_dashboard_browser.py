"""Accepting an invitation leads into the dashboard (issue 30), in a real browser under both
pages' strict policies: once the invitee has joined, the invitation page (which keeps no token)
links to the dashboard's sign-in with the invited email filled in, and signing in there opens the
company that invited them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser

from tests.dashboard.driving import base_url, invited, me_with, open_page, photograph, session_token
from tests.helpers import latest_code, sign_up

INVITEE = "new@example.com"


async def test_the_invitee_who_joins_is_led_to_sign_in_with_their_email_and_lands_in_the_company(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    # given an invitation to Blue Mug Coffee as finance
    owner = await sign_up(served, "owner@example.com", "Blue Mug Coffee")
    _, link = await invited(served, owner, INVITEE)
    watched = await open_page(browser)
    page = watched.page

    # when the invitee accepts it, types the mailed code and follows the way into the dashboard
    await page.goto(link)
    await page.click("#accept")
    await page.wait_for_selector("#code-form", state="visible")
    await page.fill("#code", await latest_code(served, INVITEE))
    await page.click("#verify")
    await page.wait_for_selector("#sign-in")
    kept_on_joining = await session_token(page)
    await photograph(page, tmp_path / "screens", "invitation-joined")
    await page.click("#sign-in")
    await page.wait_for_selector("#send-code")
    prefilled = await page.input_value("#email")
    # and signs in there with a fresh code
    await page.click("#send-code")
    await page.wait_for_selector("#code")
    await page.fill("#code", await latest_code(served, INVITEE))
    await page.click("#verify")
    await page.wait_for_selector("#sign-out")

    # then the sign-in had their email, and they are on Home as the invited member of that
    # company; the invitation page itself kept no token
    assert kept_on_joining is None
    assert prefilled == INVITEE
    assert page.url == base_url(served) + "/dashboard"
    assert await page.inner_text("#company-name") == "Blue Mug Coffee"
    token = await session_token(page)
    assert token is not None
    me = await me_with(served, token)
    body = await me.json()
    assert me.status == 200, body
    assert (body["user"]["email"], body["role"]["id"]) == (INVITEE, "role_finance")
    assert watched.problems == []
