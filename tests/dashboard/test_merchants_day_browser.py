"""A merchant's day in the dashboard, end to end in one real browser (issue 30): sign in, make a
payment link, have it paid on the hosted checkout, see it PAID on Home and in Payments, refund
part of it, request a payout the approval policy holds, invite a teammate who accepts, signs in
and approves it from the inbox, rotate a webhook secret, and export the audit trail, which holds
those actions in the order they were taken. Only the shopper's card entry and the mailbox are
outside the dashboard."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from playwright.async_api import Browser

from tests.dashboard.driving import (
    admin_to_approve,
    approve_first_in_inbox,
    assert_payout_made,
    base_url,
    download,
    hold_payouts_above,
    make_payment_link,
    pay_at_checkout,
    photograph,
    refund_in_view,
    request_held_payout,
    signed_in,
)
from tests.helpers import eventually, sign_up
from tests.receiver import Receiver


# The one test that crosses every section runs on the production store too.
@pytest.mark.both_backends
async def test_a_merchants_whole_day_runs_through_the_dashboard_and_the_trail_tells_it(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    owner = await sign_up(served, company="Blue Mug Coffee")
    screens = tmp_path / "screens"
    watched = await signed_in(browser, served, owner.email, "/dashboard/payments/new")
    page = watched.page

    # a 120.00 USD payment link is made
    pay_url, detail = await make_payment_link(page, "120.00", "Catering for the launch")
    assert pay_url.startswith(base_url(served) + "/pay/PAY-")
    payment_id = detail.rsplit("/", 1)[-1]

    # and the shopper pays it on the hosted checkout
    await pay_at_checkout(page, pay_url)

    # Home lists it paid, and so does Payments
    await page.goto(base_url(served) + "/dashboard")
    recent = page.locator(f"#recent tr[data-id='{payment_id}']")
    await recent.wait_for()
    assert "120.00 USD" in await recent.inner_text()
    assert "Pending" not in await recent.inner_text()
    await photograph(page, screens, "day-home")
    await page.click("nav a[href='/dashboard/payments']")
    listed = page.locator(f"tbody tr[data-id='{payment_id}']")
    await listed.wait_for()
    assert "Paid" in await listed.inner_text()

    # part of it is refunded from its detail
    await page.click(f"tbody tr[data-id='{payment_id}'] a")
    await page.wait_for_selector("h1 .status-paid")
    await refund_in_view(page, "20.00", "One tray short")
    await page.wait_for_selector("#refunds tbody tr")
    assert "20.00 USD" in await page.inner_text("#refunds")

    async def refunded() -> Any:
        got = await served.get(
            "/api/v1/merchant/refunds", params={"paymentId": payment_id}, headers=owner.headers
        )
        data = (await got.json())["data"]
        return data if data and data[0]["amountMinor"] == "2000" else None

    await eventually(refunded, what="the refund of 20.00")

    # payouts above 50.00 USD are to wait for one approval
    await page.click("nav a[href='/dashboard/approvals']")
    await hold_payouts_above(page, "50.00")

    # a bank account is added and a payout of 80.00 requested, which the policy holds
    await request_held_payout(page, "80.00")

    # a teammate is invited as admin, accepts with the mailed code, signs in to the dashboard
    # and approves the payout from the inbox
    invitee, teammate = await admin_to_approve(browser, served, page, "sam@example.com", "80.00")
    their = teammate.page
    await approve_first_in_inbox(their, "Matches the catering invoice")
    await photograph(their, screens, "day-approved")

    # the owner sees the payout made
    await assert_payout_made(page, "80.00")

    async with Receiver() as hooks:
        # a webhook endpoint is added and its signing secret rotated
        await page.click("nav a[href='/dashboard/developers']")
        await page.click("nav.tabs a:has-text('Webhooks')")
        await page.fill("#endpoint-url", hooks.url())
        await page.click("#endpoint-submit")
        await page.wait_for_selector("#new-secret")
        first = await page.input_value("#new-secret")
        await page.click("#endpoints-table tbody tr a")
        await page.click("#rotate-secret")
        await page.click("#rotate-secret-yes")
        await page.wait_for_selector("#rotated-secret")
        second = await page.input_value("#rotated-secret")
        assert second.startswith("whsec_") and second != first
        await page.click("#rotated-secret-done")
        await page.wait_for_selector("#rotated-secret", state="detached")

    # the audit trail, exported, holds the day's actions in the order they were taken
    await page.click("nav a[href='/dashboard/audit']")
    text = await download(page, "#export-csv", tmp_path / "day.csv")
    actions = [r["action"] for r in csv.DictReader(io.StringIO(text))]
    day = [
        "approval_policy.updated",
        "bank_account.created",
        "approval.requested",
        "invitation.created",
        "invitation.accepted",
        "approval.approved",
        "payout.created",
        "webhook_endpoint.created",
        "webhook_endpoint.secret_rotated",
    ]
    assert [a for a in actions if a in day] == day, actions
    await photograph(page, screens, "day-audit")
    assert watched.problems == [] and teammate.problems == []
    # The browser's own request for /favicon.ico, which the invitation page never names, is a
    # failed load it logs; anything else the page did would be here.
    assert [p for p in invitee.problems if "Failed to load resource" not in p] == []
