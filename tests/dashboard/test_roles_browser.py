"""Every section of the dashboard for each built-in role, in one real browser (issue 30): a
member of each role signs in, the navigation offers exactly the sections their read scopes
allow, each offered view renders with data, one they cannot read shows Not found on a direct
link, representative write actions are there only with the write scope, and nothing the page
does is refused or logged as an error. One app and one seeded company serve every role."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser, Page
from playwright.async_api import TimeoutError as Timeout

from mps.domain.scopes import BUILTIN_ROLES, OWNER_ROLE
from tests.dashboard.driving import base_url, signed_in
from tests.helpers import Member, add_member, create_payment, created, pay, sign_up
from tests.money import ACCOUNT


@dataclass(frozen=True)
class Action:
    """A write action a view offers, found as a person finds it: by role and accessible name."""

    role: Literal["button", "link"]
    name: str
    scope: str


@dataclass(frozen=True)
class Section:
    name: str
    href: str
    scope: str | None
    shows_data: str  # a selector that matches only once the view holds the seeded data
    actions: tuple[Action, ...] = ()


SECTIONS = (
    Section("Home", "/dashboard", None, "#recent tbody tr"),
    Section(
        "Payments",
        "/dashboard/payments",
        "payments:read",
        "#payments-table tbody tr",
        (Action("link", "New payment link", "payments:write"),),
    ),
    Section("Customers", "/dashboard/customers", "customers:read", "#customers-table tbody tr"),
    Section(
        "Invoices",
        "/dashboard/invoices",
        "invoices:read",
        "#invoices-table tbody tr",
        (Action("link", "New invoice", "invoices:write"),),
    ),
    Section(
        "Cards",
        "/dashboard/cards",
        "cards:read",
        "#cards-table tbody tr",
        (Action("link", "Issue a card", "cards:write"),),
    ),
    Section(
        "Balance",
        "/dashboard/balance",
        "payouts:read",
        "#balance-table tbody tr",
        (
            Action("button", "Add bank account", "payouts:write"),
            Action("button", "Remove", "payouts:write"),
        ),
    ),
    Section(
        "Payouts",
        "/dashboard/payouts",
        "payouts:read",
        "#payouts-table tbody tr",
        (
            Action("button", "Request payout", "payouts:write"),
            Action("button", "Cancel", "payouts:write"),
        ),
    ),
    Section(
        "Team",
        "/dashboard/team",
        "team:read",
        "#members-table tbody tr",
        (Action("button", "Send invitation", "team:write"),),
    ),
    Section(
        "Approvals",
        "/dashboard/approvals",
        "team:read",
        "#policies .policy",
        (Action("button", "Edit", "team:write"),),
    ),
    Section(
        "Audit trail",
        "/dashboard/audit",
        "audit:read",
        "#audit-table tbody tr",
        # Exporting is reading: whoever may open the trail may take it away.
        (Action("button", "Export CSV", "audit:read"),),
    ),
    Section(
        "Developers",
        "/dashboard/developers",
        "settings:read",
        "#versions-table tbody tr",
        (Action("button", "Save", "settings:write"),),
    ),
    Section(
        "API keys",
        "/dashboard/developers/api-keys",
        "settings:read",
        "#keys-table tbody tr",
        (Action("button", "Create key", "settings:write"),),
    ),
    Section(
        "Webhooks",
        "/dashboard/developers/webhooks",
        "settings:read",
        "#endpoints-table tbody tr",
        (Action("button", "Add endpoint", "settings:write"),),
    ),
    Section(
        "Settings",
        "/dashboard/settings",
        "settings:read",
        "#kyc-state",
        (Action("button", "Save", "settings:write"), Action("button", "Upload", "settings:write")),
    ),
)
# The views the navigation itself links; API keys and Webhooks are tabs of Developers.
NAVIGATION = [s for s in SECTIONS if s.name not in ("API keys", "Webhooks")]


async def _seed(served: TestClient[Any, Any], owner: Member) -> None:
    """A little of everything, through the API: a paid payment (so a customer), an invoice, a
    card, a bank account and a payout, an API key and a webhook endpoint."""
    paid = await create_payment(served, owner, amountMinor="5000", customerEmail="a@b.co")
    assert (await pay(served, paid["reference"])).status == 200
    line = {"description": "Beans", "quantity": 2, "unitAmountMinor": "900"}
    account = await created(served, owner, "/api/v1/merchant/bank-accounts", ACCOUNT)
    payout = {"amountMinor": "1000", "currency": "USD", "bankAccountId": account["id"]}
    for kind, body in (
        ("invoices", {"currency": "USD", "customerEmail": "a@b.co", "items": [line]}),
        ("cards", {"cardholderName": "Ann Lee", "currency": "USD"}),
        ("payouts", payout),
        ("api-keys", {"name": "CI", "scopes": ["analytics:read"]}),
        ("webhooks", {"url": "http://127.0.0.1:9/hooks", "events": ["*"]}),
    ):
        await created(served, owner, f"/api/v1/merchant/{kind}", body)


async def _offered(page: Page, action: Action, expected: bool) -> bool:
    found = page.get_by_role(action.role, name=action.name, exact=True)
    if not expected:
        # The view's data is in, and what a role may do is drawn with it.
        return bool(await found.count())
    try:
        await found.first.wait_for(state="attached", timeout=5_000)
    except Timeout:
        return False
    return True


async def _walk(page: Page, served: TestClient[Any, Any], scopes: frozenset[str]) -> list[str]:
    """What is wrong with what this role sees, section by section; empty when all is right."""
    wrong: list[str] = []
    allowed = [s.name for s in NAVIGATION if s.scope is None or s.scope in scopes]
    await page.wait_for_selector("nav a:has-text('Home')")
    shown = await page.eval_on_selector_all(
        "nav a[href^='/dashboard']", "links => links.map(a => a.textContent.trim())"
    )
    if [n for n in shown if n in {s.name for s in NAVIGATION}] != allowed:
        wrong.append(f"navigation shows {shown}, expected {allowed}")
    for section in SECTIONS:
        readable = section.scope is None or section.scope in scopes
        if section in NAVIGATION and readable:
            # through the navigation, as a person would
            await page.click(f"nav a[href='{section.href}']")
        else:
            await page.goto(base_url(served) + section.href)
        awaited = section.shows_data if readable else "h1:has-text('Not found')"
        try:
            await page.wait_for_selector(awaited, timeout=10_000)
        except Timeout:
            wrong.append(f"{section.name}: never showed {awaited}")
            continue
        if not readable:
            continue
        for action in section.actions:
            expected = action.scope in scopes
            offered = await _offered(page, action, expected)
            if offered != expected:
                wrong.append(f"{section.name}: {action.name!r} offered={offered}")
    return wrong


async def test_each_built_in_role_sees_every_section_it_may_read_with_data_and_no_action_it_lacks(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served, company="Blue Mug Coffee")
    await _seed(served, owner)
    members = {OWNER_ROLE: owner}
    for role_id, role in BUILTIN_ROLES.items():
        if role_id != OWNER_ROLE:
            members[role_id] = await add_member(served, owner, f"{role.name}@example.com", role_id)

    wrong: dict[str, list[str]] = {}
    problems: dict[str, list[str]] = {}
    for role_id, member in members.items():
        watched = await signed_in(browser, served, member.email)
        wrong[role_id] = await _walk(watched.page, served, BUILTIN_ROLES[role_id].scopes)
        problems[role_id] = watched.problems
        await watched.page.context.close()

    assert wrong == {role_id: [] for role_id in members}
    assert problems == {role_id: [] for role_id in members}
