"""Signing in to the dashboard in a real browser (issue 30): the emailed code, the company picker,
the test/live switch and signing out, each under the page's strict policy with nothing refused."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser, Page

from tests.dashboard.driving import (
    Watched,
    answer_busy,
    base_url,
    me_with,
    open_page,
    session_token,
    signed_in,
)
from tests.helpers import add_member, create_payment, latest_code, sign_up


async def _code_asked_for(page: Page, served: TestClient[Any, Any], email: str) -> None:
    """Open the dashboard signed out, and ask for a code for `email` with the mouse."""
    await page.goto(base_url(served) + "/dashboard")
    await page.fill("#email", email)
    await page.click("#send-code")
    await page.wait_for_selector("#code")


async def _owner_signed_in(
    served: TestClient[Any, Any], browser: Browser
) -> tuple[Watched, str | None]:
    """The owner of a new company signed in on a page of their own; it, and the session token
    the tab keeps."""
    owner = await sign_up(served)
    watched = await signed_in(browser, served, owner.email)
    return watched, await session_token(watched.page)


async def test_signing_in_with_the_emailed_code_lands_on_the_view_the_link_named(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a merchant with a pending payment, and a link to the view of the paid ones
    owner = await sign_up(served, "owner@example.com", "Blue Mug Coffee")
    await create_payment(served, owner)

    # when they open the link signed out and sign in with the keyboard alone
    watched = await signed_in(browser, served, owner.email, "/dashboard/payments?status=PAID")

    # then they are on that view, its filter still in the URL, in test mode
    page = watched.page
    await page.wait_for_selector("h1:has-text('Payments')")
    assert page.url == base_url(served) + "/dashboard/payments?status=PAID"
    assert await page.input_value("#filter-status") == "PAID"
    assert await page.is_visible("#test-banner")
    assert await page.inner_text("#company-name") == "Blue Mug Coffee"
    # and a reload keeps both the session (this tab's storage) and the view
    await page.reload()
    await page.wait_for_selector("#payments-table, .empty")
    assert page.url.endswith("/dashboard/payments?status=PAID")
    assert watched.problems == []


async def test_a_wrong_code_is_explained_in_plain_words_and_the_form_stays(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served, "owner@example.com")
    watched = await open_page(browser)
    page = watched.page
    await _code_asked_for(page, served, owner.email)
    right = await latest_code(served, owner.email)

    await page.fill("#code", "000000" if right != "000000" else "111111")
    await page.click("#verify")
    await page.wait_for_selector("[role=alert]")

    assert "code is wrong" in (await page.inner_text("[role=alert]")).lower()
    assert await page.is_visible("#code")
    assert await session_token(page) is None
    # The refusal is a 400: the browser logs the failed load, which is not an error of the page.
    assert [p for p in watched.problems if "Failed to load resource" not in p] == []


async def test_a_person_in_two_companies_picks_one_at_sign_in_and_switches_later(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a person who owns Blue Mug Coffee and is an admin at Red Kettle Tea
    pat = await sign_up(served, "pat@example.com", "Blue Mug Coffee")
    other = await sign_up(served, "sam@example.com", "Red Kettle Tea")
    await add_member(served, other, pat.email, "role_admin")
    watched = await open_page(browser)
    page = watched.page

    # when they sign in, they are asked which company to open, and choose Red Kettle Tea
    await _code_asked_for(page, served, pat.email)
    await page.fill("#code", await latest_code(served, pat.email))
    await page.click("#verify")
    await page.click("button.choice:has-text('Red Kettle Tea')")
    await page.wait_for_selector("#company-picker")

    # then the dashboard is Red Kettle Tea's
    assert await page.input_value("#company-picker") == other.company_id
    first_token = await session_token(page)

    # when they switch to Blue Mug Coffee in the header
    await page.select_option("#company-picker", pat.company_id)
    await page.wait_for_function(
        "([key, old]) => !sessionStorage.getItem(key).includes(old)",
        arg=["mps.dashboard.session", first_token],
    )
    await page.wait_for_selector("#company-picker")
    assert await page.input_value("#company-picker") == pat.company_id

    # then the session is Blue Mug Coffee's and the token of the first choice no longer works
    token = await session_token(page)
    me = await me_with(served, token)
    assert (await me.json())["company"]["id"] == pat.company_id
    ended = await me_with(served, first_token)
    assert ended.status == 401
    assert watched.problems == []


async def test_the_mode_switch_moves_to_live_data_and_back_without_the_test_banner(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    watched, test_token = await _owner_signed_in(served, browser)
    page = watched.page
    assert await page.is_visible("#test-banner")

    # when they switch to live
    await page.click("#mode-switch")
    await page.wait_for_selector("#mode-switch[aria-checked=true]")

    # then the TEST MODE banner is gone, the session is live, and the test token has ended
    assert not await page.is_visible("#test-banner")
    live_token = await session_token(page)
    me = await me_with(served, live_token)
    assert (await me.json())["mode"] == "live"
    old = await me_with(served, test_token)
    assert old.status == 401

    # and back to test, where the banner returns
    await page.click("#mode-switch")
    await page.wait_for_selector("#test-banner")
    assert watched.problems == []


async def test_signing_out_ends_the_session_on_the_server(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    watched, token = await _owner_signed_in(served, browser)
    page = watched.page
    assert token is not None

    await page.click("#sign-out")
    await page.wait_for_selector("#email")

    # then the tab keeps nothing and the old token is refused by the API
    assert await session_token(page) is None
    refused = await me_with(served, token)
    assert refused.status == 401
    assert page.url.endswith("/dashboard/sign-in")
    assert watched.problems == []


async def test_a_sign_out_the_service_did_not_take_is_said_not_retried_and_keeps_the_session(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a signed-in member, and a service that answers every sign-out 503 with Retry-After
    watched, token = await _owner_signed_in(served, browser)
    page = watched.page
    sent: list[str] = []

    async def busy(route: Any) -> None:
        sent.append(route.request.method)
        await answer_busy(route)

    await page.route("**/api/v1/auth/logout", busy)

    # when they sign out
    await page.click("#sign-out")

    # then the failure is said in plain words, the POST (no Idempotency-Key honoured under
    # /auth) was sent once and not repeated, and the tab still holds the session, which the
    # service still accepts: nothing pretends it ended
    await page.wait_for_selector("text=Signing out did not reach the service")
    assert sent == ["POST"]
    assert await session_token(page) == token
    me = await me_with(served, token)
    assert me.status == 200
    # and once the service takes it, signing out ends the session
    await page.unroute("**/api/v1/auth/logout")
    await page.click("#sign-out")
    await page.wait_for_url("**/dashboard/sign-in*")
    gone = await me_with(served, token)
    assert gone.status == 401
    assert [p for p in watched.problems if "status of 503" not in p] == []
