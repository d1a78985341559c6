"""Steps the dashboard's browser tests take: opening a watched page, signing in through the
emailed code, reading the session token the tab keeps, photographing a view at two widths, the
axe-core accessibility check, and the views' forms filled in as a member would; and the API calls
that set the scene for them (policies, held payouts, invitations) or read what they left."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient
from playwright.async_api import Browser, Page, Route

from tests.helpers import Member, answered, created, latest_code, read_as
from tests.money import ACCOUNT
from tests.pages.browser import record_violations

AXE = Path(__file__).resolve().parent / "axe" / "axe.min.js"
# Widths every view is photographed at: a laptop and a phone.
WIDTHS = (1280, 390)
_SESSION_KEY = "mps.dashboard.session"


@dataclass
class Watched:
    """A page and what it did wrong so far: policy refusals, console errors, page errors."""

    page: Page
    problems: list[str] = field(default_factory=list)


async def open_page(browser: Browser, *, width: int = 1280) -> Watched:
    page = await browser.new_page(viewport={"width": width, "height": 900})
    return Watched(page, await record_violations(page))


def base_url(served: TestClient[Any, Any]) -> str:
    return str(served.make_url("")).rstrip("/")


async def sign_in(
    watched: Watched,
    served: TestClient[Any, Any],
    email: str,
    path: str = "/dashboard",
) -> None:
    """Open `path` signed out, sign in with the code mailed to `email` using the keyboard only,
    and wait until the dashboard shows the signed-in frame."""
    page = watched.page
    await page.goto(base_url(served) + path)
    # Each field has the focus on arrival; typed before the focus lands (a busy machine), the
    # first keys would be lost and another address asked for a code.
    await _focused(page, "email")
    await page.keyboard.type(email)
    await page.keyboard.press("Enter")
    await _focused(page, "code")
    code = await latest_code(served, email)
    await page.keyboard.type(code)
    await page.keyboard.press("Enter")
    await page.wait_for_selector("#sign-out")


async def _focused(page: Page, element_id: str) -> None:
    """Wait until the element with id `element_id` has the keyboard focus."""
    await page.wait_for_function(
        "id => document.activeElement !== null && document.activeElement.id === id",
        arg=element_id,
    )


async def session_token(page: Page) -> str | None:
    stored = await page.evaluate(f"sessionStorage.getItem({json.dumps(_SESSION_KEY)})")
    return None if stored is None else str(json.loads(stored)["token"])


async def first_page(
    served: TestClient[Any, Any], member: Member, path: str, **params: str
) -> list[dict[str, Any]]:
    """What the first page of the API's list at `path` (below /api/v1) holds, as `member`
    reads it."""
    listed = await read_as(served, member, f"/api/v1{path}", **params)
    found: list[dict[str, Any]] = listed["data"]
    return found


async def require_approval(
    served: TestClient[Any, Any], owner: Member, action: str, usd: str, approvals: int = 1
) -> None:
    """Through the API: `action` ("payout.create", "card.fund") above `usd` (minor units) waits
    for `approvals` approvals."""
    policy = {"enabled": True, "thresholds": {"USD": usd}, "requiredApprovals": approvals}
    path = f"/api/v1/team/approvals/policies/{action}"
    await answered(await served.put(path, json=policy, headers=owner.headers), 200)


async def held_payouts(
    served: TestClient[Any, Any], member: Member, amount: str, count: int = 1
) -> list[dict[str, Any]]:
    """Through the API: a bank account, then `count` payouts of `amount` (minor units, USD) to
    it, each held by the policy; the approval requests they wait on, oldest first."""
    account = await created(served, member, "/api/v1/merchant/bank-accounts", ACCOUNT)
    body = {"amountMinor": amount, "currency": "USD", "bankAccountId": account["id"]}
    return [
        (await created(served, member, "/api/v1/merchant/payouts", body, 202))["approvalRequest"]
        for _ in range(count)
    ]


async def row_ids(page: Page, rows: str) -> list[str]:
    """The data-id of each row `rows` selects, in the order the view shows them."""
    found: list[str] = await page.eval_on_selector_all(rows, "rows => rows.map(r => r.dataset.id)")
    return found


async def to_next_page(page: Page) -> None:
    """Follow a list's Next button, and wait until the way back to its first page shows."""
    await page.click("#next-page")
    await page.wait_for_selector("#first-page")


async def photograph(page: Page, directory: Path, name: str) -> list[Path]:
    """Full-page screenshots of the current view at each of WIDTHS; the viewport is left at
    the first width."""
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    taken = []
    for width in (*WIDTHS[1:], WIDTHS[0]):
        await page.set_viewport_size({"width": width, "height": 900})
        path = directory / f"{name}-{width}.png"
        await page.screenshot(path=str(path), full_page=True)
        taken.append(path)
    return taken


async def serious_accessibility_violations(page: Page) -> list[str]:
    """What axe-core finds of impact serious or critical on the current view. The library is
    evaluated by the browser's debugging protocol, which the page's policy does not govern;
    the page itself never loads it."""
    if not await page.evaluate("typeof window.axe !== 'undefined'"):
        source = await asyncio.to_thread(AXE.read_text, encoding="utf-8")
        await page.evaluate(source + "\n;undefined")
    results = await page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in results["violations"]
        if v["impact"] in ("serious", "critical")
    ]


async def signed_in(
    browser: Browser, served: TestClient[Any, Any], email: str, path: str = "/dashboard"
) -> Watched:
    """A new watched page, signed in as `email` on `path` (see `sign_in`)."""
    watched = await open_page(browser)
    await sign_in(watched, served, email, path)
    return watched


async def make_payment_link(page: Page, amount: str, description: str) -> tuple[str, str]:
    """Make a USD payment link on the new-payment view; its payUrl and the path of its page."""
    await page.fill("#amount", amount)
    await page.select_option("#currency", "USD")
    await page.fill("#description", description)
    await page.click("#create-payment")
    await page.wait_for_selector("#pay-url")
    pay_url = await page.input_value("#pay-url")
    detail = await page.get_attribute("#created-payment", "href")
    assert detail is not None
    return pay_url, detail


async def pay_at_checkout(page: Page, pay_url: str) -> None:
    """Pay `pay_url` with the test card on the hosted checkout, as a shopper in this tab."""
    await page.goto(pay_url)
    await page.fill("#number", "4242 4242 4242 4242")
    await page.fill("#expMonth", "12")
    await page.fill("#expYear", "2099")
    await page.fill("#cvc", "123")
    await page.click("#submit")
    await page.wait_for_selector("#paid")


async def refund_in_view(page: Page, amount: str, reason: str) -> None:
    """Refund `amount` (major units) of the payment open in its detail view, for `reason`."""
    await page.fill("#refund-amount", amount)
    await page.fill("#refund-reason", reason)
    await page.click("#refund-submit")
    await page.wait_for_selector("#refund-result")


async def hold_payouts_above(page: Page, usd: str) -> None:
    """On Approvals: payouts above `usd` (major units) wait for one approval."""
    await page.click("#policy-edit-payout-create")
    await page.check("#policy-enabled-payout-create")
    await page.fill("#threshold-payout-create-USD", usd)
    await page.click("#policy-save-payout-create")
    await page.wait_for_selector("#policy-form-payout-create", state="detached")


async def request_held_payout(page: Page, amount: str) -> None:
    """Add a bank account in Balance, then ask for a payout of `amount` in Payouts, and see it
    held for approval."""
    await page.click("nav a[href='/dashboard/balance']")
    await add_bank_account(page, "000123456789", "110000000", "US")
    await page.click("nav a[href='/dashboard/payouts']")
    await page.fill("#payout-amount", amount)
    await page.click("#request-payout-submit")
    await page.wait_for_selector("#payout-held")


async def invite(page: Page, email: str, role_id: str) -> None:
    """Invite `email` with the role from Team."""
    await page.click("nav a[href='/dashboard/team']")
    await page.fill("#invite-email", email)
    await page.select_option("#invite-role", role_id)
    await page.click("#invite-submit")
    await page.wait_for_selector("#invite-sent")


async def mailed_link(served: TestClient[Any, Any], email: str) -> str:
    """The link in the mail to `email` that the development mailbox lists first."""
    mailbox = await served.get("/api/v1/dev/mailbox", params={"to": email})
    link: str = (await mailbox.json())["data"][0]["link"]
    return link


async def invited(
    served: TestClient[Any, Any], owner: Member, email: str, role_id: str = "role_finance"
) -> tuple[dict[str, Any], str]:
    """An invitation of `email` with the role, made through the API, and the link mailed to
    them."""
    body = {"email": email, "roleId": role_id}
    invitation: dict[str, Any] = await created(served, owner, "/api/v1/team/invitations", body)
    return invitation, await mailed_link(served, email)


async def accept_invitation(browser: Browser, served: TestClient[Any, Any], email: str) -> Watched:
    """The invitee opens the link mailed to `email` in a page of their own, accepts, and types
    the code mailed to them; their page."""
    invitee = await open_page(browser)
    await invitee.page.goto(await mailed_link(served, email))
    await invitee.page.click("#accept")
    await invitee.page.wait_for_selector("#code-form", state="visible")
    await invitee.page.fill("#code", await latest_code(served, email))
    await invitee.page.click("#verify")
    await invitee.page.wait_for_selector("#outcome-title, #sign-out")
    return invitee


async def admin_to_approve(
    browser: Browser, served: TestClient[Any, Any], page: Page, email: str, payout: str
) -> tuple[Watched, Watched]:
    """Invite `email` as admin from `page`; they accept in a page of their own, sign in to
    Approvals in another, and find the held payout of `payout` USD in their inbox. Their
    invitation page and their dashboard page."""
    await invite(page, email, "role_admin")
    invitee = await accept_invitation(browser, served, email)
    teammate = await signed_in(browser, served, email, "/dashboard/approvals")
    await teammate.page.wait_for_selector("#inbox li.inbox-item")
    assert f"Pay out {payout} USD" in await teammate.page.inner_text("#inbox")
    return invitee, teammate


async def assert_payout_made(page: Page, amount: str) -> None:
    """Payouts lists the payout of `amount` USD made (pending with the bank)."""
    await page.click("nav a[href='/dashboard/payouts']")
    await page.wait_for_selector("#payouts-table tr[data-status=PENDING]")
    assert f"{amount} USD" in await page.inner_text("#payouts-table")


async def approve_first_in_inbox(page: Page, comment: str) -> None:
    """Approve, with `comment`, the first request waiting in the Approvals inbox, and see the
    inbox empty."""
    request_id = await page.get_attribute("#inbox li.inbox-item", "data-id")
    await page.fill(f"#comment-{request_id}", comment)
    await page.click(f"#approve-{request_id}")
    await page.wait_for_selector("#inbox .empty")


async def download(page: Page, button: str, saved: Path) -> str:
    """Click `button`, save what it downloads as `saved`, and return its text."""
    async with page.expect_download() as downloading:
        await page.click(button)
    got = await downloading.value
    await got.save_as(saved)
    return await asyncio.to_thread(saved.read_text, encoding="utf-8")


async def add_bank_account(
    page: Page, number: str, bank_code: str, country: str, currency: str | None = None
) -> None:
    """Add Blue Mug Coffee Ltd's bank account through the form in Balance."""
    await page.fill("#account-holder", "Blue Mug Coffee Ltd")
    await page.fill("#account-number", number)
    await page.fill("#bank-code", bank_code)
    if currency is not None:
        await page.select_option("#account-currency", currency)
    await page.fill("#account-country", country)
    await page.click("#add-account-submit")
    await page.wait_for_selector("#account-added")


async def open_not_found(page: Page, served: TestClient[Any, Any], path: str) -> None:
    """Open `path` straight from the address bar, and wait for the Not found view that a view
    the member may not use shows instead."""
    await page.goto(base_url(served) + path)
    await page.wait_for_selector("h1:has-text('Not found')")


async def assert_no_section(
    page: Page, served: TestClient[Any, Any], name: str, path: str, parts: str | None = None
) -> None:
    """The navigation offers no section `name`, and its `path` typed in the address bar shows
    Not found, with nothing the selector `parts` finds."""
    assert await page.locator(f"nav a:has-text('{name}')").count() == 0
    await open_not_found(page, served, path)
    if parts is not None:
        assert await page.locator(parts).count() == 0


async def answer_busy(route: Route) -> None:
    """Answer the routed request as a busy service does: 503, to be tried again in a second."""
    await route.fulfill(
        status=503,
        headers={"Retry-After": "1", "Content-Type": "application/json"},
        body='{"ok": false, "statusCode": 503, "message": "Busy", "code": "unavailable"}',
    )


async def me_with(served: TestClient[Any, Any], token: str | None) -> ClientResponse:
    """GET /auth/me with the session `token`: whether the service still takes it."""
    return await served.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
