"""Team, approvals and the audit trail in the dashboard, in a real browser (issue 30): a member's
role changed and a member removed, invitations sent and revoked, the approvals inbox (approve or
reject with a comment, the votes shown), policies edited per currency, the audit trail filtered,
its chain verified and exported, what roles without the scopes do not get, and the slice of a
merchant's day that runs through these sections."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser, Page

from tests.dashboard.driving import (
    admin_to_approve,
    approve_first_in_inbox,
    assert_payout_made,
    base_url,
    download,
    first_page,
    held_payouts,
    hold_payouts_above,
    open_not_found,
    open_page,
    photograph,
    request_held_payout,
    require_approval,
    row_ids,
    sign_in,
    signed_in,
)
from tests.helpers import Member, add_member, post_as, read_as, sign_up
from tests.money import paid_payment


async def test_an_owner_changes_a_members_role_and_removes_a_member(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    # given an owner, a viewer and a developer
    owner = await sign_up(served, company="Blue Mug Coffee")
    viewer = await add_member(served, owner, "viewer@example.com", "role_viewer")
    developer = await add_member(served, owner, "dev@example.com", "role_developer")
    watched = await signed_in(browser, served, owner.email, "/dashboard/team")
    page = watched.page
    await page.wait_for_selector(f"#members-table tr[data-id='{viewer.user_id}']")

    # the owner's own row offers no change (ownership moves only by a transfer)
    assert await page.locator(f"#role-{owner.user_id}").count() == 0
    assert "owner" in await page.inner_text(f"#members-table tr[data-id='{owner.user_id}']")
    # and no role offered is the owner's
    offered = await page.eval_on_selector_all(
        f"#role-{viewer.user_id} option", "options => options.map(o => o.value)"
    )
    assert "role_owner" not in offered and "role_finance" in offered
    await photograph(page, tmp_path / "screens", "team")

    # when the viewer is made finance
    await page.select_option(f"#role-{viewer.user_id}", "role_finance")
    await page.click(f"#save-role-{viewer.user_id}")
    await page.wait_for_selector(f"#role-saved-{viewer.user_id}")

    # then the API agrees
    members = await first_page(served, owner, "/team/members")
    assert {m["email"]: m["roleId"] for m in members}[viewer.email] == "role_finance"

    # when the developer is removed, after the question
    await page.click(f"#remove-{developer.user_id}")
    await page.click(f"#remove-{developer.user_id}-yes")
    await page.wait_for_selector(
        f"#members-table tr[data-id='{developer.user_id}']", state="detached"
    )

    # then they are no longer a member, and their session no longer works
    members = await first_page(served, owner, "/team/members")
    assert sorted(m["email"] for m in members) == sorted([owner.email, viewer.email])
    refused = await served.get("/api/v1/auth/me", headers=developer.headers)
    assert refused.status == 401
    assert watched.problems == []


async def test_the_owner_alone_hands_ownership_on_and_becomes_an_admin(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served)
    admin = await add_member(served, owner, "admin@example.com", "role_admin")

    # an admin, who has team:write, is not offered the transfer
    theirs = await signed_in(browser, served, admin.email, "/dashboard/team")
    await theirs.page.wait_for_selector(f"#members-table tr[data-id='{owner.user_id}']")
    assert await theirs.page.locator("[id^=transfer-]").count() == 0

    # when the owner makes the admin the owner, after the question
    watched = await signed_in(browser, served, owner.email, "/dashboard/team")
    page = watched.page
    await page.click(f"#transfer-{admin.user_id}")
    await page.click(f"#transfer-{admin.user_id}-yes")

    # then the roles are swapped, in the API and in the view, which offers no transfer any more
    await page.wait_for_selector(f"#members-table tr[data-id='{admin.user_id}'] .role-name")
    assert (
        await page.inner_text(f"#members-table tr[data-id='{admin.user_id}'] .role-name") == "owner"
    )
    assert (
        await page.inner_text(f"#members-table tr[data-id='{owner.user_id}'] .role-name") == "admin"
    )
    assert await page.locator("[id^=transfer-]").count() == 0
    members = await first_page(served, owner, "/team/members")
    assert {m["email"]: m["roleId"] for m in members} == {
        owner.email: "role_admin",
        admin.email: "role_owner",
    }
    assert watched.problems == [] and theirs.problems == []


async def test_an_invitation_is_sent_with_a_role_listed_and_revoked(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served)
    watched = await signed_in(browser, served, owner.email, "/dashboard/team")
    page = watched.page
    await page.wait_for_selector("#invite-role option[value=role_admin]", state="attached")

    # when the owner invites someone as admin
    await page.fill("#invite-email", "Ada@Example.com")
    await page.select_option("#invite-role", "role_admin")
    await page.click("#invite-submit")
    await page.wait_for_selector("#invite-sent")

    # then the invitation is listed PENDING, with its role, and the email went out
    invitations = await first_page(served, owner, "/team/invitations")
    assert [(i["email"], i["roleId"], i["status"]) for i in invitations] == [
        ("ada@example.com", "role_admin", "PENDING")
    ]
    row = f"#invitations-table tr[data-id='{invitations[0]['id']}']"
    await page.wait_for_selector(row)
    assert "admin" in await page.inner_text(row)
    mailbox = await served.get("/api/v1/dev/mailbox", params={"to": "ada@example.com"})
    assert "/invite/" in (await mailbox.json())["data"][0]["link"]

    # when it is revoked
    await page.click(f"#revoke-{invitations[0]['id']}")
    await page.click(f"#revoke-{invitations[0]['id']}-yes")

    # then it shows REVOKED, with nothing left to revoke, and the API agrees
    await page.wait_for_selector(f"{row} .status-revoked")
    assert await page.locator(f"#revoke-{invitations[0]['id']}").count() == 0
    invitations = await first_page(served, owner, "/team/invitations")
    assert invitations[0]["status"] == "REVOKED"

    # and the status filter lives in the URL
    await page.select_option("#filter-invitations", "PENDING")
    await page.wait_for_url("**/dashboard/team?invitations=PENDING")
    await page.wait_for_selector(row, state="detached")
    assert watched.problems == []


async def test_the_inbox_holds_what_waits_for_my_vote_and_a_vote_with_a_comment_decides_it(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    # given two payouts an admin asked for, held above 10.00 USD for one approval
    owner = await sign_up(served)
    await paid_payment(served, owner, "20000")
    await require_approval(served, owner, "payout.create", "1000")
    admin = await add_member(served, owner, "admin@example.com", "role_admin")
    [first] = await held_payouts(served, admin, "5000")
    [second] = await held_payouts(served, admin, "3000")

    # when the owner opens Approvals
    watched = await signed_in(browser, served, owner.email, "/dashboard/approvals")
    page = watched.page
    await page.wait_for_selector(f"#inbox li[data-id='{first['id']}']")

    # then both wait for them, each saying what it would do and who asked
    item = await page.inner_text(f"#inbox li[data-id='{first['id']}']")
    assert "Pay out 50.00 USD" in item and admin.email in item and "0 of 1 approvals" in item
    assert await page.locator("#inbox li.inbox-item").count() == 2
    await photograph(page, tmp_path / "screens", "approvals")

    # when the first is approved with a comment and the second rejected
    await page.fill(f"#comment-{first['id']}", "Rent is due")
    await page.click(f"#approve-{first['id']}")
    await page.wait_for_selector(f"#inbox li[data-id='{first['id']}']", state="detached")
    await page.fill(f"#comment-{second['id']}", "Not this week")
    await page.click(f"#reject-{second['id']}")
    await page.wait_for_selector("#inbox .empty")

    # then the first ran (a payout of 50.00) and the second did not
    done = await read_as(served, owner, f"/api/v1/team/approvals/requests/{first['id']}")
    assert done["status"] == "EXECUTED" and done["result"]["amountMinor"] == "5000"
    assert [(v["userId"], v["comment"]) for v in done["votes"]] == [(owner.user_id, "Rent is due")]
    refused = await read_as(served, owner, f"/api/v1/team/approvals/requests/{second['id']}")
    assert refused["status"] == "REJECTED"
    payouts = await first_page(served, owner, "/merchant/payouts")
    assert [p["amountMinor"] for p in payouts] == ["5000"]

    # and every request shows its votes and comments in the list
    await page.wait_for_selector(
        f"#requests-table tr[data-id='{first['id']}'][data-status=EXECUTED]"
    )
    votes = await page.inner_text(f"#requests-table tr[data-id='{first['id']}']")
    assert "Approved by you" in votes and "Rent is due" in votes
    await page.select_option("#filter-status", "REJECTED")
    await page.wait_for_url("**/dashboard/approvals?status=REJECTED")
    await page.wait_for_selector(f"#requests-table tr[data-id='{first['id']}']", state="detached")
    assert "Not this week" in await page.inner_text(f"#requests-table tr[data-id='{second['id']}']")
    assert watched.problems == []


async def test_a_policy_threshold_is_edited_per_currency_and_the_api_keeps_it(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served)
    watched = await signed_in(browser, served, owner.email, "/dashboard/approvals")
    page = watched.page
    await page.wait_for_selector("#policy-payout-create")
    assert "Off" in await page.inner_text("#policy-payout-create")

    # when approval is switched on for payouts above 250.00 USD and 30,000 JPY, by two people
    await page.click("#policy-edit-payout-create")
    await page.check("#policy-enabled-payout-create")
    await page.fill("#policy-required-payout-create", "2")
    await page.fill("#threshold-payout-create-USD", "250.00")
    await page.fill("#threshold-payout-create-JPY", "30000")
    await page.click("#policy-save-payout-create")
    await page.wait_for_selector("#policy-form-payout-create", state="detached")

    # then the API holds it in minor units, and the view says so in each currency's own terms
    policies = {p["action"]: p for p in await first_page(served, owner, "/team/approvals/policies")}
    assert policies["payout.create"]["enabled"] is True
    assert policies["payout.create"]["thresholds"] == {"JPY": "30000", "USD": "25000"}
    assert policies["payout.create"]["requiredApprovals"] == 2
    await page.wait_for_selector("#policy-payout-create .policy-summary:has-text('250.00 USD')")
    summary = await page.inner_text("#policy-payout-create .policy-summary")
    assert "250.00 USD" in summary and "30,000 JPY" in summary and "2 approvals" in summary

    # when a threshold that is no amount is typed, the view says so and saves nothing
    await page.click("#policy-edit-payout-create")
    await page.fill("#threshold-payout-create-USD", "a lot")
    await page.click("#policy-save-payout-create")
    await page.wait_for_selector("#policy-form-payout-create .error")
    policies = {p["action"]: p for p in await first_page(served, owner, "/team/approvals/policies")}
    assert policies["payout.create"]["thresholds"]["USD"] == "25000"
    assert watched.problems == []


async def test_the_audit_trail_is_filtered_verified_and_exported_as_csv_and_jsonl(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    # given a trail with a policy change and an invitation in it
    owner = await sign_up(served)
    await require_approval(served, owner, "payout.create", "1000")
    invited = await post_as(
        served,
        owner,
        "/api/v1/team/invitations",
        {"email": "b@example.com", "roleId": "role_viewer"},
    )
    assert invited.status == 201
    watched = await signed_in(browser, served, owner.email, "/dashboard/audit")
    page = watched.page
    await page.wait_for_selector("#audit-table tr[data-action='invitation.created']")

    # when it is filtered by an action
    await page.fill("#filter-action", "approval_policy.updated")
    await page.click("#apply-filters")
    await page.wait_for_url("**/dashboard/audit?action=approval_policy.updated")
    await page.wait_for_selector(
        "#audit-table tr[data-action='invitation.created']", state="detached"
    )

    # then only those entries are listed, as the API lists them
    shown = await row_ids(page, "#audit-table tbody tr")
    listed = await first_page(served, owner, "/team/audit", action="approval_policy.updated")
    assert shown == [e["id"] for e in listed] and len(shown) == 1
    assert "you" in await page.inner_text(f"#audit-table tr[data-id='{shown[0]}']")

    # when the chain is checked
    await page.click("#verify-chain")
    await page.wait_for_selector("#chain-verdict[data-valid=true]")
    verdict = await read_as(served, owner, "/api/v1/team/audit/verify")
    assert f"{verdict['checked']} entries checked" in await page.inner_text("#chain-verdict")
    await photograph(page, tmp_path / "screens", "audit")

    # when the trail is exported both ways
    rows = list(
        csv.DictReader(io.StringIO(await download(page, "#export-csv", tmp_path / "a.csv")))
    )
    lines = (await download(page, "#export-jsonl", tmp_path / "a.jsonl")).splitlines()

    # then each file holds the whole trail in chain order, whatever the filter shows
    entries = [json.loads(line) for line in lines]
    everything = await first_page(served, owner, "/team/audit", limit="100")
    assert [e["seq"] for e in entries] == sorted(e["seq"] for e in everything)
    assert {e["id"] for e in entries} == {e["id"] for e in everything}
    assert [r["id"] for r in rows] == [e["id"] for e in entries]
    assert {"approval_policy.updated", "invitation.created"} <= {r["action"] for r in rows}
    await page.wait_for_selector("#export-done")
    assert watched.problems == []


async def test_roles_without_the_scopes_see_no_action_they_lack(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a payout an owner asked for, held for approval
    owner = await sign_up(served)
    await paid_payment(served, owner, "20000")
    await require_approval(served, owner, "payout.create", "1000")
    [request] = await held_payouts(served, owner, "5000")
    viewer = await add_member(served, owner, "viewer@example.com", "role_viewer")
    developer = await add_member(served, owner, "dev@example.com", "role_developer")

    # a viewer sees the team but cannot change it, and has no audit trail at all
    watched = await signed_in(browser, served, viewer.email, "/dashboard/team")
    page = watched.page
    await page.wait_for_selector(f"#members-table tr[data-id='{developer.user_id}']")
    await page.wait_for_selector("#roles-list")
    for absent in ("#invite", f"#role-{developer.user_id}", f"#remove-{developer.user_id}"):
        assert await page.locator(absent).count() == 0, absent
    assert await page.locator("nav a[href='/dashboard/audit']").count() == 0
    await open_not_found(page, served, "/dashboard/audit")
    assert await page.locator("#export-csv").count() == 0

    # a developer (no payouts:write) sees the request but is not asked to vote, nor to edit policies
    other = await signed_in(browser, served, developer.email, "/dashboard/approvals")
    await other.page.wait_for_selector(f"#requests-table tr[data-id='{request['id']}']")
    await other.page.wait_for_selector("#inbox .empty")
    await other.page.wait_for_selector("#policy-payout-create")
    assert await other.page.locator(f"#approve-{request['id']}").count() == 0
    assert await other.page.locator("#policy-edit-payout-create").count() == 0
    assert await other.page.locator(f"#withdraw-{request['id']}").count() == 0

    # and the requester withdraws their own request instead of voting on it
    mine = await signed_in(browser, served, owner.email, "/dashboard/approvals")
    await mine.page.wait_for_selector(f"#withdraw-{request['id']}")
    await mine.page.wait_for_selector("#inbox .empty")
    await mine.page.click(f"#withdraw-{request['id']}")
    await mine.page.click(f"#withdraw-{request['id']}-yes")
    await mine.page.wait_for_selector(
        f"#requests-table tr[data-id='{request['id']}'][data-status=CANCELLED]"
    )
    assert watched.problems == [] and other.problems == [] and mine.problems == []


async def test_a_merchants_day_payout_held_teammate_invited_accepts_approves_and_trail_exported(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    """The part of the merchant's day (issue 30) that runs through Balance, Payouts and Team."""
    owner = await sign_up(served, company="Blue Mug Coffee")
    await paid_payment(served, owner, "50000")
    screens = tmp_path / "screens"
    watched = await signed_in(browser, served, owner.email, "/dashboard/approvals")
    page = watched.page

    # the owner asks for approval of payouts above 100.00 USD
    await hold_payouts_above(page, "100")

    # adds a bank account and requests a payout of 300.00, which is held for a vote
    await request_held_payout(page, "300.00")
    await photograph(page, screens, "day-payout-held")

    # invites a teammate as admin, who accepts with the mailed code, signs in to the dashboard,
    # finds the payout in the inbox, asked for by the owner, and approves it
    invitee, teammate = await admin_to_approve(browser, served, page, "sam@example.com", "300.00")
    their = teammate.page
    assert owner.email in await their.inner_text("#inbox")
    await approve_first_in_inbox(their, "Checked against the invoice")
    await photograph(their, screens, "day-approved")

    # the owner sees the payout made
    await assert_payout_made(page, "300.00")

    # and exports the audit trail, which tells the whole story
    await page.click("nav a[href='/dashboard/audit']")
    text = await download(page, "#export-csv", tmp_path / "day.csv")
    actions = [r["action"] for r in csv.DictReader(io.StringIO(text))]
    for expected in (
        "approval_policy.updated",
        "bank_account.created",
        "approval.requested",
        "invitation.created",
        "invitation.accepted",
        "payout.created",
    ):
        assert expected in actions, (expected, actions)
    assert actions.index("approval.requested") < actions.index("payout.created")
    assert watched.problems == [] and teammate.problems == []
    # The browser's own request for /favicon.ico, which the invitation page never names, is a
    # failed load it logs; anything else the page did would be here.
    assert [p for p in invitee.problems if "Failed to load resource" not in p] == []


async def _role_named(served: TestClient[Any, Any], owner: Member, name: str) -> dict[str, Any]:
    roles = await first_page(served, owner, "/team/roles")
    found: list[dict[str, Any]] = [r for r in roles if r["name"] == name]
    assert len(found) == 1, roles
    return found[0]


async def _sections(page: Page) -> list[str]:
    hrefs: list[str] = await page.eval_on_selector_all(
        "#nav a", "links => links.map(a => a.getAttribute('href'))"
    )
    return hrefs


async def test_a_custom_role_is_made_given_and_limits_its_holder_and_in_use_cannot_be_deleted(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    # given an owner and a teammate who is a viewer
    owner = await sign_up(served, company="Blue Mug Coffee")
    clerk = await add_member(served, owner, "clerk@example.com", "role_viewer")
    screens = tmp_path / "screens"
    watched = await signed_in(browser, served, owner.email, "/dashboard/team")
    page = watched.page
    await page.wait_for_selector("#roles-list li[data-id='role_admin']")

    # built-in roles are read-only
    assert await page.locator("#roles-list li[data-builtin=true] button").count() == 0

    # when the owner makes a role that reads payments and customers only
    await page.click("#role-new")
    await page.wait_for_selector("#role-form-new #role-scope-new-payments-read")
    await photograph(page, screens, "team-role-new")
    await page.fill("#role-name-new", "Support desk")
    await page.check("#role-scope-new-payments-read")
    await page.check("#role-scope-new-customers-read")
    await page.click("#role-save-new")
    await page.wait_for_selector("#role-notice")

    # then the API holds it with exactly those scopes
    role = await _role_named(served, owner, "Support desk")
    assert role["builtin"] is False
    assert role["scopes"] == ["customers:read", "payments:read"]
    await page.wait_for_selector(f"#roles-list li[data-id='{role['id']}']")

    # when the teammate is given it
    await page.select_option(f"#role-{clerk.user_id}", role["id"])
    await page.click(f"#save-role-{clerk.user_id}")
    await page.wait_for_selector(f"#role-saved-{clerk.user_id}")
    await page.wait_for_selector(
        f"#roles-list li[data-id='{role['id']}'] .muted:has-text('1 member')"
    )

    # then, signed in, they see only the sections those scopes allow
    theirs = await signed_in(browser, served, clerk.email)
    await theirs.page.wait_for_selector("#nav a[href='/dashboard/customers']")
    assert await _sections(theirs.page) == [
        "/dashboard",
        "/dashboard/payments",
        "/dashboard/customers",
    ]
    await open_not_found(theirs.page, served, "/dashboard/team")

    # when the owner renames the role and adds invoices:read to it
    await page.click(f"#role-edit-{role['id']}")
    await page.fill(f"#role-name-{role['id']}", "Support and billing")
    await page.check(f"#role-scope-{role['id']}-invoices-read")
    await photograph(page, screens, "team-role-edit")
    await page.click(f"#role-save-{role['id']}")
    await page.wait_for_selector(
        f"#roles-list li[data-id='{role['id']}'] .role-title:has-text('Support and billing')"
    )

    # then the API and the holder's next page load both follow
    edited = await _role_named(served, owner, "Support and billing")
    assert edited["scopes"] == ["customers:read", "invoices:read", "payments:read"]
    await theirs.page.goto(base_url(served) + "/dashboard")
    await theirs.page.wait_for_selector("#nav a[href='/dashboard/invoices']")
    assert await _sections(theirs.page) == [
        "/dashboard",
        "/dashboard/payments",
        "/dashboard/customers",
        "/dashboard/invoices",
    ]

    # when the owner deletes the role while the teammate holds it, it is refused in plain words
    # (on a page of its own: the browser logs the refused request, and only that, there)
    refusing = await open_page(browser)
    other = refusing.page
    await sign_in(refusing, served, owner.email, "/dashboard/team")
    row = f"#roles-list li[data-id='{role['id']}']"
    await other.click(f"#role-delete-{role['id']}")
    await other.click(f"#role-delete-{role['id']}-yes")
    await other.wait_for_selector(f"{row} [role=alert]")
    assert "Members hold this role" in await other.inner_text(f"{row} [role=alert]")
    await _role_named(served, owner, "Support and billing")

    # and once nobody holds it, the same question deletes it
    await page.select_option(f"#role-{clerk.user_id}", "role_viewer")
    await page.click(f"#save-role-{clerk.user_id}")
    await page.wait_for_selector(f"#role-saved-{clerk.user_id}")
    await other.click(f"#role-delete-{role['id']}-yes")
    await other.wait_for_selector(row, state="detached")
    roles = await first_page(served, owner, "/team/roles")
    assert role["id"] not in [r["id"] for r in roles]
    assert watched.problems == [] and theirs.problems == []
    assert refusing.problems == [
        "console: Failed to load resource: the server responded with a status of 409 (Conflict)"
    ]


async def test_a_role_without_team_write_sees_roles_but_no_way_to_change_them(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given a custom role and a viewer
    owner = await sign_up(served)
    made = await post_as(
        served, owner, "/api/v1/team/roles", {"name": "Auditor", "scopes": ["audit:read"]}
    )
    assert made.status == 201, await made.text()
    role_id = (await made.json())["id"]
    viewer = await add_member(served, owner, "viewer@example.com", "role_viewer")

    # when the viewer opens Team, even with the form's address
    watched = await signed_in(browser, served, viewer.email, "/dashboard/team?role=new")
    page = watched.page
    await page.wait_for_selector(f"#roles-list li[data-id='{role_id}']")

    # then the role is listed with its scopes, and nothing offers to change it
    assert "audit (read)" in await page.inner_text(f"#roles-list li[data-id='{role_id}']")
    for absent in (
        "#role-new",
        "#role-form-new",
        f"#role-edit-{role_id}",
        f"#role-delete-{role_id}",
    ):
        assert await page.locator(absent).count() == 0, absent
    assert watched.problems == []
