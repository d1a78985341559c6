"""What waits for a member's vote, as the dashboard shows it (issue 30): the approvals inbox and
Home's "Needs you" both read the server's `awaitingMyVote` filter, so the requester, a member
who voted and a member without the action's scope are not asked, and the inbox pages by cursor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser

from tests.dashboard.driving import held_payouts, photograph, require_approval, row_ids, signed_in
from tests.helpers import Member, add_member, post_as, sign_up
from tests.money import paid_payment


async def _held_payouts(
    served: TestClient[Any, Any], owner: Member, count: int, required: int = 1
) -> list[str]:
    """`count` payouts of 20.00 USD held for approval, oldest first: their requests' ids."""
    await require_approval(served, owner, "payout.create", "1000", required)
    return [request["id"] for request in await held_payouts(served, owner, "2000", count)]


async def test_home_asks_only_a_member_who_can_still_vote_and_forgets_once_they_have(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a payout the owner asked for, held for two votes
    owner = await sign_up(served, company="Blue Mug Coffee")
    await paid_payment(served, owner, "10000")
    [request_id] = await _held_payouts(served, owner, 1, required=2)
    admin = await add_member(served, owner, "admin@example.com", "role_admin")
    developer = await add_member(served, owner, "dev@example.com", "role_developer")

    # when an admin opens Home, the request is there
    watched = await signed_in(browser, served, admin.email)
    page = watched.page
    await page.wait_for_selector("#needs-me li[data-kind=approval]")
    assert request_id in await page.inner_text("#needs-me li[data-kind=approval]")

    # and once they voted (the request still waits for a second member) it is gone for them
    vote = await post_as(served, admin, f"/api/v1/team/approvals/requests/{request_id}/approve", {})
    assert vote.status == 200, await vote.text()
    await page.reload()
    await page.wait_for_selector("#needs-me li[data-kind=kyc], #needs-me .empty")
    assert await page.locator("#needs-me li[data-kind=approval]").count() == 0

    # the requester and a member without payouts:write are never asked
    for who in (owner, developer):
        theirs = await signed_in(browser, served, who.email)
        await theirs.page.wait_for_selector("#needs-me li, #needs-me .empty")
        assert await theirs.page.locator("#needs-me li[data-kind=approval]").count() == 0
        assert theirs.problems == []
    assert watched.problems == []


async def test_the_inbox_pages_what_waits_for_my_vote_by_cursor(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    # given more held payouts than one page of the inbox holds
    owner = await sign_up(served, company="Blue Mug Coffee")
    await paid_payment(served, owner, "100000")
    made = await _held_payouts(served, owner, 22)
    admin = await add_member(served, owner, "admin@example.com", "role_admin")

    # when the admin opens the inbox, it holds the newest twenty
    watched = await signed_in(browser, served, admin.email, "/dashboard/approvals")
    page = watched.page
    await page.wait_for_selector("#inbox li.inbox-item")
    first = await row_ids(page, "#inbox li.inbox-item")
    assert first == list(reversed(made))[:20]
    await photograph(page, tmp_path / "screens", "approvals-inbox")

    # and the next page holds the two oldest, its cursor kept in the URL
    await page.click("#inbox-next-page")
    await page.wait_for_url("**/dashboard/approvals?inboxCursor=*")
    await page.wait_for_selector(f"#inbox li.inbox-item[data-id='{made[0]}']")
    rest = await row_ids(page, "#inbox li.inbox-item")
    assert rest == [made[1], made[0]]
    assert await page.locator("#inbox-next-page").count() == 0
    assert watched.problems == []
