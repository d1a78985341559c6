"""The invitation page (decisions 9), driven in a real headless Chromium under its strict Content
Security Policy: what an invitee sees on opening the link in an invitation email, accepting it
and typing the sign-in code mailed to them, or declining it.

A screenshot of the page as the invitee first sees it is kept in test-artifacts/ for a person to
look at.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser

from tests.dashboard.driving import base_url, first_page, invited
from tests.helpers import Member, latest_code, sign_up
from tests.pages.browser import (
    assert_not_valid_link,
    inner_texts,
    keep_screenshot,
    not_failed_loads,
    open_page,
    record_dialogs,
)

INVITEE = "new@example.com"


async def _invite(served: TestClient[Any, Any], owner: Member) -> tuple[dict[str, Any], str]:
    """An invitation of INVITEE as finance, and the link mailed to them: a page of this server."""
    invitation, link = await invited(served, owner, INVITEE)
    assert link.startswith(f"{base_url(served)}/invite/"), link
    return invitation, link


async def test_the_invitee_accepts_types_the_code_and_joins_with_no_policy_violation(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given an owner who invited new@example.com as finance
    owner = await sign_up(served, company="Blue Mug Coffee")
    _, link = await _invite(served, owner)

    # when the invitee opens the link, accepts, and types the code mailed to them
    async with open_page(browser) as (page, problems):
        response = await page.goto(link)
        status = response.status if response else None
        policy = response.headers.get("content-security-policy", "") if response else ""
        robots = await page.get_attribute("meta[name=robots]", "content")
        heading, company, role, email, shown_status = await inner_texts(
            page, "h1", "#company", "#role", "#email", "#status"
        )
        form_before = await page.is_visible("#code-form")
        screenshot = await keep_screenshot(page, "invitation-page.png")

        await page.click("#accept")
        await page.wait_for_selector("#code-form", state="visible", timeout=10_000)
        code_sent = await page.inner_text("#code-sent")
        buttons_after_accept = await page.is_visible("#actions")
        expiry_after_accept = await page.is_visible("#expires")
        focused = await page.evaluate("document.activeElement.id")
        code = await latest_code(served, INVITEE)
        await page.fill("#code", code)
        await page.click("#verify")
        await page.wait_for_selector("#outcome-title", timeout=10_000)
        joined = await page.inner_text("#outcome-title")
        form_after = await page.is_visible("#code-form")
        status_after = await page.get_attribute("#status", "data-status")
        stored = await page.evaluate(
            "[localStorage.length, sessionStorage.length, document.cookie]"
        )
        page_text = await page.inner_text("body")

    # then the page showed the invitation, then the code form, then that they joined; the
    # browser refused nothing the page did, and the page kept no session token anywhere
    assert status == 200 and robots == "noindex"
    assert "script-src 'nonce-" in policy and "unsafe-inline" not in policy
    assert heading == "You're invited to join Blue Mug Coffee"
    assert (company, role, email) == ("Blue Mug Coffee", "finance", INVITEE)
    assert shown_status == "Pending"
    assert not form_before
    assert code_sent == f"We sent a sign-in code to {INVITEE}."
    assert not buttons_after_accept and not expiry_after_accept and focused == "code"
    assert joined == "You've joined Blue Mug Coffee"
    assert not form_after and status_after == "ACCEPTED"
    assert stored == [0, 0, ""]
    assert "eyJ" not in page_text
    assert problems == []
    members = await first_page(served, owner, "/team/members")
    roles = {m["email"]: m["roleId"] for m in members}
    assert roles == {owner.email: "role_owner", INVITEE: "role_finance"}
    invitations = await first_page(served, owner, "/team/invitations")
    assert [i["status"] for i in invitations] == ["ACCEPTED"]
    assert screenshot.stat().st_size > 10_000


async def test_a_wrong_code_shows_the_apis_message_and_the_right_one_still_joins(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given an invitee who accepted in the browser
    owner = await sign_up(served, company="Blue Mug Coffee")
    _, link = await _invite(served, owner)

    async with open_page(browser) as (page, problems):
        await page.goto(link)
        await page.click("#accept")
        await page.wait_for_selector("#code-form", state="visible", timeout=10_000)
        code = await latest_code(served, INVITEE)
        wrong = "111111" if code != "111111" else "222222"

        # when they type something that is not a code, then a wrong code, then the right one
        await page.fill("#code", "12ab")
        await page.click("#verify")
        not_a_code = await page.inner_text("#error")
        await page.fill("#code", wrong)
        await page.click("#verify")
        await page.wait_for_selector("#error:has-text('code')", timeout=10_000)
        wrong_code = await page.inner_text("#error")
        still_there = await page.is_visible("#code-form")
        await page.fill("#code", f"{code[:3]} {code[3:]}")
        await page.click("#verify")
        await page.wait_for_selector("#outcome-title", timeout=10_000)
        joined, error_after = await inner_texts(page, "#outcome-title", "#error")

    # then each mistake is told as text and the form stays, and the right code joins
    assert not_a_code == "Enter the 6-digit code from the email."
    assert wrong_code == "The code is wrong, expired or no longer usable"
    assert still_there
    assert joined == "You've joined Blue Mug Coffee" and error_after == ""
    assert not_failed_loads(problems) == []


async def test_the_invitee_declines_and_the_invitation_is_rejected(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given an open invitation
    owner = await sign_up(served)
    _, link = await _invite(served, owner)

    # when the invitee opens the link and declines
    async with open_page(browser) as (page, problems):
        await page.goto(link)
        await page.click("#decline")
        await page.wait_for_selector("#outcome-title", timeout=10_000)
        declined = await page.inner_text("#outcome-title")
        buttons = await page.is_visible("#actions")
        shown_status = await page.inner_text("#status")
        await page.reload()
        closed = await page.inner_text("#closed")
        buttons_on_reload = await page.locator("button").count()

    # then the page says so, the invitation is REJECTED, and nobody joined
    assert declined == "You declined the invitation"
    assert not buttons and shown_status == "Declined"
    assert closed == "This invitation was declined." and buttons_on_reload == 0
    assert problems == []
    invitations = await first_page(served, owner, "/team/invitations")
    assert [i["status"] for i in invitations] == ["REJECTED"]
    members = await first_page(served, owner, "/team/members")
    assert [m["email"] for m in members] == [owner.email]


async def test_accepting_an_invitation_withdrawn_meanwhile_shows_the_apis_answer(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given an invitee with the page open
    owner = await sign_up(served, company="Blue Mug Coffee")
    invitation, link = await _invite(served, owner)

    async with open_page(browser) as (page, problems):
        await page.goto(link)

        # when the owner withdraws it before the invitee clicks Accept
        revoked = await served.post(
            f"/api/v1/team/invitations/{invitation['id']}/revoke", headers=owner.headers
        )
        assert revoked.status == 200, await revoked.text()
        await page.click("#accept")
        await page.wait_for_selector("#error:has-text('open')", timeout=10_000)
        error = await page.inner_text("#error")
        form = await page.is_visible("#code-form")
        await page.reload()
        closed = await page.inner_text("#closed")
        buttons_on_reload = await page.locator("button").count()

    # then the API's message is shown as text, no code form opens, and a reload says why
    assert error == "The invitation is no longer open"
    assert not form
    assert closed == "Blue Mug Coffee withdrew this invitation." and buttons_on_reload == 0
    assert not_failed_loads(problems) == []


async def test_a_wrong_token_shows_the_not_valid_page_and_nothing_of_the_invitation(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given an invitation, and a link with a guessed token
    owner = await sign_up(served, company="Blue Mug Coffee")
    _, link = await _invite(served, owner)
    base = base_url(served)
    token = urlsplit(link).path.rsplit("/", 1)[1]

    # when someone opens the link with the wrong token, then the page says only that the link
    # is not valid, with a 404
    await assert_not_valid_link(
        browser,
        f"{base}/invite/guessed-{token[:8]}",
        "This invitation link is not valid",
        "#invitation, #company, #role, #email, #accept, #decline, form, script",
        ("Blue Mug Coffee", INVITEE, "finance", token),
    )


async def test_a_hostile_company_name_renders_as_text(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a company whose name is markup, inviting someone
    hostile = "<img src=x onerror=alert(1)>"
    owner = await sign_up(served, company=hostile)
    _, link = await _invite(served, owner)

    # when the invitee opens the link and declines
    async with open_page(browser) as (page, problems):
        dialogs = record_dialogs(page)
        await page.goto(link)
        company = await page.text_content("#company")
        title = await page.title()
        images = await page.locator("img").count()
        scripts = await page.locator("script").count()
        await page.click("#decline")
        await page.wait_for_selector("#outcome-title", timeout=10_000)
        outcome = await page.text_content("#outcome p")
        images_after = await page.locator("img").count()
        # Anything that did run would have run by now; give it a moment to show.
        await page.wait_for_timeout(200)

    # then the name is shown as the raw text it is, also where the script writes it; nothing
    # ran, and the browser refused nothing
    assert company == hostile
    assert title == f"Join {hostile}"
    assert outcome == f"You will not join {hostile}. You can close this page."
    assert images == images_after == 0 and scripts == 1
    assert dialogs == []
    assert problems == []
