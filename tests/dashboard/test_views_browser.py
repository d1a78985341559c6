"""Every view of the dashboard in a real browser (issue 30): Home with data, search, what a role
without write scopes sees, the policy actually enforced, and each view photographed at 1280 and
390 px and checked by axe-core for serious or critical accessibility violations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser

from tests.dashboard.driving import (
    base_url,
    first_page,
    open_not_found,
    open_page,
    photograph,
    serious_accessibility_violations,
    sign_in,
    signed_in,
)
from tests.helpers import (
    Member,
    add_member,
    create_payment,
    created,
    eventually,
    pay,
    sign_up,
)


async def test_home_shows_balances_charts_per_currency_recent_payments_and_what_needs_me(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given paid payments in two currencies
    owner = await sign_up(served, company="Blue Mug Coffee")
    for amount, currency in (("1250", "USD"), ("700", "USD"), ("900", "EUR")):
        payment = await create_payment(served, owner, amountMinor=amount, currency=currency)
        assert (await pay(served, payment["reference"])).status == 200

    # when the owner opens Home
    watched = await signed_in(browser, served, owner.email)
    page = watched.page
    await page.wait_for_selector(".balance[data-currency=USD]")
    await page.wait_for_selector("#volume-USD canvas")

    # then each currency has its own balance and its own charts, never a blended figure
    usd = await page.inner_text(".balance[data-currency=USD]")
    eur = await page.inner_text(".balance[data-currency=EUR]")
    assert "19.50 USD" in usd and "EUR" not in usd
    assert "9.00 EUR" in eur
    assert await page.get_attribute("#volume-USD .chart", "aria-label") == (
        "Volume in USD: 19.50 USD in total"
    )
    assert await page.get_attribute("#count-EUR .chart", "aria-label") == "1 EUR payments in total"
    # recent payments, and what needs the owner (identity verification is not done yet)
    assert await page.locator("#recent tbody tr").count() == 3
    await page.wait_for_selector("#needs-me li[data-kind=kyc]")

    # and the chosen range is kept in the URL
    await page.select_option("#range", "7")
    await page.wait_for_url("**/dashboard?range=7")
    await page.wait_for_selector("#volume-USD canvas")
    assert watched.problems == []


async def test_search_finds_a_payment_by_reference_id_and_customer_email(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served)
    wanted = await create_payment(served, owner, customerEmail="ada@example.com")
    await create_payment(served, owner, customerEmail="bob@example.com")
    watched = await signed_in(browser, served, owner.email)
    page = watched.page

    found = {}
    for query in (wanted["reference"].lower(), wanted["id"], "Ada@Example.com"):
        await page.fill("#search", query)
        await page.press("#search", "Enter")
        await page.wait_for_selector(f"#results a[href$='{wanted['id']}']")
        found[query] = await page.locator("#results li[data-kind=payment]").count()

    assert list(found.values()) == [1, 1, 1]
    # the customer record derived from the payment is found by the email too
    assert await page.locator("#results li[data-kind=customer]").count() == 1
    await page.fill("#search", "PAY-0000000000")
    await page.press("#search", "Enter")
    await page.wait_for_selector("text=Nothing found.")
    assert watched.problems == []


async def test_a_viewer_sees_the_payments_but_no_action_their_role_lacks(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served)
    payment = await create_payment(served, owner)
    paid = await create_payment(served, owner)
    assert (await pay(served, paid["reference"])).status == 200
    viewer = await add_member(served, owner, "viewer@example.com", "role_viewer")

    watched = await signed_in(browser, served, viewer.email, "/dashboard/payments")
    page = watched.page
    await page.wait_for_selector(f"tr[data-id='{payment['id']}']")
    assert not await page.is_visible("#new-payment")
    await page.click(f"tr[data-id='{payment['id']}'] a")
    await page.wait_for_selector("#details")
    assert await page.locator("#cancel").count() == 0
    await page.goto(base_url(served) + f"/dashboard/payments/{paid['id']}")
    await page.wait_for_selector("#details")
    assert await page.locator("#refund").count() == 0
    # a link straight to a view the role may not use shows no form to fill
    await open_not_found(page, served, "/dashboard/payments/new")
    assert await page.locator("#create-payment").count() == 0
    assert watched.problems == []


async def test_the_browser_enforces_the_policy_and_the_test_would_see_a_refusal(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served)
    watched = await signed_in(browser, served, owner.email)
    page = watched.page

    # when something writes script text into the page, and an inline style
    written = await page.evaluate(
        """() => {
            try {
                document.createElement('script').text = 'window.injected = true';
                return 'written';
            } catch (refused) {
                return refused.name;
            }
        }"""
    )
    styled = await page.evaluate(
        """() => {
            const style = document.createElement('style');
            style.textContent = 'body { outline: 7px solid red; }';
            document.head.append(style);
            return getComputedStyle(document.body).outlineWidth;
        }"""
    )

    # then Trusted Types refuse the first, the policy the second, and the test sees the refusal
    assert written == "TypeError"
    assert styled != "7px"

    async def reported() -> bool:
        return any(p.startswith("csp: style-src-elem refused inline") for p in watched.problems)

    await eventually(reported, what="the report of the refused style")


async def _customer_invoice_and_card(
    served: TestClient[Any, Any], owner: Member
) -> tuple[dict[str, Any], ...]:
    """The customer the first payment made, an invoice of one line and a card, for Customers,
    Invoices and Cards."""
    customer = (await first_page(served, owner, "/merchant/customers"))[0]
    line = {"description": "Beans", "quantity": 2, "unitAmountMinor": "900"}
    billed = {"currency": "USD", "customerEmail": "a@b.co", "items": [line]}
    invoice = await created(served, owner, "/api/v1/merchant/invoices", billed)
    issued = {"cardholderName": "Ann Lee", "currency": "USD"}
    card = await created(served, owner, "/api/v1/merchant/cards", issued)
    return customer, invoice, card


async def test_every_view_is_photographed_at_two_widths_and_has_no_serious_axe_violation(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    # given a merchant with some history
    owner = await sign_up(served, company="Blue Mug Coffee")
    paid = await create_payment(
        served, owner, amountMinor="1250", description="Two flat whites", customerEmail="a@b.co"
    )
    assert (await pay(served, paid["reference"])).status == 200
    await create_payment(served, owner, amountMinor="900", currency="EUR")
    customer, invoice, card = await _customer_invoice_and_card(served, owner)
    hook = {"url": "http://127.0.0.1:9/hooks", "events": ["*"]}
    endpoint = await created(served, owner, "/api/v1/merchant/webhooks", hook)
    screens = tmp_path / "screens"
    watched = await open_page(browser)
    page = watched.page

    # the sign-in view first, signed out
    await page.goto(base_url(served) + "/dashboard")
    await page.wait_for_selector("#email")
    await photograph(page, screens, "sign-in")
    faults = {"sign-in": await serious_accessibility_violations(page)}

    await sign_in(watched, served, owner.email)
    views = {
        "home": ("/dashboard", "#volume-USD canvas"),
        "payments": ("/dashboard/payments", "#payments-table"),
        "payment": (f"/dashboard/payments/{paid['id']}", "#events li > p.muted, #events tr"),
        "new-payment": ("/dashboard/payments/new", "#create-payment"),
        "search": (f"/dashboard/search?q={paid['reference']}", "#results"),
        "balance": ("/dashboard/balance", "#balance-table tbody tr"),
        "payouts": ("/dashboard/payouts", "#new-payout .empty"),
        "team": ("/dashboard/team", "#members-table"),
        "team-role": ("/dashboard/team?role=new", "#role-form-new #role-scope-new-payments-read"),
        "approvals": ("/dashboard/approvals", "#policies .policy"),
        "audit": ("/dashboard/audit", "#audit-table"),
        "customers": ("/dashboard/customers", "#customers-table"),
        "customer": (f"/dashboard/customers/{customer['id']}", "#customer-payments tbody tr"),
        "invoices": ("/dashboard/invoices", "#invoices-table"),
        "invoice": (f"/dashboard/invoices/{invoice['id']}", "#invoice-timeline li"),
        "new-invoice": ("/dashboard/invoices/new", "#create-invoice"),
        "cards": ("/dashboard/cards", "#cards-table"),
        "card": (f"/dashboard/cards/{card['id']}", "#authorizations .empty"),
        "issue-card": ("/dashboard/cards/new", "#issue-submit"),
        "developers": ("/dashboard/developers", "#versions-table"),
        "api-keys": ("/dashboard/developers/api-keys", "#create-key"),
        "webhooks": ("/dashboard/developers/webhooks", "#endpoints-table"),
        # Subscribed to every event after the others were made: the relay may still fan one of
        # them out to it (on a busy machine, later than the endpoint's creation), so the view is
        # ready with its deliveries listed or with none.
        "webhook": (
            f"/dashboard/developers/webhooks/{endpoint['id']}",
            "#deliveries .empty, #deliveries-table tbody tr",
        ),
        "events": ("/dashboard/developers/events", "#events-table"),
        "settings": ("/dashboard/settings", "#kyc-state"),
    }
    for name, (path, ready) in views.items():
        await page.goto(base_url(served) + path)
        await page.wait_for_selector(ready)
        taken = await photograph(page, screens, name)
        assert all(p.stat().st_size > 5_000 for p in taken)
        faults[name] = await serious_accessibility_violations(page)
        # the narrow layout too: the menu button replaces the side navigation
        await page.set_viewport_size({"width": 390, "height": 900})
        faults[f"{name}-390"] = await serious_accessibility_violations(page)
        await page.set_viewport_size({"width": 1280, "height": 900})

    assert {name: found for name, found in faults.items() if found} == {}
    assert len(list(screens.glob("*.png"))) == 2 * (1 + len(views))
    assert watched.problems == []
