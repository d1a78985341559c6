"""Settings in the dashboard, in a real browser (issue 30): the company's details, its supported
currencies and server-to-server key access changed and the API agreeing; an identity document
uploaded through the public API with its progress shown, and test mode then verified; and what a
role without settings:write gets, or without settings:read (neither Settings nor Developers)."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from PIL import Image
from playwright.async_api import Browser, FilePayload, Route

from tests.dashboard.driving import assert_no_section, photograph, signed_in
from tests.helpers import add_member, read_as, sign_up


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 64), (10, 120, 200)).save(out, "PNG")
    return out.getvalue()


async def test_the_company_currencies_and_key_access_are_changed_and_the_api_agrees(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    owner = await sign_up(served, company="Blue Mug Coffee")
    before = await read_as(served, owner, "/api/v1/merchant/settings")
    assert "CHF" not in before["supportedCurrencies"] and "JPY" in before["supportedCurrencies"]
    assert before["apiKeyAccess"] is False
    watched = await signed_in(browser, served, owner.email, "/dashboard/settings")
    page = watched.page
    await page.wait_for_selector("#currency-list li[data-currency=USD]")
    await page.wait_for_selector("#kyc-state .status-unverified")
    await photograph(page, tmp_path / "screens", "settings")

    # when the owner renames the company and sets weekly payouts
    await page.fill("#settings-name", "Blue Mug Roasters")
    await page.select_option("#payout-schedule", "weekly")
    await page.click("#company-save")
    await page.wait_for_selector("#company-saved")
    await page.wait_for_selector("#company-name:has-text('Blue Mug Roasters')")

    # and adds CHF, removes JPY, and turns on key access
    await page.fill("#currency-add", "chf")
    await page.click("#currency-add-submit")
    await page.wait_for_selector("#currency-list li[data-currency=CHF]")
    await page.click("#remove-currency-JPY")
    await page.wait_for_selector("#currency-list li[data-currency=JPY]", state="detached")
    await page.click("#key-access-toggle")
    await page.wait_for_selector("#key-access-state:has-text('may')")
    await page.wait_for_selector("#key-access-toggle:has-text('Turn off')")

    # then the API holds every change
    after = await read_as(served, owner, "/api/v1/merchant/settings")
    assert after["name"] == "Blue Mug Roasters" and after["payoutSchedule"] == "weekly"
    assert after["supportedCurrencies"] == [
        *(c for c in before["supportedCurrencies"] if c != "JPY"),
        "CHF",
    ]
    assert after["apiKeyAccess"] is True

    # and a reload shows what the server holds
    await page.reload()
    await page.wait_for_selector("#currency-list li[data-currency=CHF]")
    assert await page.input_value("#settings-name") == "Blue Mug Roasters"
    assert await page.locator("#currency-list li[data-currency=JPY]").count() == 0
    assert watched.problems == []


async def test_an_identity_document_is_uploaded_with_its_progress_and_verifies_test_mode(
    served: TestClient[Any, Any], browser: Browser, tmp_path: Path
) -> None:
    owner = await sign_up(served)
    watched = await signed_in(browser, served, owner.email, "/dashboard/settings")
    page = watched.page
    await page.wait_for_selector("#kyc-state .status-unverified")
    await page.wait_for_selector("text=No documents uploaded yet.")

    # the upload's answer is held until the test has seen the progress shown
    answered = asyncio.Event()

    async def hold(route: Route) -> None:
        if route.request.method == "POST":
            await answered.wait()
        await route.continue_()

    await page.route("**/api/v1/merchant/kyc/documents", hold)

    # when the owner uploads a passport scan
    await page.select_option("#document-type", "passport")
    scan: FilePayload = {"name": "passport.png", "mimeType": "image/png", "buffer": _png()}
    await page.set_input_files("#document-file", files=scan)
    await page.click("#document-upload")

    # then its progress is shown while it is under way, and the button waits
    await page.wait_for_selector("#document-progress")
    assert await page.is_disabled("#document-upload")
    await photograph(page, tmp_path / "screens", "settings-uploading")
    answered.set()

    # and once stored it is listed, and test mode is verified
    await page.wait_for_selector("#document-uploaded")
    await page.wait_for_selector("#document-progress", state="detached")
    await page.wait_for_selector("#documents-table tbody tr")
    assert "passport.png" in await page.inner_text("#documents-table")
    await page.wait_for_selector("#kyc-state .status-verified")
    listed = await served.get("/api/v1/merchant/kyc/documents", headers=owner.headers)
    [document] = (await listed.json())["data"]
    assert document["type"] == "passport" and document["contentType"] == "image/png"
    assert await page.get_attribute("#documents-table tbody tr", "data-id") == document["id"]
    assert watched.problems == []


async def test_a_viewer_reads_the_settings_but_gets_no_control_to_change_them(
    served: TestClient[Any, Any], browser: Browser
) -> None:
    owner = await sign_up(served, company="Blue Mug Coffee")
    viewer = await add_member(served, owner, "viewer@example.com", "role_viewer")

    watched = await signed_in(browser, served, viewer.email, "/dashboard/settings")
    page = watched.page
    await page.wait_for_selector("#currency-list li[data-currency=USD]")
    await page.wait_for_selector("#kyc-state .status-unverified")

    assert await page.inner_text("#settings-name") == "Blue Mug Coffee"
    assert "may not" in await page.inner_text("#key-access")
    controls = (
        "#company-save",
        "#currency-add",
        "[id^=remove-currency-]",
        "#key-access-toggle",
        "#document-upload",
    )
    assert {c: await page.locator(c).count() for c in controls} == dict.fromkeys(controls, 0)
    assert watched.problems == []


@pytest.mark.parametrize(
    ("section", "path", "parts", "api"),
    [
        ("Settings", "/dashboard/settings", "#company, #kyc", "/api/v1/merchant/settings"),
        (
            "Developers",
            "/dashboard/developers/api-keys",
            "#keys-table, #create-key",
            "/api/v1/merchant/api-keys",
        ),
    ],
)
async def test_a_role_without_settings_read_has_neither_settings_nor_developers_section(
    served: TestClient[Any, Any], browser: Browser, section: str, path: str, parts: str, api: str
) -> None:
    owner = await sign_up(served)
    finance = await add_member(served, owner, "finance@example.com", "role_finance")

    watched = await signed_in(browser, served, finance.email)
    page = watched.page
    await page.wait_for_selector("nav a:has-text('Payments')")
    await assert_no_section(page, served, section, path, parts)
    refused = await served.get(api, headers=finance.headers)
    assert refused.status == 403
    assert watched.problems == []
