"""Developers in the dashboard, in a real browser (issue 30): an API key created with its secret
shown once, its request log, revoked and then refused by the API; a webhook endpoint added,
edited, its secret rotated (the old one no longer shown), a delivery replayed and the endpoint
deleted; events filtered by type in the URL and one read in full; the API versions with the
company's pinned version; the explorer linked in development and absent in production; and no
write action for a role without settings:write."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser, Page

from mps.http.keys import SERVICES
from tests.conftest import Serve
from tests.dashboard.driving import (
    Watched,
    base_url,
    first_page,
    open_page,
    photograph,
    row_ids,
    serious_accessibility_violations,
    sign_in,
    signed_in,
)
from tests.helpers import (
    add_member,
    create_payment,
    created,
    pay,
    read_as,
    sign_up,
)
from tests.receiver import Receiver

# Where the dashboard keeps its session in the tab (static/app/session.js).
_SESSION_KEY = "mps.dashboard.session"


async def _fits_a_phone(page: Page) -> bool:
    """Whether the view, 390 px wide, is no wider than that (tables scroll inside themselves)."""
    await page.set_viewport_size({"width": 390, "height": 900})
    width = await page.evaluate("document.documentElement.scrollWidth")
    await page.set_viewport_size({"width": 1280, "height": 900})
    return bool(width <= 390)


async def test_a_key_is_created_its_secret_shown_once_logged_revoked_and_then_refused(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    owner = await sign_up(served, company="Blue Mug Coffee")
    watched = await signed_in(browser, served, owner.email, "/dashboard/developers/api-keys")
    page = watched.page
    await page.wait_for_selector("#create-key")

    # when the owner creates a test key that may read analytics
    await page.fill("#key-name", "Reporting job")
    await page.check("input[name=scope][value='analytics:read']")
    await page.click("#key-submit")
    await page.wait_for_selector("#new-key")

    # then its secret is shown, with a copy button, and the list shows only its last four
    secret = await page.input_value("#new-key")
    assert secret.startswith("sk_test_") and len(secret) >= 40
    assert await page.is_visible("#new-key-copy")
    [key] = await first_page(served, owner, "/merchant/api-keys")
    row = f"#keys-table tr[data-id='{key['id']}']"
    await page.wait_for_selector(row)
    assert f"…{secret[-4:]}" in await page.inner_text(row)
    assert secret not in await page.inner_text("#keys-table")
    await photograph(page, tmp_path / "screens", "api-key-created")
    assert await _fits_a_phone(page)

    # and once put away it is not shown again, not even after a reload
    await page.click("#new-key-done")
    await page.wait_for_selector("#new-key", state="detached")
    await page.reload()
    await page.wait_for_selector(row)
    assert secret not in await page.content()

    # when the key is used, its request log lists the call
    ping = await served.get("/api/v1/developer/ping", headers={"Authorization": f"Bearer {secret}"})
    assert ping.status == 200, await ping.text()
    # The log is written in batches about a second apart; the test flushes rather than waits.
    await served.app[SERVICES].key_usage.flush()
    await page.click(f"#logs-{key['id']}")
    await page.wait_for_selector("#key-logs-table tbody tr")
    assert "GET /api/v1/developer/ping" in await page.inner_text("#key-logs-table")
    assert f"key={key['id']}" in page.url

    # when it is revoked, after the question
    await page.click(f"#revoke-{key['id']}")
    await page.click(f"#revoke-{key['id']}-yes")
    await page.wait_for_selector(f"{row} .status-revoked")

    # then the API refuses it at once, and no revoke is offered for it any more
    refused = await served.get(
        "/api/v1/developer/ping", headers={"Authorization": f"Bearer {secret}"}
    )
    assert refused.status == 401
    assert await page.locator(f"#revoke-{key['id']}").count() == 0
    assert watched.problems == []


async def test_an_endpoint_is_added_edited_rotated_replayed_and_deleted(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    owner = await sign_up(served)
    watched = await open_page(browser)
    page = watched.page
    async with Receiver() as hooks:
        await sign_in(watched, served, owner.email, "/dashboard/developers/webhooks")

        # when the owner adds an endpoint for every event
        await page.fill("#endpoint-url", hooks.url())
        await page.click("#endpoint-submit")
        await page.wait_for_selector("#new-secret")

        # then its signing secret is shown once and the endpoint is listed
        first = await page.input_value("#new-secret")
        assert first.startswith("whsec_")
        [endpoint] = await first_page(served, owner, "/merchant/webhooks")
        await page.wait_for_selector(f"#endpoints-table tr[data-id='{endpoint['id']}']")

        # when a payment makes an event that is delivered to it
        await create_payment(served, owner)
        await hooks.wait_for(1)
        await page.click(f"#endpoints-table tr[data-id='{endpoint['id']}'] a")
        await page.wait_for_selector("#deliveries-table tbody tr")

        # then the endpoint's page shows the delivery, and not the secret of the list's view
        assert first not in await page.content()
        [delivery] = await row_ids(page, "#deliveries-table tbody tr")
        assert "payment.created" in await page.inner_text("#deliveries-table")
        await photograph(page, tmp_path / "screens", "webhook-endpoint")
        assert await _fits_a_phone(page)

        # and its attempts, one answered 200, are shown on asking
        await page.click(f"#attempts-{delivery}")
        await page.wait_for_selector("#attempt-log li")
        assert "Attempt 1: answered 200" in await page.inner_text("#attempt-log")
        assert f"delivery={delivery}" in page.url

        # when the description is edited
        await page.fill("#endpoint-description", "Order system")
        await page.click("#endpoint-save")
        await page.wait_for_selector("#endpoint-saved")
        assert (await read_as(served, owner, f"/api/v1/merchant/webhooks/{endpoint['id']}"))[
            "description"
        ] == "Order system"

        # when the secret is rotated
        await page.click("#rotate-secret")
        await page.click("#rotate-secret-yes")
        await page.wait_for_selector("#rotated-secret")

        # then a new secret is shown once, the old one nowhere, and the old one still signs a day
        second = await page.input_value("#rotated-secret")
        assert second.startswith("whsec_") and second != first
        assert first not in await page.content()
        await page.wait_for_selector("#previous-secret")
        rotated = await read_as(served, owner, f"/api/v1/merchant/webhooks/{endpoint['id']}")
        assert rotated["previousSecretExpiresAt"] is not None
        await page.click("#rotated-secret-done")
        await page.wait_for_selector("#rotated-secret", state="detached")
        assert second not in await page.content()

        # when the delivery is replayed
        await page.click(f"#replay-{delivery}")

        # then a new delivery of the same event is listed, and the receiver gets it again
        await page.wait_for_selector("#deliveries-table tbody tr:nth-child(2)")
        assert "(replay)" in await page.inner_text("#deliveries-table")
        await hooks.wait_for(2)
        assert hooks.received[0].event["id"] == hooks.received[1].event["id"]

        # when the endpoint is deleted, after the question
        await page.click("#delete-endpoint")
        await page.click("#delete-endpoint-yes")
        await page.wait_for_url("**/dashboard/developers/webhooks")
        await page.wait_for_selector("text=No webhook endpoints in this mode.")

    # then the API no longer has it
    gone = await served.get(f"/api/v1/merchant/webhooks/{endpoint['id']}", headers=owner.headers)
    assert gone.status == 404
    assert watched.problems == []


async def test_events_are_filtered_by_type_in_the_url_and_one_is_read_in_full(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    owner = await sign_up(served)
    paid = await create_payment(served, owner, amountMinor="1250")
    assert (await pay(served, paid["reference"])).status == 200
    await create_payment(served, owner)
    completed = await first_page(served, owner, "/merchant/events", type="payment.completed")
    assert len(completed) == 1
    watched = await signed_in(browser, served, owner.email, "/dashboard/developers/events")
    page = watched.page
    await page.wait_for_selector("#events-table tr[data-type='payment.created']")

    # when the member filters by a type
    await page.fill("#filter-type", "payment.completed")
    await page.press("#filter-type", "Enter")
    await page.wait_for_selector("#events-table tr[data-type='payment.created']", state="detached")

    # then the URL holds it, only that type is listed, and a reload shows the same
    assert page.url == base_url(served) + "/dashboard/developers/events?type=payment.completed"
    assert await row_ids(page, "#events-table tbody tr") == [completed[0]["id"]]
    await page.reload()
    await page.wait_for_selector("#events-table tbody tr")
    assert await row_ids(page, "#events-table tbody tr") == [completed[0]["id"]]
    assert await page.input_value("#filter-type") == "payment.completed"

    # and a range that ends before today leaves none, kept in the URL beside the type
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    await page.fill("#filter-to", yesterday)
    await page.wait_for_selector("text=No events match.")
    assert page.url.endswith(f"?type=payment.completed&to={yesterday}")

    # when one event is opened, its whole body is shown
    await page.goto(base_url(served) + f"/dashboard/developers/events/{completed[0]['id']}")
    await page.wait_for_selector("#event-body pre")
    body = await page.inner_text("#event-body pre")
    assert completed[0]["id"] in body and paid["id"] in body
    assert '"requestId"' not in body  # the event as delivered, without the envelope
    assert await page.is_visible("#replay-event")
    await photograph(page, tmp_path / "screens", "event")
    assert await serious_accessibility_violations(page) == []
    assert watched.problems == []


async def test_versions_are_listed_the_pinned_one_changed_and_the_explorer_linked(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served)
    watched = await signed_in(browser, served, owner.email, "/dashboard/developers")
    page = watched.page
    await page.wait_for_selector("#versions-table tr[data-version=v1]")

    # the current version and the deprecated one, and this company's default
    assert await page.inner_text("#current-version") == "v2"
    assert await page.inner_text("#default-version") == "v2"
    assert "Deprecated" in await page.inner_text("#versions-table tr[data-version=v1]")

    # when the company pins v1
    await page.select_option("#pin-version", "v1")
    await page.click("#pin-version-save")
    await page.wait_for_selector("#default-version:has-text('v1')")
    settings = await read_as(served, owner, "/api/v1/merchant/settings")
    assert settings["defaultApiVersion"] == "v1"

    # and this development server links its explorer, which answers there
    assert await page.get_attribute("#explorer-link", "href") == "/api/docs"
    explorer = await served.get("/api/docs")
    assert explorer.status == 200
    assert watched.problems == []


async def test_production_serves_no_explorer_and_the_dashboard_offers_no_link_to_it(
    serve: Serve, browser: Browser
) -> None:
    # given the app as production builds it, on a real port
    production = await serve(mode="production")
    signup = await production.post(
        "/api/v1/auth/signup", json={"companyName": "Acme Ltd", "email": "owner@example.com"}
    )
    assert signup.status == 201, await signup.text()
    # Production has no mailbox route: the code is read from the mail the service kept.
    box = production.app[SERVICES].dev_mailbox
    assert box is not None
    [mail] = box.messages("owner@example.com")
    verified = await production.post(
        "/api/v1/auth/otp/verify",
        json={"loginId": (await signup.json())["loginId"], "code": mail.otp},
    )
    assert verified.status == 200, await verified.text()
    signed = await verified.json()
    watched = await open_page(browser)
    page = watched.page

    # when the owner's tab holds the session, as signing in leaves it, and opens Developers
    await page.goto(base_url(production) + "/dashboard/sign-in")
    await page.wait_for_selector("#email")
    stored = json.dumps({"token": signed["sessionToken"], "expiresAt": signed["expiresAt"]})
    await page.evaluate(
        "([key, value]) => sessionStorage.setItem(key, value)", [_SESSION_KEY, stored]
    )
    await page.goto(base_url(production) + "/dashboard/developers")
    await page.wait_for_selector("#versions-table")

    # then no explorer is linked, and indeed there is none to reach
    assert await page.locator("#explorer-link").count() == 0
    assert "serves no API explorer" in await page.inner_text("#reference")
    assert (await production.get("/api/docs")).status == 404
    assert watched.problems == []


async def _write_actions(page: Page) -> dict[str, int]:
    selectors = (
        "#create-key",
        "[id^=revoke-]",
        "#create-endpoint",
        "#edit-endpoint",
        "#rotate-secret",
        "#delete-endpoint",
        "[id^=replay-]",
        "#pin-version",
    )
    return {s: await page.locator(s).count() for s in selectors}


async def _visit(watched: Watched, served: TestClient[Any, Any], path: str, ready: str) -> None:
    await watched.page.goto(base_url(served) + path)
    await watched.page.wait_for_selector(ready)


async def test_a_viewer_reads_every_developers_view_but_gets_no_action_to_take(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    # given keys, an endpoint with a delivery, and events
    owner = await sign_up(served)
    await created(
        served, owner, "/api/v1/merchant/api-keys", {"name": "CI", "scopes": ["analytics:read"]}
    )
    async with Receiver() as hooks:
        endpoint = await created(
            served, owner, "/api/v1/merchant/webhooks", {"url": hooks.url(), "events": ["*"]}
        )
        await create_payment(served, owner)
        await hooks.wait_for(1)
    event = (await first_page(served, owner, "/merchant/events"))[0]
    viewer = await add_member(served, owner, "viewer@example.com", "role_viewer")

    # when the viewer opens each view
    watched = await signed_in(browser, served, viewer.email, "/dashboard/developers")
    await watched.page.wait_for_selector("#versions-table")
    seen = {"overview": await _write_actions(watched.page)}
    for name, path, ready in (
        ("keys", "/dashboard/developers/api-keys", "#keys-table tbody tr"),
        ("webhooks", "/dashboard/developers/webhooks", "#endpoints-table tbody tr"),
        (
            "endpoint",
            f"/dashboard/developers/webhooks/{endpoint['id']}",
            "#deliveries-table tbody tr",
        ),
        ("event", f"/dashboard/developers/events/{event['id']}", "#event-body"),
    ):
        await _visit(watched, served, path, ready)
        seen[name] = await _write_actions(watched.page)

    # then every view shows its data and no action the role lacks
    assert {name: {s: n for s, n in found.items() if n} for name, found in seen.items()} == {
        name: {} for name in seen
    }
    assert await watched.page.locator("#replay-event").count() == 0
    assert watched.problems == []


async def test_a_developer_creates_keys_with_no_scope_beyond_their_own(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served)
    developer = await add_member(served, owner, "dev@example.com", "role_developer")
    me = await read_as(served, developer, "/api/v1/auth/me")

    watched = await signed_in(browser, served, developer.email, "/dashboard/developers/api-keys")
    page = watched.page
    await page.wait_for_selector("#create-key input[name=scope]")

    # the scopes offered for a new key are the developer's own, which hold no write but settings
    offered = await page.eval_on_selector_all(
        "#create-key input[name=scope]", "boxes => boxes.map(b => b.value)"
    )
    assert offered == me["scopes"]
    assert "payments:write" not in offered and "settings:write" in offered
    await page.click("nav.tabs a:has-text('Webhooks')")
    await page.wait_for_selector("#create-endpoint")
    assert watched.problems == []
